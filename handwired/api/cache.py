"""The activations of a run, keyed by TransformerLens hook names with the batch axis kept, and the residual
stream taken apart as ``explain --step why`` takes it."""

from collections.abc import Callable, Iterator, Mapping
from typing import Literal, overload

import numpy as np

from handwired.api.arguments import shown
from handwired.api.heads import Array, check_layer, check_position
from handwired.api.keywords import speaks_python
from handwired.api.names import key_name
from handwired.api.stacks import HeadStacks, Labelled
from handwired.engine.attribution import Attribution, attribute, centre_and_scale
from handwired.engine.forward import LN_EPS, layer_norm
from handwired.engine.trace import Trace
from handwired.errors import HandwiredError, bad_value
from handwired.views.display import escape
from handwired.weightfile import Model


class ActivationCache(HeadStacks, Mapping[str, Array]):
    """Hook name -> value [batch, …], in forward-pass order; ``cache["pattern", 0]`` and the other short forms of
    TransformerLens's ``get_act_name`` work too."""

    def __init__(self, model: Model, tokens: np.ndarray, record: dict[str, np.ndarray]) -> None:
        self.model = model
        self.tokens = tokens  # [batch, pos]
        self._record = record

    def __getitem__(self, key: object) -> np.ndarray:
        name = key_name(key, self.model.n_layer)
        if name not in self._record:
            raise KeyError(f"{key!r}: no hook {name!r} in this cache; it holds {', '.join(self._record)}")
        return self._record[name]

    def __contains__(self, key: object) -> bool:
        try:
            return key_name(key, self.model.n_layer) in self._record
        except KeyError:
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self._record)

    def __len__(self) -> int:
        return len(self._record)

    def __repr__(self) -> str:
        batch, pos = self.tokens.shape
        return f"<ActivationCache: {len(self)} hooks, batch {batch}, {pos} positions; e.g. cache['pattern', 0]>"

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td><code>{escape(name)}</code></td><td>{list(value.shape)}</td></tr>"
                       for name, value in self._record.items())
        return f"<p>{escape(repr(self))}</p><table><tr><th>hook</th><th>shape</th></tr>{rows}</table>"

    @speaks_python
    def stack_activation(self, activation_name: str, layer: int | None = None,
                         sublayer_type: str | None = None) -> Array:  # -> [layer, batch, …]
        """One hook of every block, stacked, as TransformerLens's: ``stack_activation("resid_post")``; ``layer``:
        the blocks before that one only; ``sublayer_type``: as in ``cache["normalized", 0, "ln1"]``."""
        last = self._last(layer)
        if last == 0:
            raise bad_value("layer", layer, "no block comes before block 0: nothing to stack")
        if not isinstance(activation_name, str):
            raise bad_value("activation_name", shown(activation_name), "expected a hook's name, e.g. 'resid_post'")
        try:
            return np.stack([self[activation_name, i, sublayer_type] for i in range(last)])
        except KeyError as error:
            raise bad_value("activation_name", repr(activation_name), str(error.args[0]).partition(": ")[2]) from None

    @overload
    def accumulated_resid(self, layer: int | None = None, incl_mid: bool = False, apply_ln: bool = False,
                          return_labels: Literal[False] = False, mlp_input: bool = False) -> Array: ...
    @overload
    def accumulated_resid(self, layer: int | None = None, incl_mid: bool = False, apply_ln: bool = False, *,
                          return_labels: Literal[True], mlp_input: bool = False) -> Labelled: ...
    @overload
    def accumulated_resid(self, layer: int | None = None, incl_mid: bool = False, apply_ln: bool = False,
                          return_labels: bool = False, mlp_input: bool = False) -> Array | Labelled: ...

    @speaks_python
    def accumulated_resid(self, layer: int | None = None, incl_mid: bool = False, apply_ln: bool = False,
                          return_labels: bool = False, mlp_input: bool = False) -> Array | Labelled:
        """The residual stream as it grows, as TransformerLens stacks it: each block's ``resid_pre`` (and, with
        ``incl_mid``, ``resid_mid``) up to the input of block ``layer``, then (for ``layer`` None, -1 or n_layer)
        the final ``resid_post``; ``mlp_input``: block ``layer``'s ``resid_mid`` too. [component, batch, pos, n_embd]
        ``apply_ln``: up to a block, as :meth:`apply_ln_to_stack`; up to the end, as TransformerLens 3.x and 4.x do it
        there, the whole final LayerNorm applied to each component on its own statistics, gain and bias included
        (a logit lens: ``stack @ wte.T`` are the logits each stage of the stream would give)."""
        n_layer, last = self.model.n_layer, self._last(layer)
        labels, parts = [], []
        for i in range(last + 1):
            if i == n_layer:
                labels.append("final_post")
                parts.append(self["resid_post", i - 1] if n_layer else self["hook_embed"] + self["hook_pos_embed"])
                break
            labels.append(f"{i}_pre")
            parts.append(self["resid_pre", i])
            if ((incl_mid and i < last) or (mlp_input and i == last)) and ("resid_mid", i) in self:
                labels.append(f"{i}_mid")
                parts.append(self["resid_mid", i])
        stack = np.stack(parts)  # [component, batch, pos, n_embd]
        if apply_ln and last == n_layer and "ln_f" in self.model.params:  # a logit lens, as TransformerLens's
            ln_f = self.model.params["ln_f"]
            return self._finish(layer_norm(stack, ln_f["g"], ln_f["b"]), labels, False, return_labels, layer)
        return self._finish(stack, labels, apply_ln, return_labels, layer, mlp_input)

    @overload
    def decompose_resid(self, layer: int | None = None, mode: str = "all", incl_embeds: bool = True,
                        apply_ln: bool = False, return_labels: Literal[False] = False) -> Array: ...
    @overload
    def decompose_resid(self, layer: int | None = None, mode: str = "all", incl_embeds: bool = True,
                        apply_ln: bool = False, *, return_labels: Literal[True]) -> Labelled: ...
    @overload
    def decompose_resid(self, layer: int | None = None, mode: str = "all", incl_embeds: bool = True,
                        apply_ln: bool = False, return_labels: bool = False) -> Array | Labelled: ...

    @speaks_python
    def decompose_resid(self, layer: int | None = None, mode: str = "all", incl_embeds: bool = True,
                        apply_ln: bool = False, return_labels: bool = False) -> Array | Labelled:
        """What each part wrote into the residual stream (they add up to it): ``embed``, ``pos_embed``, then each
        block's ``attn_out`` and ``mlp_out`` (``mode`` "attn" or "mlp": one kind); [component, batch, pos, n_embd]."""
        if mode not in ("all", "attn", "mlp"):
            raise bad_value("mode", repr(mode), "expected 'all', 'attn' or 'mlp'")
        last = self._last(layer)
        labels, parts = [], []
        if incl_embeds:
            labels += ["embed", "pos_embed"]
            parts += [self["hook_embed"], self["hook_pos_embed"]]
        for i in range(last):
            for kind in ("attn", "mlp"):
                if mode in ("all", kind) and (f"{kind}_out", i) in self:
                    labels.append(f"{i}_{kind}_out")
                    parts.append(self[f"{kind}_out", i])
        if not parts:
            raise HandwiredError("decompose_resid: no part to show; include the embeddings or a block", ())
        return self._finish(np.stack(parts), labels, apply_ln, return_labels, layer)

    def _last(self, layer: int | None) -> int:
        """The block a stack stops before: ``layer``, or every one for None, -1 or n_layer."""
        return check_layer(layer, self.model.n_layer)

    def _finish(self, stack: Array, labels: list[str], apply_ln: bool, return_labels: bool, layer: int | None,
                mlp_input: bool = False) -> Array | Labelled:
        if apply_ln:
            stack = self.apply_ln_to_stack(stack, layer, mlp_input)
        return (stack, labels) if return_labels else stack

    @speaks_python
    def apply_ln_to_stack(self, stack: Array, layer: int | None = None, mlp_input: bool = False,
                          pos_slice: int | None = None) -> Array:
        """Each component [component, batch, pos, n_embd] as the LayerNorm that reads the stream at ``layer`` sees
        it, as TransformerLens's ``apply_ln_to_stack``: centred and divided by that LayerNorm's scale σ = √(var(x) +
        eps), frozen at the whole stream's value (TransformerLens's cached ``hook_scale``), with no gain and no bias.
        ``layer`` None, -1 or n_layer: ``ln_f``, then ``(stack * ln_f.g) @ wte.T`` gives each component's share of
        each logit, and the shares and ``ln_f.b @ wte.T`` add up to the logits; ``layer=k``: block k's ``ln_1``
        (``ln_2`` with ``mlp_input``). Where the model has no LayerNorm there: the stack as it is. ``pos_slice``: a
        stack at that one position, [component, batch, n_embd]."""
        norm, read = self._reader(self._last(layer), mlp_input)
        batch, pos = self.tokens.shape
        at = None if pos_slice is None else check_position(pos_slice, pos, "pos_slice")
        wanted = (batch, self.model.n_embd) if at is not None else (batch, pos, self.model.n_embd)
        if not isinstance(stack, np.ndarray) or stack.ndim < 1 or stack.shape[1 - len(wanted) - 1:] != wanted:
            raise bad_value("stack", shown(stack), f"expected a stack [component, {', '.join(map(str, wanted))}] "
                            "(batch, pos, n_embd)" + ("" if at is not None else "; at one position, give pos_slice"))
        if norm is None:
            return stack
        scale = np.sqrt(np.var(read(), axis=-1, keepdims=True) + LN_EPS)  # [batch, pos, 1]
        return centre_and_scale(stack, 1.0, scale if at is None else scale[:, at])

    def _reader(self, last: int, mlp_input: bool) -> tuple[dict | None, Callable[[], np.ndarray]]:
        """The LayerNorm that reads the stream before block ``last`` (``ln_f`` after the last block), or None, and
        the stream it reads."""
        n_layer, params = self.model.n_layer, self.model.params
        if last == n_layer:  # mlp_input has no meaning there: ignored, as TransformerLens ignores it
            final = ("resid_post", n_layer - 1) if n_layer else None
            return params.get("ln_f"), lambda: self[final] if final else self["hook_embed"] + self["hook_pos_embed"]
        stream = ("resid_mid" if mlp_input else "resid_pre", last)
        return params["blocks"][last].get("ln_2" if mlp_input else "ln_1"), lambda: self[stream]

    @speaks_python
    def logit_attribution(self, position: int = -1, batch: int = 0) -> Attribution:
        """Each logit at one position of one context split into every part's share — the numbers
        ``explain --step why`` shows: ``.parts`` (labels), ``.contributions`` [part, vocab], ``.total``."""
        n_batch, n_pos = self.tokens.shape
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or not -n_batch <= batch < n_batch:
            raise bad_value("batch", repr(batch), f"the cache holds contexts 0…{n_batch - 1}")
        at = check_position(position, n_pos)
        record = {name: value[batch] for name, value in self._record.items()}
        text = self.model.decode(self.tokens[batch])
        try:
            return attribute(self.model, Trace(text, text, self.tokens[batch], record), at)
        except KeyError as error:
            raise HandwiredError(f"the cache has no {error.args[0]!r}, which the attribution reads: run "
                                 "run_with_cache without a names_filter that leaves it out") from None
