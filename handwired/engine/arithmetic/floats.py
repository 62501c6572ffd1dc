"""The float64 step of the walk (:mod:`handwired.engine.walk`): each batch of children's new positions.

:func:`~handwired.engine.block_step.block_step` in :class:`Floats`, forward.py's functions in float64 on columns:
every array holds its nodes along its last axis ([n_embd, n], not [n, n_embd]), so a LayerNorm's mean, a softmax
over keys and a sum over a head's dimensions add whole rows of n numbers at a time instead of a few numbers per node.
Only the attention dimensions that can reach the output are computed (:class:`Heads`). A node's past is, per block,
its keys and values at every position ([room, rows, n] each, room for n_ctx positions): an only child writes its own
into its parent's room and shares it; siblings get a copy of their parent's, with room when they will have children.
A silent attention (c_proj.w all zeros) keeps no past and adds its bias alone, unless an intermediate is recorded.
The hook sees forward's shapes less the position axis ([n, …]), and with a hook nothing is skipped.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from handwired.engine import walk as walking
from handwired.engine.block_step import block_step
from handwired.engine.forward import gelu, layer_norm, matmul, qkv_table, softmax
from handwired.engine.walk import Family, Shape, Visit, batch_nodes
from handwired.weightfile import Model


def silent(layer: dict) -> bool:
    """An attention or MLP whose c_proj.w is all zeros adds exactly its c_proj.b, whatever it reads: a starter's
    blocks, or one a player has not wired yet, cost nothing to evaluate."""
    return not layer["c_proj"]["w"].any()


@dataclass(frozen=True)
class Heads:
    """One block's attention cut down to the work that can reach its output: per head, the ``qk`` dimensions where
    both q and k can be non-zero (the others add exact zeros to every score) and the ``v`` dimensions whose value
    and c_proj row can both be non-zero, each padded with a zero column to the most any head keeps (at least one).
    ``w``, ``b``: c_attn's columns for them [n_in, rows] and [rows] (rows = n_head * (2*qk + v)), or block 0's q, k
    and v looked up for every token at each position [n_ctx, rows, n_vocab] (``w``; ``b`` None); ``proj``: c_proj's
    rows for the v dimensions [n_head * v, n_embd]; ``columns``: c_attn's column of each row (-1: padding)."""

    qk: int
    v: int
    w: np.ndarray
    b: np.ndarray | None
    proj: np.ndarray
    columns: np.ndarray


@dataclass
class Prepared:
    """What a walk computes once: each block's :class:`Heads` of ``params`` (None: an attention not read), the
    embeddings of each token at each position [n_ctx, n_embd, n_vocab] (made when first used), the unembedding
    [n_vocab, n_embd], and the room each length's batch of siblings keeps its past in, reused: depth first, a batch
    of one length is done with before the next batch of that length comes."""

    params: dict
    heads: list[Heads | None]
    rooms: dict = field(default_factory=dict)

    @cached_property
    def embed(self) -> np.ndarray:  # (a variant resumed past its embeddings never makes them)
        return self.params["wte"].T[None] + self.params["wpe"][:, :, None]  # [n_ctx, n_embd, n_vocab]

    @property
    def unembed(self) -> np.ndarray:
        return self.params["wte"]

    def room(self, key: tuple, shape: tuple[int, ...]) -> np.ndarray:
        """An uninitialised array of ``shape`` for ``key`` (the batch's length, the block, keys 0 or values 1 — the
        certified step's value bounds 2 —, or a step's scratch name), its buffer kept for the next batch of that
        length."""
        size = int(np.prod(shape))
        if len(self.rooms.get(key, ())) < size:
            self.rooms[key] = np.empty(size)
        return self.rooms[key][:size].reshape(shape)


def prepare(model: Model, reads: list[bool], full: bool, by_weights: bool = False) -> Prepared:
    """The lookups of a walk of ``model`` whose blocks' attentions are read where ``reads``; ``full``: nothing
    skipped (a hook sees every intermediate); ``by_weights``: block 0 too skips only the dimensions its weights and
    bias leave at zero, exact zeros in real arithmetic as well (not those float64 computes as zero for every
    input)."""
    params = model.params
    table = qkv_table(params) if model.n_layer and reads[0] else None  # [n_vocab, n_ctx, 3*n_embd]
    heads = [_heads(block, table if b == 0 else None, model.n_head, full, by_weights) if r else None
             for b, (block, r) in enumerate(zip(params["blocks"], reads))]
    return Prepared(params, heads)


