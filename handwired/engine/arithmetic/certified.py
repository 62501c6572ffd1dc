"""The certified step of the walk (:mod:`handwired.engine.walk`): the walk's one block step
(:func:`handwired.engine.block_step.block_step`) in intervals (:mod:`handwired.engine.arithmetic.interval`), on the
float step's columns and with its functions (:class:`Certified`, the arithmetic).

Every mid is computed by the float step's own functions, on the same columns (each node's numbers its own, in
batches as large as the float walk's, or smaller where the certified walk's memory needs it): the logits are the
float walk's bits whenever both keep the same attention dimensions. They do on every model whose block 0 has
no c_attn weight on a dimension every embedding leaves at zero: the certified walk skips only the dimensions the
weights and biases make zero (exact zeros in real arithmetic too, in mid and radius), while the float walk skips in
block 0 also those float64 computes as zero for every token and position (a rounding may hide a real value there);
where they differ the certified mids are within their radii of the float walk's. Beside each node's keys and values
in every block it keeps each value's bounds (the norms of v and of its radii per head, [room, 2*n_head, n]) and the
largest bounds of the keys it sees ([4*n_head, n]: k, k's radii, v, v's radii): the few numbers per key
:func:`handwired.engine.arithmetic.interval.attention_radius` reads.
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from handwired.engine import walk as walking
from handwired.engine.arithmetic import floats as floating
from handwired.engine.arithmetic import interval as iv
from handwired.engine.arithmetic.floats import (
    Heads,
    Prepared,
    attention_pattern,
    attention_values,
    extend,
    linear_columns,
    pick,
)
from handwired.engine.block_step import block_step
from handwired.engine.cost import walk_bytes
from handwired.engine.forward import matmul
from handwired.engine.walk import Shape, Visit, batch_nodes, node_sizes
from handwired.weightfile import Model


@dataclass
class Layer:
    """One attention's certified lookups: c_attn's kept columns (a Weight, blocks after 0), the per-head norms of
    their |w| rows [n_in, 3*head] and of their floor [3*head] (``reach``), where each head's q, k and v rows start
    (``starts``), and c_proj's kept rows, |w| summed per head."""

    c_attn: iv.Weight | None
    reach: tuple | None
    starts: np.ndarray
    c_proj: iv.Weight


@dataclass
class Proving:
    """What a certified walk computes once: the float walk's lookups (``floats``, block 0's liveness judged by its
    weights), the embeddings' radii [n_ctx, n_embd, n_vocab], each read attention's :class:`Layer`, block 0's stats
    for every token at each position [n_ctx, 6*head, n_vocab] (see :func:`_stats`), each MLP's Weights and the tied
    unembedding's."""

    floats: Prepared
    embed: np.ndarray
    layers: list[Layer | None]
    first: np.ndarray | None
    mlps: list[dict | None]
    unembed: iv.Weight


def prepare(model: Model) -> Proving:
    """The certified walk's lookups for ``model``."""
    params, h = model.params, model.n_head
    reads = [not floating.silent(block["attn"]) for block in params["blocks"]]
    floats = floating.prepare(model, reads, False, by_weights=True)
    layers = [None if heads is None else _layer(block["attn"], heads, h, b == 0)
              for b, (block, heads) in enumerate(zip(params["blocks"], floats.heads))]
    heads, layer = (floats.heads[0], layers[0]) if layers else (None, None)
    first = _first(model, heads, layer) if heads is not None and layer is not None else None
    mlps = [None if "mlp" not in block or floating.silent(block["mlp"]) else
            {name: iv.Weight(**block["mlp"][name]) for name in ("c_fc", "c_proj")} for block in params["blocks"]]
    unembed = iv.Weight(params["wte"].T, np.zeros(len(params["wte"])))
    return Proving(floats, np.abs(floats.embed) * iv.U, layers, first, mlps, unembed)


