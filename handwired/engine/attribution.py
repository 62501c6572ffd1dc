"""Direct logit attribution: which part of the model put each logit where it is.

The residual stream at a position is a sum: the token embedding, the position
embedding, and whatever each block adds (its heads' outputs through ``c_proj``,
``c_proj``'s bias, its MLP). The unembedding is linear, so each logit splits
into one additive share per part: ``logit[t] = Σ_part part · wte[t]``.

A final LayerNorm is linear once its scale is fixed: with σ the actual
``√(var(x) + eps)`` at the position, ``LN_f(x) = Σ_part g ⊙ (part − mean(part)) / σ + b``,
so each part is centred and divided by that same σ, and ``ln_f``'s bias is a
part of its own. The shares then still add up to the logit exactly.

Everything is read from a trace's record (TransformerLens hook names); nothing
is recomputed but the products with ``c_proj`` and ``wte``.
"""

from dataclasses import dataclass

import numpy as np

from handwired.engine.forward import LN_EPS, matmul
from handwired.engine.trace import Trace
from handwired.weightfile import Model


@dataclass(frozen=True)
class Attribution:
    position: int
    parts: tuple[str, ...]  # what each row is, e.g. "block 0 head 1"
    hooks: tuple[str, ...]  # where each part's vector was read
    residual: np.ndarray  # [n_parts, n_embd]: each part's vector in the residual stream
    contributions: np.ndarray  # [n_parts, n_vocab]: each part's share of each logit
    logits: np.ndarray  # [n_vocab]: the forward pass's logits at the position
    scale: float | None  # ln_f's σ = √(var(x) + eps) at the position; None without ln_f
    unit_gain: np.ndarray | None = None  # [n_parts, n_vocab]: the shares were ln_f's gain g all ones; None without ln_f

    @property
    def total(self) -> np.ndarray:  # [n_vocab]
        return self.contributions.sum(axis=0)


def head_writes(z, w_o, n_head):  # [..., head, d_head], [n_embd, n_embd] -> [..., head, n_embd]
    # concat(z_0 … z_H) · W_O = Σ_h z_h · W_O[rows of head h]: each head's own share of attn_out
    d_head = z.shape[-1]
    return np.einsum("...hd,hde->...he", z, w_o.reshape(n_head, d_head, w_o.shape[-1]))


def centre_and_scale(parts, g, scale):  # [n_parts, n_embd] -> [n_parts, n_embd]
    # LN_f's map with its scale frozen: linear, so it applies to each part on its own
    return g * (parts - parts.mean(axis=-1, keepdims=True)) / scale


def residual_parts(model: Model, record: dict, position: int) -> list[tuple[str, str, np.ndarray]]:
    """(label, hook, vector [n_embd]) for every additive part of the residual stream at ``position``."""
    parts = [("token embedding wte", "hook_embed", record["hook_embed"][position]),
             ("position embedding wpe", "hook_pos_embed", record["hook_pos_embed"][position])]
    for i, block in enumerate(model.params["blocks"]):
        c_proj = block["attn"]["c_proj"]
        z = record[f"blocks.{i}.attn.hook_z"][position]  # [head, d_head]
        writes = head_writes(z, c_proj["w"], model.n_head)  # [head, n_embd]
        for h in range(model.n_head):
            parts.append((f"block {i} head {h}", f"blocks.{i}.attn.hook_z", writes[h]))
        parts.append((f"block {i} attn bias c_proj.b", f"blocks[{i}].attn.c_proj.b", c_proj["b"]))
        if f"blocks.{i}.hook_mlp_out" in record:
            parts.append((f"block {i} mlp", f"blocks.{i}.hook_mlp_out", record[f"blocks.{i}.hook_mlp_out"][position]))
    return parts


def attribute(model: Model, trace: Trace, position: int | None = None) -> Attribution:
    """Split each logit at ``position`` (default: the last) into the parts of the model."""
    record = trace.record
    position = len(trace.window) - 1 if position is None else position
    labels, hooks, vectors = zip(*residual_parts(model, record, position))
    residual = np.stack(vectors)  # [n_parts, n_embd]
    scale, unit_gain = None, None
    if "ln_f" in model.params:
        ln_f = model.params["ln_f"]
        n_layer = model.n_layer
        x = record[f"blocks.{n_layer - 1}.hook_resid_post"][position] if n_layer else residual.sum(axis=0)  # [n_embd]
        scale = float(np.sqrt(np.var(x) + LN_EPS))
        unit = np.vstack([centre_and_scale(residual, 1.0, scale), ln_f["b"]])  # [n_parts + 1, n_embd], g = 1
        unit_gain = matmul(unit, model.params["wte"].T)  # [n_parts + 1, n_vocab]
        residual = np.vstack([centre_and_scale(residual, ln_f["g"], scale), ln_f["b"]])  # [n_parts + 1, n_embd]
        labels, hooks = (*labels, "final LayerNorm bias ln_f.b"), (*hooks, "ln_f.b")
    contributions = matmul(residual, model.params["wte"].T)  # [n_parts, n_embd] -> [n_parts, n_vocab]
    return Attribution(position, tuple(labels), tuple(hooks), residual, contributions, record["logits"][position],
                       scale, unit_gain)


def tops(logits: np.ndarray) -> tuple[int, ...]:
    """The tokens with the highest logit: one, or several that tie exactly."""
    return tuple(int(i) for i in np.flatnonzero(logits == np.max(logits)))


def movers(attribution: Attribution) -> list[tuple[str, tuple[int, ...], tuple[int, ...]]]:
    """(part, the top tokens without it, the top tokens with it) for each part that changes them on its own (a tie is
    its tokens, never the first of them)."""
    with_all = tops(attribution.total)
    result = []
    for label, share in zip(attribution.parts, attribution.contributions):
        without = tops(attribution.total - share)
        if without != with_all:
            result.append((label, without, with_all))
    return result


def pushes(attribution: Attribution, toward: int, against: int) -> np.ndarray:  # -> [n_parts]
    """Each part's share of logit[toward] − logit[against]: how far it pushed one token over the other."""
    return attribution.contributions[:, toward] - attribution.contributions[:, against]  # [n_parts]


@dataclass(frozen=True)
class GainEffect:
    """What the final LayerNorm's gain g does to the answer at a position, against g = 1 (every other number kept)."""

    top: int  # the top token
    runner_up: int  # the best other token
    top_at_unit_gain: int  # the top token were g all ones
    flipped: tuple[str, ...]  # parts that favour the runner-up over the top token at g = 1, and the top with g


def gain_effect(attribution: Attribution) -> GainEffect | None:
    """How ln_f's gain changes the winner or a part's sign; None without ln_f or when it changes neither."""
    if attribution.unit_gain is None or attribution.contributions.shape[1] < 2:
        return None
    order = np.argsort(-attribution.total, kind="stable")  # [n_vocab], first the top token
    top, runner_up = int(order[0]), int(order[1])
    with_gain = pushes(attribution, top, runner_up)  # [n_parts]
    unit = attribution.unit_gain[:, top] - attribution.unit_gain[:, runner_up]  # [n_parts]
    flipped = tuple(label for label, a, b in zip(attribution.parts, unit, with_gain) if a * b < 0)
    unit_top = int(np.argmax(attribution.unit_gain.sum(axis=0)))
    if unit_top == top and not flipped:
        return None
    return GainEffect(top, runner_up, unit_top, flipped)