def _heads(block: dict, table: np.ndarray | None, n_head: int, full: bool, by_weights: bool = False) -> Heads:
    attn = block["attn"]
    w, b, proj = attn["c_attn"]["w"], attn["c_attn"]["b"], attn["c_proj"]["w"]
    n_embd = len(proj)
    qk, vd = _live(block, table, n_head, full, by_weights)
    columns = np.concatenate([qk.ravel(), _shifted(qk, n_embd), _shifted(vd, 2 * n_embd)])
    proj = pick(proj, vd.ravel(), 0)  # [n_head * v, n_embd]
    if table is not None:
        return Heads(qk.shape[1], vd.shape[1], np.ascontiguousarray(pick(table, columns, 2).transpose(1, 2, 0)),
                     None, proj, columns)
    return Heads(qk.shape[1], vd.shape[1], pick(w, columns, 1), pick(b, columns, 0), proj, columns)


def _live(block: dict, table: np.ndarray | None, n_head: int, full: bool, by_weights: bool = False):
    """Each head's dimensions a walk keeps ([n_head, most] each, -1 padding): q·k's, where both the query and the key
    can be non-zero, and v's, where the value can be and c_proj reads it; all of them when ``full``."""
    attn = block["attn"]
    w, b, proj = attn["c_attn"]["w"], attn["c_attn"]["b"], attn["c_proj"]["w"]
    n_embd = len(proj)
    if full:
        live = np.ones(3 * n_embd, dtype=bool)
    else:  # a column that is zero for every token at every position, or in c_attn's weights and bias
        live = np.asarray(table.any(axis=(0, 1)) if table is not None and not by_weights else
                          w.any(axis=0) | (b != 0))  # [3*n_embd]
    q, k, v = live[:n_embd], live[n_embd:2 * n_embd], live[2 * n_embd:]
    return _per_head(q & k, n_head), _per_head(v if full else v & proj.any(axis=1), n_head)


def live_rows(model: Model) -> int:
    """The key and value rows a node keeps per position, in every block: each head's dimensions whose query and key,
    or value and output, its weights can make non-zero (at least one each; :func:`_live`, by the weights)."""
    return sum(model.n_head * sum(dims.shape[1] for dims in _live(block, None, model.n_head, False, True))
               for block in model.params["blocks"])


def _per_head(live: np.ndarray, n_head: int) -> np.ndarray:
    """[n_embd] bool -> [n_head, most]: each head's live dimensions, padded with -1 to the most a head has (≥ 1)."""
    d_head = len(live) // n_head
    dims = [np.flatnonzero(live[h * d_head:(h + 1) * d_head]) + h * d_head for h in range(n_head)]
    out = np.full((n_head, max(1, *(len(d) for d in dims))), -1)
    for h, d in enumerate(dims):
        out[h, :len(d)] = d
    return out


def _shifted(index: np.ndarray, by: int) -> np.ndarray:  # [...] -> [size]: each index + by, padding kept
    return np.where(index < 0, -1, index + by).ravel()


def pick(a: np.ndarray, index: np.ndarray, axis: int) -> np.ndarray:
    """a's entries at ``index`` along ``axis``, zeros where the index is -1 (padding)."""
    out = np.take(a, np.maximum(index, 0), axis=axis)
    np.moveaxis(out, axis, 0)[index < 0] = 0
    return out


def float_walk(model: Model, shape: Shape, chunk: int | None = None,
               hook: Callable[[str, np.ndarray], None] | None = None,
               names: frozenset[str] | None = None) -> Iterator[Visit]:
    """:func:`walk` with :func:`~handwired.engine.block_step.block_step` in :class:`Floats`: forward.py's float64
    functions. ``hook(name, value)`` is called with every intermediate of each batch at its new positions ([n, …],
    forward's shapes less the position axis) before the batch is yielded (only those ``names`` holds, when given);
    with a hook nothing is skipped."""
    reads = [hook is not None or not silent(block["attn"]) for block in model.params["blocks"]]
    floats = Floats(model, prepare(model, reads, hook is not None), hook, names)
    nodes = chunk or batch_nodes(model, model.n_ctx)
    return walking.walk(shape, floats.step, floats.root(), nodes)  # looked up when called: tests watch it


class _Named:
    """The hook as one block sees it (``prefix`` blocks.0.), passing on the intermediates ``names`` holds (all when
    None); without a hook it wants nothing. Values come as columns [..., n] and go out as [n, …]: ``axes`` reorders
    them (by default the last axis comes first, the others keep their order)."""

    def __init__(self, hook, prefix: str = "", names: frozenset[str] | None = None):
        self.hook, self.prefix, self.names = hook, prefix, names

    def wants(self, name: str) -> bool:
        return self.hook is not None and (self.names is None or self.prefix + name in self.names)

    def __call__(self, name: str, value, axes: tuple[int, ...] | None = None) -> None:
        if self.wants(name):
            self.hook(self.prefix + name, np.moveaxis(value, -1, 0) if axes is None else value.transpose(axes))