def _layer(attn: dict, heads: Heads, n_head: int, first: bool) -> Layer:
    split = n_head * heads.qk
    starts = np.concatenate([np.arange(0, 2 * split, heads.qk), 2 * split + np.arange(0, n_head * heads.v, heads.v)])
    c_proj = iv.Weight(heads.proj, attn["c_proj"]["b"], n_head)
    if first:  # looked up: block 0's stats come from the table
        return Layer(None, None, starts, c_proj)
    weight = iv.Weight(heads.w, heads.b)
    d = max(heads.qk, heads.v)
    reach = iv.group_norms(weight.abs, starts, d, axis=1), iv.group_norms(weight.floor, starts, d)
    return Layer(weight, reach, starts, c_proj)


def _first(model: Model, heads: Heads, layer: Layer) -> np.ndarray:
    """Block 0's stats for every token at each position, [n_ctx, 6*head, n_vocab]: its q, k and v in intervals from
    the embeddings (as whole contexts compute them), their mids the float walk's table's."""
    params = model.params
    block = params["blocks"][0]
    x = iv.embed(params["wte"][:, None, :] + params["wpe"][None, :, :])  # [n_vocab, n_ctx, n_embd]
    if "ln_1" in block:
        x = iv.layer_norm_bounds(x, **block["ln_1"])
    c_attn = block["attn"]["c_attn"]
    _, rad = iv.linear(x, iv.Weight(c_attn["w"], c_attn["b"]), c_attn["b"])  # [n_vocab, n_ctx, 3*n_embd]
    rad = pick(rad, heads.columns, 2).transpose(1, 2, 0)  # [n_ctx, rows, n_vocab]: padding's radius 0
    d = max(heads.qk, heads.v)
    return np.stack([_stats(heads.w[p], iv.group_norms(rad[p], layer.starts, d), layer, heads, model.n_head)
                     for p in range(model.n_ctx)])


def _stats(mid, radii, layer: Layer, heads: Heads, n_head: int):  # q, k and v [rows, n] and the norms of their
    # radii per head [3*head, n] -> [6*head, n]: per head the norms of q and of its radii, then the key's bounds: the
    # norms of k, of k's radii, of v, of v's radii
    norms = iv.group_norms(mid, layer.starts, max(heads.qk, heads.v))  # [3*head, n]
    return np.stack([norms.reshape(3, n_head, -1), radii.reshape(3, n_head, -1)], axis=1).reshape(6 * n_head, -1)


def certified_walk(model: Model, shape: Shape, chunk: int | None = None) -> Iterator[Visit]:
    """:func:`handwired.engine.walk.walk` with :func:`~handwired.engine.block_step.block_step` in
    :class:`Certified`: each visit's logits packed mid | rad [n, 2*n_vocab], in batches of :func:`batch_size`
    nodes."""
    certified = Certified(model, prepare(model))
    return walking.walk(shape, certified.step, certified.root(), chunk or batch_size(model, certified.floats.heads))


