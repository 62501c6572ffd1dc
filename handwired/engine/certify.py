"""The certified bounds: float64's logits, and beside each a bound on its distance from the logits the same weights
give in exact real arithmetic (:mod:`handwired.engine.arithmetic.interval`).

A context is *proved* when the lower bound of the right token's logit is above the upper bound of every other
token's: then the real-arithmetic model predicts it too, whatever float64 rounded.

Every certified pass is the walk's (:mod:`handwired.engine.walk`) with the certified step
(:func:`~handwired.engine.arithmetic.certified.certified_walk`): a puzzle's domain, every string, and contexts given as
a list (:func:`certified_contexts`: a stream's windows, a sample), walked as the trie of their prefixes. Logits come
packed, ``[..., mid | rad]``; the mids are the float walk's numbers (see :mod:`handwired.engine.arithmetic.certified`).
"""

import numpy as np

from handwired.engine.arithmetic import interval as iv
from handwired.engine.arithmetic.certified import certified_walk
from handwired.engine.walk import Listed
from handwired.weightfile import Model

__all__ = ["certified_contexts", "certified_logits", "certified_walk", "logit_bounds", "outward", "unpack"]


def unpack(packed):  # [..., 2n] -> interval ([..., n], [..., n]) (views)
    n = packed.shape[-1] // 2
    return packed[..., :n], packed[..., n:]


def logit_bounds(logits, radius):  # [..., n_vocab] x2 -> (lower, upper) [..., n_vocab]: the real logits between
    return outward(logits - radius, logits + radius)


def outward(low, high):  # float64 sums mid - rad, mid + rad [...] (or extremes of them) -> below and above their
    # real values: each rounded outward (an infinite end stays as it is: -inf is below everything)
    with np.errstate(invalid="ignore"):
        return iv.lower(low), np.where(high == -np.inf, high, iv.upper(high))


def certified_contexts(model: Model, contexts: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """[n, L] arrays of contexts (a length each, repeats allowed) -> (logits, radius) [n, n_vocab] each: float64's
    next-token logits and a bound on their distance from the real-arithmetic ones, from one certified walk of the
    trie of their prefixes (each distinct prefix one new position per block)."""
    given = [np.asarray(batch) for batch in contexts]
    shape = Listed(given, model.n_vocab)
    judged: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}  # by length, in vocab order: prefixes, logits
    for visit in certified_walk(model, shape):
        if visit.judged.any() and visit.logits is not None:
            judged.setdefault(visit.prefixes.shape[1], []).append((visit.prefixes[visit.judged],
                                                                   visit.logits[visit.judged]))
    out = []
    for batch, index in zip(given, shape.index):
        if len(batch) == 0:
            out.append((np.zeros((0, model.n_vocab)), np.zeros((0, model.n_vocab))))
            continue
        prefixes, packed = (np.concatenate(part) for part in zip(*judged[batch.shape[1]]))
        if not np.array_equal(prefixes[index], batch):  # each context's own logits, whatever order the walk took
            raise AssertionError("the certified walk judged other contexts than those given")
        out.append(unpack(packed[index]))
    return out


def certified_logits(model: Model, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[n, n_seq] contexts of one length -> (logits, radius) [n, n_vocab] each (see :func:`certified_contexts`)."""
    return certified_contexts(model, [np.asarray(contexts)])[0]