_ignore = _Named(None)  # the hook when nothing is recorded


class Floats:
    """The float64 arithmetic of :func:`~handwired.engine.block_step.block_step`: forward.py's functions on columns
    ([..., n]), computing only the attention dimensions ``prepared`` keeps (:class:`Heads`). A node's past is, per
    block, its keys and values [room, n_head * qk, n] and [room, n_head * v, n]. ``hook`` sees the intermediates
    ``names`` holds (all when None); with a hook a silent MLP is computed, and the residual stream is a new array
    at each addition (else added to in place)."""

    def __init__(self, model: Model, prepared: Prepared, hook=None, names: frozenset[str] | None = None):
        self.model, self.prepared, self.hook, blocks = model, prepared, hook, model.params["blocks"]
        self.named = [_Named(hook, f"blocks.{b}.", names) for b in range(len(blocks))] + [_Named(hook, "", names)]
        self.quiet = [hook is None and "mlp" in block and silent(block["mlp"]) for block in blocks]

    def root(self) -> list:  # the empty prefix's past: no keys yet, room for n_ctx
        h, room = self.model.n_head, self.model.n_ctx
        return [None if heads is None else (np.zeros((room, h * heads.qk, 1)), np.zeros((room, h * heads.v, 1)))
                for heads in self.prepared.heads]

    def step(self, past, rows, family, length, logits, keep):  # the walk's step; the parents' keys and values:
        past = [None if kv is None else (kv[0][..., rows], kv[1][..., rows]) for kv in past]  # views of their batch's
        return block_step(self, past, family, length, logits, keep)

    def heads(self, b: int) -> Heads:
        heads = self.prepared.heads[b]
        assert heads is not None  # a block whose keys are kept is read
        return heads

    def embed(self, tokens, length):  # -> [n_embd, n] (take: a C-ordered copy; [:, tokens] is not)
        x = np.take(self.prepared.embed[length - 1], tokens, axis=1)
        if self.hook is not None:  # (arguments are made only when they are wanted)
            params, at = self.model.params, self.named[-1]
            at("hook_embed", params["wte"][tokens].T)
            at("hook_pos_embed", np.broadcast_to(params["wpe"][length - 1][:, None], x.shape))
        return x

    def record(self, b, name, value):
        if self.hook is not None:
            self.named[-1 if b is None else b](name, value)

    def norm(self, x, params, b, name):
        return norm_columns(x, params, self.named[-1 if b is None else b], name)

    def looked_up(self, b):
        return self.heads(b).b is None

    def look_up(self, b, x, tokens, length):  # -> [rows, n]
        qkv = np.take(self.heads(b).w[length - 1], tokens, axis=1)
        if "ln_1" in self.model.params["blocks"][b]:
            _normalized(x, self.named[b], "ln1")
        return qkv

    def c_attn(self, b, h):  # [n_embd, n] -> [rows, n]
        heads = self.heads(b)
        return linear_columns(h, heads.w, heads.b)

    def extend(self, b, kv, qkv, family, length, keep):
        split = len(kv[0][0])  # rows of q, and of k
        return extend(self.prepared.room, b, kv, (qkv[split:2 * split], qkv[2 * split:]), family, length, keep)

    def attention(self, b, qkv, seen):
        return _attention(self.model.params["blocks"][b], self.heads(b), qkv, seen, self.model.n_head, self.named[b])

    def project(self, b, z):  # [n_embd, n] -> [n_embd, n]
        return linear_columns(z, **self.model.params["blocks"][b]["attn"]["c_proj"])

    def silent(self, b):
        return self.quiet[b]

    def linear(self, x, b, name):
        return linear_columns(x, **self.model.params["blocks"][b]["mlp"][name])

    def gelu(self, x):
        return gelu(x)

    def add(self, x, y):  # in place when no hook may hold x (it is the step's own)
        return x + y if self.hook is not None else np.add(x, y, out=x)

    def bias(self, x, bias):
        return self.add(x, bias[:, None])

    def unembed(self, x):  # [n_embd, n] -> [n, n_vocab], tied unembedding (a view of [n_vocab, n])
        out = matmul(self.prepared.unembed, x).T
        at = self.named[-1]
        at("logits", out, (0, 1))
        if at.wants("probs"):
            at("probs", softmax(out), (0, 1))
        return out


