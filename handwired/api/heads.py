"""The residual stream taken apart by head and by neuron, as TransformerLens's cache takes it: each head's result
(its z through its rows of c_proj, no bias), each MLP unit's (its activation times its row of c_proj), and the
biases summed apart. Computed from a run's ``hook_z`` and ``mlp.hook_post`` and the model's weights, so a cache
holds them without ``use_attn_result``."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

from handwired.api.arguments import shown
from handwired.errors import HandwiredError, bad_value
from handwired.weightfile import Model

Array = NDArray[np.float64]


def head_result(model: Model, z: Array, layer: int) -> Array:  # z [batch, pos, head, d_head] -> [batch, pos, head, d]
    """Block ``layer``'s heads' results, as TransformerLens's ``hook_result``: each head's z through its own rows of
    c_proj, without c_proj's bias (which :func:`accumulated_bias` counts once)."""
    w_o = model.params["blocks"][layer]["attn"]["c_proj"]["w"].reshape(model.n_head, model.d_head, model.n_embd)
    return np.einsum("bphd,hdm->bphm", z, w_o)


def neuron_result(model: Model, post: Array, layer: int) -> Array:  # [batch, pos, hidden] -> [.., hidden, d]
    """Block ``layer``'s MLP units' results: each unit's activation times its row of the MLP's c_proj."""
    w_out = model.params["blocks"][layer]["mlp"]["c_proj"]["w"]  # [hidden, n_embd]
    return post[..., :, None] * w_out


def accumulated_bias(model: Model, layer: int, mlp_input: bool, include_mlp_biases: bool) -> Array:  # -> [n_embd]
    """What the biases add to the stream before block ``layer`` reads it (its MLP, with ``mlp_input``): each earlier
    block's c_proj bias, and its MLP's output bias with ``include_mlp_biases``, as TransformerLens's
    ``accumulated_bias``."""
    total = np.zeros(model.n_embd)
    blocks = model.params["blocks"]
    for i in range(layer + (1 if mlp_input and layer < len(blocks) else 0)):
        total = total + blocks[i]["attn"]["c_proj"]["b"]
        if include_mlp_biases and "mlp" in blocks[i] and i < layer:
            total = total + blocks[i]["mlp"]["c_proj"]["b"]
    return total


def residual_directions(model: Model, tokens: object, name: str) -> Array:
    """The unembedding's column of each token (TransformerLens's ``tokens_to_residual_directions``): a token's text
    or id -> [n_embd]; ids [batch] or [batch, pos] -> [batch, (pos,) n_embd]."""
    if isinstance(tokens, str):
        if tokens not in model.vocab:
            raise bad_value(name, repr(tokens), f"not a token of the vocabulary {', '.join(map(repr, model.vocab))}")
        ids: Any = model.vocab.index(tokens)
    else:
        try:
            ids = np.asarray(tokens)
        except ValueError:
            raise bad_value(name, "(ragged)", "expected a token, a token id or an array of them") from None
        if ids.dtype == bool or not np.issubdtype(ids.dtype, np.integer) or ids.ndim > 2:
            raise bad_value(name, shown(tokens), "expected a token, a token id or token ids [batch] or [batch, pos]")
        if ((ids < 0) | (ids >= model.n_vocab)).any():
            raise bad_value(name, shown(tokens), f"token ids are 0…{model.n_vocab - 1}")
    return model.params["wte"][ids]


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def check_layer(layer: object, n_layer: int) -> int:
    """The block a stack stops before: ``layer``, or every one for None, -1 or n_layer."""
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, (int, np.integer))):
        raise bad_value("layer", repr(layer), "expected a block's number, or None for every one")
    last = n_layer if layer is None or layer == -1 else int(layer)
    if not 0 <= last <= n_layer:
        raise bad_value("layer", layer, f"the model has blocks 0…{n_layer - 1}; {n_layer}, -1 or None is every one")
    return last


def check_position(position: object, n_pos: int, name: str = "position") -> int:
    """A position of the cached contexts, counted from the end when negative; one line otherwise."""
    if isinstance(position, bool) or not isinstance(position, (int, np.integer)):
        raise bad_value(name, repr(position), "expected a whole number of a position")
    if not -n_pos <= position < n_pos:
        raise bad_value(name, position, f"the contexts have positions 0…{n_pos - 1}")
    return int(position) % n_pos


def no_parts() -> HandwiredError:
    return HandwiredError("no component to stack: give a later layer, or include the embeddings")
