"""The cache's per-head and per-neuron stacks, as TransformerLens's ``ActivationCache`` gives them:
``stack_head_results``, ``stack_neuron_results``, ``get_full_resid_decomposition`` and ``logit_attrs``. Each head's
and unit's result is computed from the run's ``hook_z`` and ``mlp.hook_post`` (:mod:`handwired.api.heads`)."""

from typing import TYPE_CHECKING, Literal, overload

import numpy as np

from handwired.api.arguments import shown
from handwired.api.heads import (
    Array,
    accumulated_bias,
    check_layer,
    head_result,
    neuron_result,
    residual_directions,
)
from handwired.api.keywords import speaks_python
from handwired.errors import HandwiredError, bad_value
from handwired.weightfile import Model

Labelled = tuple[Array, list[str]]  # a stack [component, batch, pos, n_embd] and its components' labels


def _no_slice(pos_slice: object) -> None:
    if pos_slice is not None:
        raise bad_value("pos_slice", shown(pos_slice), "not taken here; index the stack instead, "
                        "e.g. stack[:, :, -1] for the last position")


class HeadStacks:
    """What :class:`~handwired.api.cache.ActivationCache` adds for heads and neurons (a mixin: it reads the cache)."""

    model: Model
    tokens: "np.ndarray"

    if TYPE_CHECKING:  # the cache's own, which these read
        def __getitem__(self, key: object) -> Array: ...
        def apply_ln_to_stack(self, stack: Array, layer: int | None = None, mlp_input: bool = False,
                              pos_slice: int | None = None) -> Array: ...

    def _hook(self, name: str, layer: int) -> Array:
        try:
            return self[name, layer]
        except KeyError:
            raise HandwiredError(f"the cache has no {name!r} of block {layer}: run run_with_cache without a "
                                 "names_filter that leaves it out") from None

    def _empty(self) -> Array:
        return np.zeros((0, *self.tokens.shape, self.model.n_embd))

    def _heads(self, last: int) -> Labelled:
        parts = [head_result(self.model, self._hook("z", i), i) for i in range(last)]  # [batch, pos, head, d]
        labels = [f"L{i}H{h}" for i in range(last) for h in range(self.model.n_head)]
        stack = np.moveaxis(np.concatenate(parts, axis=-2), -2, 0) if parts else self._empty()
        return stack, labels

    def _neurons(self, last: int) -> Labelled:
        blocks = self.model.params["blocks"]
        parts = [neuron_result(self.model, self._hook("post", i), i) for i in range(last) if "mlp" in blocks[i]]
        labels = [f"L{i}N{n}" for i in range(last) if "mlp" in blocks[i] for n in range(self.model.hidden[i])]
        stack = np.moveaxis(np.concatenate(parts, axis=-2), -2, 0) if parts else self._empty()
        return stack, labels

    def _stacked(self, what: Labelled, last: int, incl_remainder: bool, apply_ln: bool,
                 return_labels: bool) -> Array | Labelled:
        stack, labels = what
        if incl_remainder:  # what the stream holds beyond these parts, as TransformerLens's remainder
            whole = self._hook("resid_pre", last) if last < self.model.n_layer else (
                self._hook("resid_post", last - 1) if last else self["hook_embed"] + self["hook_pos_embed"])
            stack = np.concatenate([stack, (whole - stack.sum(axis=0))[None]])
            labels = [*labels, "remainder"]
        if apply_ln:
            stack = self.apply_ln_to_stack(stack, last)
        return (stack, labels) if return_labels else stack

    @overload
    def stack_head_results(self, layer: int | None = None, return_labels: Literal[False] = False,
                           incl_remainder: bool = False, pos_slice: None = None, apply_ln: bool = False) -> Array: ...
    @overload
    def stack_head_results(self, layer: int | None = None, *, return_labels: Literal[True],
                           incl_remainder: bool = False, pos_slice: None = None,
                           apply_ln: bool = False) -> Labelled: ...
    @overload
    def stack_head_results(self, layer: int | None = None, return_labels: bool = False, incl_remainder: bool = False,
                           pos_slice: None = None, apply_ln: bool = False) -> Array | Labelled: ...

    @speaks_python
    def stack_head_results(self, layer: int | None = None, return_labels: bool = False, incl_remainder: bool = False,
                           pos_slice: None = None, apply_ln: bool = False) -> Array | Labelled:
        """Every head's result in the blocks before ``layer`` (None: every block), as TransformerLens's: [component,
        batch, pos, n_embd], labelled ``L0H1``; without c_proj's bias. ``incl_remainder``: the rest of the stream at
        that point as one more component; ``apply_ln``: as :meth:`apply_ln_to_stack` at ``layer``."""
        _no_slice(pos_slice)
        last = check_layer(layer, self.model.n_layer)
        return self._stacked(self._heads(last), last, incl_remainder, apply_ln, return_labels)

    @overload
    def stack_neuron_results(self, layer: int | None = None, return_labels: Literal[False] = False,
                             incl_remainder: bool = False, pos_slice: None = None,
                             apply_ln: bool = False) -> Array: ...
    @overload
    def stack_neuron_results(self, layer: int | None = None, *, return_labels: Literal[True],
                             incl_remainder: bool = False, pos_slice: None = None,
                             apply_ln: bool = False) -> Labelled: ...
    @overload
    def stack_neuron_results(self, layer: int | None = None, return_labels: bool = False,
                             incl_remainder: bool = False, pos_slice: None = None,
                             apply_ln: bool = False) -> Array | Labelled: ...

    @speaks_python
    def stack_neuron_results(self, layer: int | None = None, return_labels: bool = False,
                             incl_remainder: bool = False, pos_slice: None = None,
                             apply_ln: bool = False) -> Array | Labelled:
        """Every MLP unit's result (its activation times its row of the MLP's c_proj) in the blocks before ``layer``,
        labelled ``L0N3``; without the MLP's output bias. A block without an MLP has no units."""
        _no_slice(pos_slice)
        last = check_layer(layer, self.model.n_layer)
        return self._stacked(self._neurons(last), last, incl_remainder, apply_ln, return_labels)

    @overload
    def get_full_resid_decomposition(self, layer: int | None = None, mlp_input: bool = False,
                                     expand_neurons: bool = True, apply_ln: bool = False, pos_slice: None = None,
                                     return_labels: Literal[False] = False) -> Array: ...
    @overload
    def get_full_resid_decomposition(self, layer: int | None = None, mlp_input: bool = False,
                                     expand_neurons: bool = True, apply_ln: bool = False, pos_slice: None = None, *,
                                     return_labels: Literal[True]) -> Labelled: ...
    @overload
    def get_full_resid_decomposition(self, layer: int | None = None, mlp_input: bool = False,
                                     expand_neurons: bool = True, apply_ln: bool = False, pos_slice: None = None,
                                     return_labels: bool = False) -> Array | Labelled: ...

    @speaks_python
    def get_full_resid_decomposition(self, layer: int | None = None, mlp_input: bool = False,
                                     expand_neurons: bool = True, apply_ln: bool = False, pos_slice: None = None,
                                     return_labels: bool = False) -> Array | Labelled:
        """The stream that block ``layer`` reads (its MLP, with ``mlp_input``) as every head's result, every MLP
        unit's (``expand_neurons``; else each block's ``mlp_out``), ``embed``, ``pos_embed`` and ``bias`` (every bias
        they leave out), as TransformerLens's: the components add up to that stream."""
        _no_slice(pos_slice)
        last = check_layer(layer, self.model.n_layer)
        if mlp_input and (last == self.model.n_layer or "mlp" not in self.model.params["blocks"][last]):
            raise bad_value("layer", layer, "mlp_input reads a block's MLP: give a block that has one")
        heads, labels = self._heads(last + 1 if mlp_input else last)
        parts = [heads]
        if expand_neurons:
            neurons, names = self._neurons(last)
        else:
            blocks = self.model.params["blocks"]
            kept = [i for i in range(last) if "mlp" in blocks[i]]
            neurons = np.stack([self._hook("mlp_out", i) for i in kept]) if kept else self._empty()
            names = [f"{i}_mlp_out" for i in kept]
        parts += [neurons, self["hook_embed"][None], self["hook_pos_embed"][None]]
        bias = accumulated_bias(self.model, last, mlp_input, expand_neurons)
        parts.append(np.broadcast_to(bias, (1, *self.tokens.shape, self.model.n_embd)))
        stack = np.concatenate(parts)
        labels = [*labels, *names, "embed", "pos_embed", "bias"]
        if apply_ln:
            stack = self.apply_ln_to_stack(stack, last, mlp_input)
        return (stack, labels) if return_labels else stack

    @speaks_python
    def logit_attrs(self, residual_stack: Array, tokens: object, incorrect_tokens: object = None,
                    pos_slice: int | None = None) -> Array:
        """Each component's share of the logit of ``tokens`` (a token, an id, or ids [batch] or [batch, pos]), less
        ``incorrect_tokens``'s, as TransformerLens's: the stack as the final LayerNorm scales it (no gain, no
        bias, :meth:`apply_ln_to_stack`) dotted with the tokens' unembedding columns. [component, batch, pos];
        ``pos_slice``: a stack at that one position [component, batch, n_embd] -> [component, batch]."""
        stack = np.asarray(residual_stack) if isinstance(residual_stack, np.ndarray) else None
        if stack is None or stack.dtype.kind != "f" or stack.ndim < 2 or stack.shape[-1] != self.model.n_embd:
            raise bad_value("residual_stack", type(residual_stack).__name__, "expected a stack [component, batch, "
                            f"pos, n_embd {self.model.n_embd}] of floats, as the cache's stacks give")
        directions = residual_directions(self.model, tokens, "tokens")
        if incorrect_tokens is not None:
            directions = directions - residual_directions(self.model, incorrect_tokens, "incorrect_tokens")
        scaled = self.apply_ln_to_stack(stack, None, pos_slice=pos_slice)
        if stack.ndim == 4 and directions.ndim == 2 and directions.shape[0] == stack.shape[1]:
            directions = directions[:, None, :]  # a token per context, over every position (as TransformerLens)
        try:
            return (scaled * directions).sum(axis=-1)
        except ValueError:
            raise bad_value("tokens", f"of shape {list(np.shape(directions))[:-1]}", "do not meet the stack's "
                            f"[component, batch, pos] {list(stack.shape[:-1])}; give ids [batch, pos], or index "
                            "the stack at one position and give ids [batch]") from None
