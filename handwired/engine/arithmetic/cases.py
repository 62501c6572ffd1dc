"""Cases: sets of contexts evaluated at once, in the certified arithmetic, with the walk's one block step.

A *case* of length L is a set of tokens at each position ([L, n_vocab] bool): it stands for every context whose
token at each position is one of its set's. Its embedding at a position is an interval, the hull of the rows of wte
for the set plus the position's wpe (:meth:`Cases.embed`); from there on the step is the certified arithmetic's
(:class:`handwired.engine.arithmetic.certified.Certified`), whose every bound holds for every real value the interval
holds, so each logit's bound holds for every context of the case. Block 0's q, k and v come from c_attn on that
interval, not from the walk's table of single tokens (a case's token is not one). A case with one token at every
position is one context, its bounds a little wider than the certified walk's (block 0 computed, not looked up).

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

    def embed(self, tokens, length):  # -> interval [n_embd, n]: every context's embedding at position length-1
        return hull(self.model.params["wte"], self.model.params["wpe"][length - 1], self.sets[:, length - 1])


def hull(wte: np.ndarray, wpe: np.ndarray, sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[n_vocab, n_embd], [n_embd], [n, n_vocab] bool (each row at least one token) -> the interval [n_embd, n] that
    holds wte[t] + wpe for every t of each set. With lo ≤ wte[t] ≤ hi per dimension (exact: min and max round
    nothing), the mid c + wpe, c = (lo + hi) / 2, is within (hi - lo) / 2 of wte[t] + wpe plus c's rounding (u·|c|)
    and the sum's (u·|mid|)."""
    rows = np.where(sets[:, :, None], wte[None], np.inf)  # [n, n_vocab, n_embd]
    lo = rows.min(axis=1)
    rows = np.where(sets[:, :, None], wte[None], -np.inf)
    hi = rows.max(axis=1)  # [n, n_embd]
    centre = (lo + hi) * 0.5
    mid = centre + wpe
    rad = (hi - lo) * 0.5
    rad += np.abs(centre) * iv.U
    rad += np.abs(mid) * iv.U
    rad = iv.unbounded_where(~np.isfinite(mid), iv.up(rad, 4))
    return np.ascontiguousarray(mid.T), np.ascontiguousarray(rad.T)


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
