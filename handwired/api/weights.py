"""A model's weights under TransformerLens's names and in its shapes (``W_Q`` is [n_layer, n_head, d_model, d_head]),
read from the model's own parameters each time they are asked for: never a second copy to fall out of step.

Each is a fresh, read-only array: change a weight with :meth:`HookedModel.set`, not through these. ``OV`` and ``QK``
are :class:`Factored`, as TransformerLens's ``FactoredMatrix``: ``.A``, ``.B`` and their product ``.AB``;
``W_OV`` and ``W_QK`` are those products as arrays.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from handwired.api.arguments import shown
from handwired.errors import HandwiredError
from handwired.weightfile import Model

Array = NDArray[np.float64]


def _frozen(array: NDArray[Any]) -> Array:
    array = np.array(array, dtype=np.float64)  # a copy of its own, which no edit reaches
    array.setflags(write=False)
    return array


class Factored:
    """A matrix kept as a product, as TransformerLens's ``FactoredMatrix``: ``A`` [..., m, k] times ``B``
    [..., k, n]; ``AB`` is the product [..., m, n], ``BA`` the other order (when m == n); ``m[1, 0]`` indexes the
    leading axes (block, head) of both."""

    def __init__(self, A: Array, B: Array) -> None:
        self.A, self.B = A, B

    @property
    def AB(self) -> Array:
        return _frozen(self.A @ self.B)

    @property
    def BA(self) -> Array:
        if self.A.shape[-2] != self.B.shape[-1]:
            raise HandwiredError(f"BA: B's {self.B.shape[-1]} columns do not meet A's {self.A.shape[-2]} rows")
        return _frozen(self.B @ self.A)

    @property
    def T(self) -> "Factored":
        return Factored(_frozen(np.swapaxes(self.B, -1, -2)), _frozen(np.swapaxes(self.A, -1, -2)))

    @property
    def shape(self) -> tuple[int, ...]:
        return (*self.A.shape[:-1], self.B.shape[-1])

    @property
    def ndim(self) -> int:
        return self.A.ndim

    def __getitem__(self, index: int | tuple[int, ...]) -> "Factored":
        index = index if isinstance(index, tuple) else (index,)
        if len(index) > self.ndim - 2 or not all(isinstance(i, (int, np.integer)) for i in index):
            raise HandwiredError(f"{{index}} {shown(index)}: index the leading axes (block, head) with whole numbers, "
                                 f"at most {self.ndim - 2}", ("index",))
        try:
            return Factored(_frozen(self.A[index]), _frozen(self.B[index]))
        except IndexError:
            raise HandwiredError(f"{{index}} {shown(index)}: out of range for shape {list(self.shape[:-2])}",
                                 ("index",)) from None

    def __repr__(self) -> str:
        return f"<Factored {list(self.shape)}: A {list(self.A.shape)} @ B {list(self.B.shape)}>"


def _blocks(model: Model, each: Callable[[dict[str, Any]], NDArray[Any]], shape: tuple[int, ...]) -> Array:
    """One array per block, stacked [n_layer, …] (a model with no block: an empty stack of ``shape``)."""
    parts = [each(block) for block in model.params["blocks"]]
    return _frozen(np.stack(parts) if parts else np.zeros((0, *shape)))


def attention(model: Model, kind: str) -> Array:
    """``W_Q``/``W_K``/``W_V`` [n_layer, n_head, d_model, d_head] (kind "Q", "K", "V"), ``W_O`` [n_layer, n_head,
    d_head, d_model], their biases ``b_Q``… [n_layer, n_head, d_head] and ``b_O`` [n_layer, d_model] (kind "bQ"…)."""
    n_embd, n_head, d_head = model.n_embd, model.n_head, model.d_head
    if kind == "O":
        return _blocks(model, lambda b: b["attn"]["c_proj"]["w"].reshape(n_head, d_head, n_embd),
                       (n_head, d_head, n_embd))
    if kind == "bO":
        return _blocks(model, lambda b: b["attn"]["c_proj"]["b"], (n_embd,))
    j = "QKV".index(kind[-1]) * n_embd
    if kind.startswith("b"):
        return _blocks(model, lambda b: b["attn"]["c_attn"]["b"][j:j + n_embd].reshape(n_head, d_head),
                       (n_head, d_head))
    return _blocks(model, lambda b: b["attn"]["c_attn"]["w"][:, j:j + n_embd].reshape(n_embd, n_head, d_head)
                   .transpose(1, 0, 2), (n_head, n_embd, d_head))


def d_mlp(model: Model) -> int:
    """TransformerLens's d_mlp: the widest MLP; a narrower one (or a block without) is padded with zero units, as an
    export pads it. A model with no MLP has no W_in: one line saying so."""
    widths = [block["mlp"]["c_fc"]["w"].shape[1] for block in model.params["blocks"] if "mlp" in block]
    if not widths:
        raise HandwiredError(f"{model.source}: has no MLP, so no W_in, W_out, b_in or b_out (as an attention-only "
                             "model in TransformerLens)")
    return max(widths)


def mlp(model: Model, kind: str) -> Array:
    """``W_in`` [n_layer, d_model, d_mlp], ``b_in`` [n_layer, d_mlp], ``W_out`` [n_layer, d_mlp, d_model],
    ``b_out`` [n_layer, d_model]."""
    width, n_embd = d_mlp(model), model.n_embd
    layer, key, shape = {"W_in": ("c_fc", "w", (n_embd, width)), "b_in": ("c_fc", "b", (width,)),
                         "W_out": ("c_proj", "w", (width, n_embd)), "b_out": ("c_proj", "b", (n_embd,))}[kind]

    def padded(block: dict[str, Any]) -> NDArray[Any]:
        out = np.zeros(shape)
        if "mlp" in block:
            value = block["mlp"][layer][key]
            out[tuple(slice(0, n) for n in value.shape)] = value
        return out

    return _blocks(model, padded, shape)


def embedding(model: Model, kind: str) -> Array:
    """``W_E`` [d_vocab, d_model], ``W_pos`` [n_ctx, d_model], ``W_U`` [d_model, d_vocab] (handwired's unembedding
    is the embedding, tied) and ``b_U`` [d_vocab] (zero: there is no unembedding bias)."""
    params = model.params
    found = {"W_E": lambda: params["wte"], "W_pos": lambda: params["wpe"], "W_U": lambda: params["wte"].T,
             "b_U": lambda: np.zeros(model.n_vocab)}[kind]
    return _frozen(found())


class TransformerLensWeights:
    """The weight properties of :class:`~handwired.api.model.HookedModel`, named and shaped as TransformerLens's."""

    model: Model

    @property
    def W_E(self) -> Array:  # [d_vocab, d_model]
        return embedding(self.model, "W_E")

    @property
    def W_pos(self) -> Array:  # [n_ctx, d_model]
        return embedding(self.model, "W_pos")

    @property
    def W_U(self) -> Array:  # [d_model, d_vocab]
        return embedding(self.model, "W_U")

    @property
    def b_U(self) -> Array:  # [d_vocab]
        return embedding(self.model, "b_U")

    @property
    def W_Q(self) -> Array:  # [n_layer, n_head, d_model, d_head]
        return attention(self.model, "Q")

    @property
    def W_K(self) -> Array:  # [n_layer, n_head, d_model, d_head]
        return attention(self.model, "K")

    @property
    def W_V(self) -> Array:  # [n_layer, n_head, d_model, d_head]
        return attention(self.model, "V")

    @property
    def W_O(self) -> Array:  # [n_layer, n_head, d_head, d_model]
        return attention(self.model, "O")

    @property
    def b_Q(self) -> Array:  # [n_layer, n_head, d_head]
        return attention(self.model, "bQ")

    @property
    def b_K(self) -> Array:  # [n_layer, n_head, d_head]
        return attention(self.model, "bK")

    @property
    def b_V(self) -> Array:  # [n_layer, n_head, d_head]
        return attention(self.model, "bV")

    @property
    def b_O(self) -> Array:  # [n_layer, d_model]
        return attention(self.model, "bO")

    @property
    def W_in(self) -> Array:  # [n_layer, d_model, d_mlp]
        return mlp(self.model, "W_in")

    @property
    def b_in(self) -> Array:  # [n_layer, d_mlp]
        return mlp(self.model, "b_in")

    @property
    def W_out(self) -> Array:  # [n_layer, d_mlp, d_model]
        return mlp(self.model, "W_out")

    @property
    def b_out(self) -> Array:  # [n_layer, d_model]
        return mlp(self.model, "b_out")

    @property
    def OV(self) -> Factored:  # W_V @ W_O: [n_layer, n_head, d_model, d_model]
        return Factored(self.W_V, self.W_O)

    @property
    def QK(self) -> Factored:  # W_Q @ W_Kᵀ: [n_layer, n_head, d_model, d_model], no 1/√d_head
        return Factored(self.W_Q, _frozen(np.swapaxes(self.W_K, -1, -2)))

    @property
    def W_OV(self) -> Array:  # OV.AB
        return self.OV.AB

    @property
    def W_QK(self) -> Array:  # QK.AB
        return self.QK.AB
