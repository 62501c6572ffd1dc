"""Cases: sets of contexts evaluated at once, in the certified arithmetic, with the walk's one block step.

A *case* of length L is a set of tokens at each position ([L, n_vocab] bool): it stands for every context whose
token at each position is one of its set's. Its embedding at a position is an interval, the hull of the rows of wte
for the set plus the position's wpe (:meth:`Cases.embed`); from there on the step is the certified arithmetic's
(:class:`handwired.engine.arithmetic.certified.Certified`), whose every bound holds for every real value the interval
holds, so each logit's bound holds for every context of the case. Block 0's q, k and v come from c_attn on that
interval, not from the walk's table of single tokens (a case's token is not one). A case with one token at every
position is one context, its bounds a little wider than the certified walk's (block 0 computed, not looked up).

A case's keys may be far apart (a set of tokens whose keys grow with the token), where the certified walk's bound on
attention, made for the narrow intervals of single contexts, gives up. So a case's attention is also bounded key by
key (:meth:`Cases.box_attention`): each score's bounds from its q's and k's intervals (:func:`score_bounds`), each
weight's from the scores' (:func:`weight_bounds`), and the output from the weights' bounds and the values' intervals
(:func:`value_bounds`), every rounding bounded as in :mod:`handwired.engine.arithmetic.interval`; the output is the
intersection of the two bounds (:func:`intersect`).

:func:`evaluate` runs a batch of cases of one length through :func:`~handwired.engine.block_step.block_step` one
position at a time, each case its own node (the first position's nodes siblings of the empty prefix, every later
one an only child), so a case's keys and values at earlier positions are its own and its logits come out packed
mid | rad [n, 2*n_vocab] as the certified walk's do.
"""

import numpy as np

from handwired.engine.arithmetic import floats as floating
from handwired.engine.arithmetic import interval as iv
from handwired.engine.arithmetic.certified import Certified, Proving, _layer
from handwired.engine.walk import Family
from handwired.weightfile import Model

CHUNK = 1024  # cases evaluated together at most


def prepare(model: Model) -> Proving:
    """The certified lookups of ``model`` with no table for block 0 (every block's q, k and v from c_attn): what
    :class:`Cases` evaluates with. Made once per model and check."""
    params, h = model.params, model.n_head
    heads = [None if floating.silent(block["attn"]) else floating._heads(block, None, h, False, True)
             for block in params["blocks"]]
    floats = floating.Prepared(params, heads)
    layers = [None if each is None else _layer(block["attn"], each, h, False)
              for block, each in zip(params["blocks"], heads)]
    mlps = [None if "mlp" not in block or floating.silent(block["mlp"]) else
            {name: iv.Weight(**block["mlp"][name]) for name in ("c_fc", "c_proj")} for block in params["blocks"]]
    unembed = iv.Weight(params["wte"].T, np.zeros(len(params["wte"])))
    return Proving(floats, np.zeros(0), layers, None, mlps, unembed)