def batch_size(model: Model, heads: list) -> int:
    """Nodes per batch: the float walk's, or fewer where the certified walk's would allocate more than the estimate
    made before a check (walk_bytes, the float walk's): per position it keeps each block's kept key and value rows and
    each value's bounds (2*head), per node the keys' largest bounds (4*head), and it evaluates intervals (twice the
    float walk's widest arrays)."""
    longest, h = model.n_ctx, model.n_head
    path, wide = node_sizes(model, longest)  # the float walk's, per node, keys and values of n_embd rows each
    rows = sum(h * (each.qk + each.v + 2) + 4 * h / longest for each in heads if each is not None)
    node = path * rows / (2 * model.n_embd * max(1, model.n_layer)) + 2 * wide
    return max(1, min(batch_nodes(model, longest), int(walk_bytes(model, longest) // node)))


class Certified:
    """The certified arithmetic of :func:`~handwired.engine.block_step.block_step`: every value an interval (mid,
    rad) on the float step's columns, its mid computed by the float step's functions (the float walk's bits where
    both keep the same attention dimensions), its radius by :mod:`handwired.engine.arithmetic.interval`. A node's past
    is, per block, the float step's keys and values, each key's value bounds [room, 2*head, n] and the largest bounds of
    the keys each node sees [4*head, n]. Values the step uses and drops are worked in buffers kept from batch to
    batch."""

    def __init__(self, model: Model, proving: Proving):
        self.model, self.proving, self.floats, self.n_head = model, proving, proving.floats, model.n_head

    def root(self) -> list:  # the empty prefix's past: no keys yet, room for n_ctx
        h, room = self.n_head, self.model.n_ctx
        return [None if heads is None else (np.zeros((room, h * heads.qk, 1)), np.zeros((room, h * heads.v, 1)),
                                            np.zeros((room, 2 * h, 1)), np.zeros((4 * h, 1)))
                for heads in self.floats.heads]

    def step(self, past, rows, family, length, logits, keep):  # the walk's step; the parents' past: views of their
        past = [None if kv is None else (*(part[..., rows] for part in kv[:3]), kv[3][:, rows]) for kv in past]
        return block_step(self, past, family, length, logits, keep)  # batch's

    def scratch(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """An uninitialised array for a value the step uses and drops, its buffer kept for the next batch (a new
        array each time would cost the pages it touches)."""
        return self.floats.room(("scratch", name), shape)

    def heads(self, b: int) -> tuple[Heads, Layer]:
        heads, layer = self.floats.heads[b], self.proving.layers[b]
        assert heads is not None and layer is not None  # a block whose keys are kept is read
        return heads, layer

    def embed(self, tokens, length):  # -> interval [n_embd, n]
        shape = (self.model.n_embd, len(tokens))
        return (np.take(self.floats.embed[length - 1], tokens, axis=1),
                np.take(self.proving.embed[length - 1], tokens, axis=1, out=self.scratch("embed", shape), mode="clip"))

    def record(self, b, name, value):  # nothing is recorded
        pass

    def norm(self, x, params, b, name):  # interval [n_embd, n] -> interval: the float step's LayerNorm per column
        return iv.layer_norm_bounds(x, params["g"][:, None], params["b"][:, None], axis=0)

    def looked_up(self, b):
        return self.heads(b)[0].b is None

    def look_up(self, b, x, tokens, length):  # -> q, k and v [rows, n], and their stats [6*head, n] (_stats)
        first = self.proving.first
        assert first is not None  # block 0, read
        stats = np.take(first[length - 1], tokens, axis=1, mode="clip",  # (with ``out``, "clip" is not buffered;
                        out=self.scratch("stats", (6 * self.n_head, len(tokens))))  # tokens are in range)
        return np.take(self.heads(b)[0].w[length - 1], tokens, axis=1), stats

    def c_attn(self, b, h):  # interval [n_embd, n] -> q, k and v [rows, n], and their stats [6*head, n]
        heads, layer = self.heads(b)
        qkv = linear_columns(h[0], heads.w, heads.b)  # [rows, n]
        return qkv, _stats(qkv, _reach(h, layer), layer, heads, self.n_head)

    def extend(self, b, kv, qkv, family, length, keep):  # -> (the float step's keys and values each child sees, the
        # value bounds of each, the largest bounds of the keys it sees); the children's past
        (qkv, stats), h, heads = qkv, self.n_head, self.heads(b)[0]
        split = h * heads.qk
        seen, mine = extend(self.floats.room, b, kv[:3], (qkv[split:2 * split], qkv[2 * split:], stats[4 * h:]),
                            family, length, keep)
        parents = kv[3] if family.width == 1 and family.uniform else np.take(kv[3], family.parent, axis=1)
        bounds = np.maximum(parents, stats[2 * h:])  # [4*head, n]: the largest each child's keys reach
        return (*seen, bounds), (None if mine is None else (*mine, bounds))

    def attention(self, b, qkv, seen):  # -> interval [n_embd, n]
        return _attention(self, b, qkv, seen)

    def project(self, b, z):  # (a certified walk never resumes)
        raise NotImplementedError

    def silent(self, b):  # a silent MLP adds its bias alone, as the float step does
        return self.proving.mlps[b] is None

    def linear(self, x, b, name):  # interval [n_in, n] -> interval [n_out, n]: an MLP's c_fc or c_proj
        mid = linear_columns(x[0], **self.model.params["blocks"][b]["mlp"][name])
        buffer = "c_fc" if name == "c_fc" else "mlp"
        weight = self.proving.mlps[b]
        assert weight is not None
        return mid, iv.columns_radius(x, weight[name], self.scratch(f"{buffer} size", x[0].shape),
                                      self.scratch(buffer, mid.shape))

    def gelu(self, x):
        return iv.gelu_bounds(x)

    def add(self, x, y):  # in the step's own arrays: x's mid, y's mid for the radius
        return iv.add(x, y, out=(x[0], y[0]))

    def bias(self, x, bias):
        return iv.add(x, (bias[:, None], 0.0))

    def unembed(self, x):  # interval [n_embd, n] -> packed [n, 2*n_vocab], rows: what the judge reads
        n = x[0].shape[1]
        mid = matmul(self.floats.unembed, x[0])  # [n_vocab, n], the float step's tied unembedding
        rad = iv.columns_radius(x, self.proving.unembed, self.scratch("unembed size", x[0].shape),
                                self.scratch("unembed", mid.shape), mid)  # infinite where the sum overflowed
        packed = np.empty((n, 2 * len(mid)))
        packed[:, :len(mid)] = mid.T
        packed[:, len(mid):] = rad.T
        return packed


def _attention(at: Certified, b, q, seen):
    # q, k and v [rows, n] and their stats; the keys and values each node sees, their value bounds and the largest
    # bounds of its keys -> the attention's output, an interval [n_embd, n]
    (qkv, stats), (heads, layer), h = q, at.heads(b), at.n_head
    length, n = len(seen[0]), qkv.shape[1]
    pattern = attention_pattern(heads, qkv, seen[0], h)  # [L, head, n]
    z = attention_values(heads, pattern, seen[1]).reshape(-1, n)  # [head * v, n]
    mixed = np.empty((3, h, n))  # Σ p̃·|v|, Σ p̃·|r_v|, Σ p̃·(1 - p̃)·|v| over the keys
    np.einsum("lhn,lchn->chn", pattern, seen[2].reshape(length, 2, h, n), out=mixed[:2])
    spread = np.subtract(1, pattern, out=at.scratch("spread", pattern.shape))
    spread *= pattern
    np.einsum("lhn,lhn->hn", spread, seen[2][:, :h], out=mixed[2])
    k_big, k_rad, v_big, v_rad = seen[3].reshape(4, h, n)
    zeta = iv.attention_radius(stats[:h], stats[h:2 * h], k_big, k_rad, v_big, v_rad, np.moveaxis(mixed, 0, -1),
                               at.model.n_embd // h, length)  # [head, n]: every kept dimension of z
    proj = layer.c_proj
    size = np.abs(z, out=at.scratch("z", z.shape))  # [head * v, n]: z's own radius is ζ per head, through
    size *= proj.size  # each head's rows of |w|
    rad = np.matmul(proj.abs.T, size, out=at.scratch("c_proj", (at.model.n_embd, n)))  # [n_embd, n]
    heads_rad = at.scratch("c_proj heads", (at.model.n_embd, n))  # one head: a product, not a matmul (5x faster)
    product = np.multiply if h == 1 else np.matmul
    rad += product(proj.grouped.T, zeta, out=heads_rad)
    rad += proj.floor[:, None]
    return linear_columns(z, heads.proj, at.model.params["blocks"][b]["attn"]["c_proj"]["b"]), rad


def _reach(h, layer: Layer):  # interval [n_in, n] -> the norms per head of c_attn's radii [3*head, n], through
    # each head's rows of |w| (‖Σ_i s_i·|w_i|‖ ≤ Σ_i s_i·‖w_i‖), not the radius itself
    assert layer.reach is not None and layer.c_attn is not None  # a block after block 0
    rows, floor = layer.reach
    size = np.abs(h[0])
    size *= layer.c_attn.size
    size += h[1]
    reach = matmul(rows.T, size)  # [3*head, n]
    reach *= 1 + iv.gamma(len(rows) + 6)  # the sums, size's two roundings, this one and the next
    reach += floor[:, None]
    return reach
