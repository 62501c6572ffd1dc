"""The walk's step, written once: a batch of children's new positions through the whole model, over an arithmetic.

:func:`block_step` is GPT-2 at one new position per node — the embeddings, then each block's attention (ln_1,
c_attn or block 0's table, the keys and values extended, the pattern and values, c_proj) and MLP (ln_2, c_fc, GELU,
c_proj), each added to the residual stream, then ln_f and the tied unembedding — and it does no arithmetic itself:
every operation is its ``arithmetic``'s (:class:`Arithmetic`). There are two: float64 on columns
(:class:`handwired.engine.arithmetic.floats.Floats`, the float walk's, with the hook that records intermediates, and
what sweep and ablate resume with) and certified intervals in midpoint-radius form on the same columns
(:class:`handwired.engine.arithmetic.certified.Certified`, whose mids are the float functions' bits). A new operation is
one method in each.

The step may start inside the model (:class:`Entry`): sweep and ablate resume a variant at the first stage it
changes, with what the base model's walk handed over there.
"""

from typing import Any, Protocol

import numpy as np

from handwired.engine.walk import Family
from handwired.weightfile import Model

ATTENTION, PROJECTION, MLP = "attention", "c_proj", "mlp"  # where in a block a step may start


class Arithmetic(Protocol):
    """The operations of one arithmetic on a batch's columns (a value holds its n nodes along its last axis); ``b``
    is a block's index (None: outside the blocks), ``name`` a TransformerLens hook name."""

    model: Model

    def embed(self, tokens: np.ndarray, length: int) -> Any:
        """The embeddings of ``tokens`` at position length-1: [n_embd, n]."""
        ...

    def record(self, b: int | None, name: str, value: Any) -> None:
        """Hands an intermediate to whoever records them (or nobody)."""
        ...

    def norm(self, x: Any, params: dict, b: int | None, name: str) -> Any:
        """LayerNorm over each column, gain and bias ``params``; ``name``: ln1, ln2 or ln_final."""
        ...

    def looked_up(self, b: int) -> bool:
        """Whether block ``b``'s q, k and v come from a table (block 0's, from the token and position alone)."""
        ...

    def look_up(self, b: int, x: Any, tokens: np.ndarray, length: int) -> Any:
        """Block ``b``'s q, k and v from its table (x: the residual stream, for its hooks alone)."""
        ...

    def c_attn(self, b: int, h: Any) -> Any:
        """Block ``b``'s q, k and v from ln_1's output."""
        ...

    def extend(self, b: int, kv: Any, qkv: Any, family: Family, length: int, keep: bool) -> tuple[Any, Any]:
        """The keys and values each child sees (its parent's, then its own), and the children's past when
        ``keep`` (None else)."""
        ...

    def attention(self, b: int, qkv: Any, seen: Any) -> Any:
        """Block ``b``'s attention output (c_proj's) at the new positions: [n_embd, n]."""
        ...

    def project(self, b: int, z: Any) -> Any:
        """Block ``b``'s c_proj of heads' values ``z`` given ([n_embd, n], every dimension)."""
        ...

    def silent(self, b: int) -> bool:
        """Whether block ``b``'s MLP adds its c_proj bias alone (computed as such)."""
        ...

    def linear(self, x: Any, b: int, name: str) -> Any:
        """Block ``b``'s MLP layer ``name`` (c_fc or c_proj) on ``x``."""
        ...

    def gelu(self, x: Any) -> Any:
        ...

    def add(self, x: Any, y: Any) -> Any:
        """The residual stream ``x`` plus what a layer adds (``x`` is the step's own: it may be written in)."""
        ...

    def bias(self, x: Any, bias: np.ndarray) -> Any:
        """``x`` plus a silent layer's bias [n_embd]."""
        ...

    def unembed(self, x: Any) -> Any:
        """The tied unembedding of ln_f's output: the batch's logits as the walk hands them on."""
        ...


class Entry:
    """Where a step starts other than at the embeddings: in ``block`` (n_layer: at ln_f), at ``part`` (ATTENTION:
    ln_1 onwards; PROJECTION: c_proj, given the heads' values ``z``; MLP: ln_2 onwards), with ``x`` the residual
    stream entering there. (A plain class: a dataclass would cost every command that loads a walk its making.)"""

    __slots__ = ("block", "part", "x", "z")

    def __init__(self, block: int, part: str, x: Any, z: Any = None):
        self.block, self.part, self.x, self.z = block, part, x, z


def block_step(arithmetic: Arithmetic, past: list, family: Family, length: int, logits: bool, keep: bool,
               entry: Entry | None = None) -> tuple[Any, list]:
    """The children's new positions: their logits (when ``logits``; the arithmetic's :meth:`~Arithmetic.unembed`)
    and their past (when ``keep``): per block, what :meth:`~Arithmetic.extend` keeps (None: a block whose attention
    is not run, a silent one or one before ``entry``). ``past``: the parents', per block (None: not read)."""
    params, tokens, at = arithmetic.model.params, family.tokens, arithmetic
    x = at.embed(tokens, length) if entry is None else entry.x
    first, part = (0, ATTENTION) if entry is None else (entry.block, entry.part)
    kept: list = [None] * len(past)
    last = max((b for b, kv in enumerate(past) if kv is not None), default=-1)  # the last block whose keys are read
    for b in range(first, len(params["blocks"])):
        block = params["blocks"][b]
        if b > first or part == ATTENTION:
            at.record(b, "hook_resid_pre", x)
            if past[b] is None:  # silent attention: only its bias reaches the residual stream
                x = at.bias(x, block["attn"]["c_proj"]["b"])
            else:
                qkv = at.look_up(b, x, tokens, length) if at.looked_up(b) else at.c_attn(b, _norm(at, x, block, b))
                seen, kept[b] = at.extend(b, past[b], qkv, family, length, keep)
                if not logits and b >= last:  # nothing later reads this batch's residual stream
                    return None, kept
                x = at.add(x, at.attention(b, qkv, seen))
        elif part == PROJECTION:  # the heads' values are given
            assert entry is not None
            x = at.add(x, at.project(b, entry.z))
        if not logits and b >= last:
            return None, kept
        x = mlp(at, b, x)
        at.record(b, "hook_resid_post", x)
    if not logits:
        return None, kept
    if "ln_f" in params:
        x = at.norm(x, params["ln_f"], None, "ln_final")
    return at.unembed(x), kept


def _norm(at: Arithmetic, x: Any, block: dict, b: int) -> Any:  # ln_1's output, x itself without one
    return at.norm(x, block["ln_1"], b, "ln1") if "ln_1" in block else x


def mlp(at: Arithmetic, b: int, x: Any) -> Any:
    """The residual stream ``x`` after block ``b``'s MLP, if it has one: x + c_proj(gelu(c_fc(ln_2(x))))."""
    block = at.model.params["blocks"][b]
    if "mlp" not in block:
        return x
    if at.silent(b):  # a silent MLP adds its bias alone
        return at.bias(x, block["mlp"]["c_proj"]["b"])
    at.record(b, "hook_resid_mid", x)
    h = at.norm(x, block["ln_2"], b, "ln2") if "ln_2" in block else x
    pre = at.linear(h, b, "c_fc")  # [n_hidden, n]
    at.record(b, "mlp.hook_pre", pre)
    post = at.gelu(pre)
    at.record(b, "mlp.hook_post", post)
    out = at.linear(post, b, "c_proj")  # [n_embd, n]
    at.record(b, "hook_mlp_out", out)
    return at.add(x, out)