class Cases(Certified):
    """The certified arithmetic over cases: ``sets`` [n, L, n_vocab] bool, the tokens each case may hold at each
    position; its embedding at a position is the hull of its set's rows of wte, plus wpe."""

    def __init__(self, model: Model, proving: Proving, sets: np.ndarray):
        super().__init__(model, proving)
        self.sets = sets
        self.radii: dict[int, list[np.ndarray]] = {}  # per block, each position's q, k and v radii [rows, n]

    def embed(self, tokens, length):  # -> interval [n_embd, n]: every context's embedding at position length-1
        return hull(self.model.params["wte"], self.model.params["wpe"][length - 1], self.sets[:, length - 1])

    def c_attn(self, b, h):  # the certified walk's, and each row's own radius kept for the attention's box
        qkv, stats = super().c_attn(b, h)
        layer = self.heads(b)[1]
        assert layer.c_attn is not None  # (cases compute every block's c_attn)
        self.radii.setdefault(b, []).append(iv.columns_radius(h, layer.c_attn, mid=qkv))  # [rows, n]
        return qkv, stats

    def attention(self, b, qkv, seen):  # the certified walk's bound, narrowed by the box (box_attention)
        return intersect(super().attention(b, qkv, seen), self.box_attention(b, qkv[0], seen))

    def box_attention(self, b, qkv, seen):  # -> interval [n_embd, n]: the attention's output from each score's
        # bounds (score_bounds), each weight's (weight_bounds) and each value's (value_bounds)
        (heads, layer), h, n = self.heads(b), self.n_head, qkv.shape[1]
        split, length = h * heads.qk, len(seen[0])
        radii = np.stack(self.radii[b][:length])  # [L, rows, n]: each key's and value's own
        q = qkv[:split].reshape(h, heads.qk, n), radii[-1, :split].reshape(h, heads.qk, n)
        keys = (seen[0].reshape(length, h, heads.qk, n), radii[:, split:2 * split].reshape(length, h, heads.qk, n))
        values = (seen[1].reshape(length, h, heads.v, n), radii[:, 2 * split:].reshape(length, h, heads.v, n))
        lo, hi = score_bounds(q, keys, self.model.n_embd // h)
        weights = weight_bounds(lo, hi)
        best = np.argmax(weights[1], axis=0)  # [head, n]: the reference, the value of the key most weighed
        reference = np.take_along_axis(values[0], best[None, :, None, :], axis=0)[0]  # [head, v, n]
        low, high = value_bounds(weights, values, reference)
        z = iv.hull(low * 0.5 + high * 0.5, low, high)
        z = z[0].reshape(-1, n), z[1].reshape(-1, n)
        mid = floating.linear_columns(z[0], heads.proj, self.model.params["blocks"][b]["attn"]["c_proj"]["b"])
        return mid, iv.columns_radius(z, layer.c_proj, mid=mid)


def hull(wte: np.ndarray, wpe: np.ndarray, sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[n_vocab, n_embd], [n_embd], [n, n_vocab] bool (each row at least one token) -> the interval [n_embd, n] that
    holds wte[t] + wpe for every t of each set. With lo ≤ wte[t] ≤ hi per dimension (exact: min and max round
    nothing), the mid c + wpe, c = (lo + hi) / 2, is within (hi - lo) / 2 of wte[t] + wpe plus c's rounding (u·|c|)
    and the sum's (u·|mid|). Each distinct set is bounded once (a case's sets at a position are few)."""
    packed = np.packbits(sets, axis=1)  # [n, ⌈n_vocab / 8⌉]: a set's key
    keys = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, which = np.unique(keys, return_index=True, return_inverse=True)
    distinct = sets[first][:, :, None]  # [m, n_vocab, 1]
    lo = np.where(distinct, wte[None], np.inf).min(axis=1)  # [m, n_embd]
    hi = np.where(distinct, wte[None], -np.inf).max(axis=1)
    centre = (lo + hi) * 0.5
    mid = centre + wpe
    rad = (hi - lo) * 0.5
    rad += np.abs(centre) * iv.U
    rad += np.abs(mid) * iv.U
    rad = iv.unbounded_where(~np.isfinite(mid), iv.up(rad, 4))
    which = which.ravel()  # (numpy 2.0's inverse kept the keys' shape)
    return np.ascontiguousarray(mid[which].T), np.ascontiguousarray(rad[which].T)


def evaluate(model: Model, sets: np.ndarray, proving: Proving | None = None) -> np.ndarray:
    """[n, L, n_vocab] bool, the cases of one length -> their next-token logits, packed mid | rad [n, 2*n_vocab]:
    every context of case i has each real logit within rad of mid (an infinite or NaN radius bounds nothing)."""
    proving = prepare(model) if proving is None else proving
    out = []
    with np.errstate(invalid="ignore", over="ignore"):  # an unbounded radius (inf, NaN) is never proved
        for start in range(0, len(sets), CHUNK):
            out.append(_evaluate(model, sets[start:start + CHUNK], proving))
    return np.concatenate(out) if out else np.zeros((0, 2 * model.n_vocab))


def _evaluate(model: Model, sets: np.ndarray, proving: Proving) -> np.ndarray:
    n, length = sets.shape[:2]
    at = Cases(model, proving, sets)
    past, ids = at.root(), np.arange(n)
    logits = None
    for position in range(1, length + 1):
        family = Family(ids, np.zeros(n, dtype=np.intp), None, 1, n) if position == 1 else Family(ids, ids, None, n, 1)
        logits, past = at.step(past, slice(0, family.c), family, position, position == length, position < length)
    assert logits is not None
    return logits


def intersect(a, b):  # two intervals [...] holding the same real value -> one inside both (a NaN bound: the other)
    with np.errstate(invalid="ignore"):
        lo = np.fmax(iv.lower(a[0] - a[1]), iv.lower(b[0] - b[1]))
        hi = np.fmin(iv.upper(a[0] + a[1]), iv.upper(b[0] + b[1]))
    mid = lo * 0.5 + hi * 0.5
    return iv.hull(mid, lo, hi)


def score_bounds(q, keys, d):  # q (mid, rad) [head, qk, n], keys (mid, rad) [L, head, qk, n], d_head -> the scores'
    # bounds lo, hi [L, head, n]: s = q·k/√d, every real q and k of their intervals. The dot product's rounding
    # (γ_qk·Σ|q̃_d·k̃_d|) and the radii's reach (Σ |q̃|·r_k + r_q·(|k̃| + r_k)), then the division by fl(√d), within
    # u·√d of √d, and its own rounding
    (qm, qr), (km, kr) = q, keys
    dot = np.einsum("hdn,lhdn->lhn", qm, km)
    reach = np.einsum("hdn,lhdn->lhn", np.abs(qm), np.abs(km)) * iv.gamma(qm.shape[1])
    reach += np.einsum("hdn,lhdn->lhn", np.abs(qm), kr)
    reach += np.einsum("hdn,lhdn->lhn", qr, np.abs(km) + kr)
    root = np.sqrt(d)
    s = dot / root
    err = iv.up(reach / (root * (1 - 2 * iv.U)) + np.abs(s) * (4 * iv.U), 2 * qm.shape[1] + 8)
    return iv.lower(s - err), iv.upper(s + err)


def weight_bounds(lo, hi):  # scores' bounds [L, head, n] -> each weight's bounds [L, head, n], within [0, 1]:
    # p_j = 1 / (1 + Σ_{k≠j} e^{s_k - s_j}), largest with s_j at hi_j and every other at lo_k, smallest the other way
    length = len(lo)
    itself = np.arange(length), np.arange(length)  # [j, j]: each weight's own term, left out of its sums
    with np.errstate(over="ignore", invalid="ignore"):  # (in place: these are the proof's largest arrays)
        below = iv.lower(lo[None] - hi[:, None])  # [j, k, head, n]: then e^ of it, under e^{lo_k - hi_j}
        np.exp(below, out=below)
        below /= iv.EXP_HIGH
        below[itself] = 0.0
        above = iv.upper(hi[None] - lo[:, None])
        np.exp(above, out=above)
        above *= iv.EXP_HIGH
        above += iv.TINY
        above[itself] = 0.0
        least = below.sum(axis=1) * (1 - iv.gamma(length))  # [j, head, n]; a subnormal exp (error 2^-1075, not
        least = np.maximum(least - iv.TINY, 0.0)  # relative) covered
        most = above.sum(axis=1) * (1 + iv.gamma(length)) + iv.TINY
        upper = iv.upper(1 / iv.lower(1 + least), 1)
        lower = iv.lower(1 / iv.upper(1 + most), 1)
    upper = np.where(np.isnan(upper), 1.0, np.minimum(upper, 1.0))
    lower = np.where(np.isnan(lower), 0.0, np.maximum(lower, 0.0))
    return lower, upper


def value_bounds(weights, values, reference):  # weights' bounds [L, head, n] each, values (mid, rad) [L, head, v,
    # n], a reference [head, v, n] -> z = Σ p_l·v_l's bounds [head, v, n]: z - c = Σ p_l·(v_l - c) (the weights sum
    # to 1), each term p_l·(v_l - c) between its ends' products; the sums of each sign bounded apart
    (least, most), (vm, vr) = weights, values
    least, most = least[:, :, None], most[:, :, None]
    top = iv.upper(iv.upper(vm - reference[None]) + vr)  # [L, head, v, n]: above v_l - c
    bottom = iv.lower(iv.lower(vm - reference[None]) - vr)  # below it
    scale, grow = 1 + iv.gamma(len(vm) + 2), 1 - iv.gamma(len(vm) + 2)
    with np.errstate(invalid="ignore"):
        up = ((most * np.maximum(top, 0)).sum(axis=0) * scale + iv.TINY
              - (least * np.maximum(-top, 0)).sum(axis=0) * grow)
        down = ((least * np.maximum(bottom, 0)).sum(axis=0) * grow
                - (most * np.maximum(-bottom, 0)).sum(axis=0) * scale - iv.TINY)
    return iv.lower(reference + iv.lower(down)), iv.upper(reference + iv.upper(up))