def linear_columns(x, w, b):  # [n_in, n] -> [n_out, n]: forward's linear on columns, w.T @ x + b
    out = matmul(w.T, x)
    if b.any():  # hand-wired biases are mostly zero
        out += b[:, None]
    return out


def norm_columns(x, params, at=_ignore, name=""):  # [n_embd, n] -> [n_embd, n]: forward's layer_norm over each column
    _normalized(x, at, name)
    return layer_norm(x, params["g"][:, None], params["b"][:, None], axis=0)


def _normalized(x, at, name):  # {name}.hook_normalized: the columns normalised, before the gain and bias (as forward's)
    if at.wants(f"{name}.hook_normalized"):
        at(f"{name}.hook_normalized", layer_norm(x, 1.0, 0.0, axis=0))


def extend(room, block: int, kv: tuple, own: tuple, family: Family, length: int, keep: bool):
    """The keys and values each child sees ([length, rows, n] for each part of ``kv``, the parents' [room, rows, c]:
    its parent's, then its own, ``own`` [rows, n]), and the children's past (when ``keep``). A parent's past has
    room for n_ctx positions: an only child writes its own into its parent's room, and the two share it (no copy);
    several siblings each get a copy of their parent's, in the ``room(key, shape)`` their length keeps (see
    :class:`Prepared`), with room for their children's."""
    if family.width == 1 and family.uniform and len(kv[0]) >= length:
        for past, new in zip(kv, own):
            past[length - 1] = new
        return tuple(past[:length] for past in kv), kv
    rows = len(kv[0]) if keep else length
    mine = inherit(kv, own, family, length, tuple(room((length, block, part), (rows, len(new), len(family.tokens)))
                                                  for part, new in enumerate(own)))
    return tuple(past[:length] for past in mine), (mine if keep else None)


def inherit(kv, own, family: Family, length: int, children: tuple) -> tuple:
    """Each child's past: its parent's keys and values (positions 0…length-2), then its own, written into
    ``children``. [room, rows, c] x2, [rows, n] x2 -> [room, rows, n] x2 (``children``)."""
    for past, new, child in zip(kv, own, children):
        np.take(past[:length - 1], family.parent, axis=2, out=child[:length - 1], mode="clip")  # unbuffered
        child[length - 1] = new
    return children


def _attention(block, heads: Heads, qkv, seen, n_head, at=_ignore):
    # qkv [rows, n] at the new positions, the keys and values each node sees [L, n_head * qk, n] and
    # [L, n_head * v, n] -> the block's attention output [n_embd, n]
    n = qkv.shape[1]
    n_embd = len(heads.proj[0])
    if at.hook is not None:  # nothing is skipped: qk and v are d_head
        for i, name in enumerate(("hook_q", "hook_k", "hook_v")):
            at(f"attn.{name}", qkv[i * n_embd:(i + 1) * n_embd].reshape(n_head, n_embd // n_head, n))
    pattern = attention_pattern(heads, qkv, seen[0], n_head, at)  # [L, head, n]
    z = attention_values(heads, pattern, seen[1])  # [head, v, n]
    at("attn.hook_z", z)
    out = linear_columns(z.reshape(-1, n), heads.proj, block["attn"]["c_proj"]["b"])  # [n_embd, n]
    at("hook_attn_out", out)
    return out


def attention_pattern(heads: Heads, qkv, keys, n_head, at=_ignore):
    # qkv [rows, n] at the new positions, the keys each node sees [L, n_head * qk, n] -> the pattern [L, head, n]
    n, length, split = qkv.shape[1], len(keys), n_head * heads.qk
    q = qkv[:split].reshape(n_head, heads.qk, n)  # [head, qk, n]
    scores = np.einsum("hdn,lhdn->lhn", q, keys.reshape(length, n_head, heads.qk, n))  # [L, head, n]
    scores /= np.sqrt(len(heads.proj[0]) // n_head)
    for name in ("attn.scores_before_mask", "attn.hook_attn_scores"):  # the mask hides nothing here
        if at.wants(name):
            at(name, scores.copy(), (2, 1, 0))
    pattern = softmax(scores, out=scores, axis=0)  # [L, head, n]
    at("attn.hook_pattern", pattern, (2, 1, 0))
    return pattern


def attention_values(heads: Heads, pattern, values):  # [L, head, n], [L, head * v, n] -> z [head, v, n]
    length, n_head, n = pattern.shape
    return np.einsum("lhn,lhdn->hdn", pattern, values.reshape(length, n_head, heads.v, n))
