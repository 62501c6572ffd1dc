"""One attention step on matrices given by hand: scores, softmax weights, the weighted sum.

The calculator behind ``handwired attend``. Queries are rows of ``q``, keys and
values rows of ``k`` and ``v``; the score functions are the three views of
attention people meet first:

* ``scaled-dot``: ``q · k / √d_k``, the transformer's (and forward.py's);
* ``dot``: ``q · k``, the same without the scaling;
* ``gaussian``: ``−(q − k)² / 2`` summed over the dims, whose softmax is
  Nadaraya–Watson kernel regression with a Gaussian kernel.
"""

from dataclasses import dataclass

import numpy as np

from handwired.defaults import ATTENTION_SCORE
from handwired.engine.forward import causal_mask, softmax
from handwired.errors import HandwiredError, bad_value

SCORES = ("scaled-dot", "dot", "gaussian")
# When the best key's score leads the next by this much, the others' weights are below e^-30 ≈ 1e-13:
# softmax has become a hard choice of one key.
SATURATED_GAP = 30.0

@dataclass(frozen=True)
class Attention:
    """Every intermediate of one attention step."""

    score: str  # one of SCORES
    causal: bool
    q: np.ndarray  # [n_q, d_k]
    k: np.ndarray  # [n_k, d_k]
    v: np.ndarray  # [n_k, d_v]
    dot: np.ndarray | None  # [n_q, n_k] q · kᵀ for the dot-product scores, else None
    scores: np.ndarray  # [n_q, n_k] before the mask
    masked: np.ndarray  # [n_q, n_k] scores + M (−∞ after the query when causal)
    weights: np.ndarray  # [n_q, n_k] softmax along each row
    output: np.ndarray  # [n_q, d_v] weights · V

    def leads(self) -> np.ndarray:  # [n_q] how far each row's best visible score is ahead of its second
        visible = np.sort(np.where(np.isfinite(self.masked), self.masked, -np.inf), axis=-1)  # [n_q, n_k]
        if visible.shape[1] < 2:
            return np.full(visible.shape[0], np.inf)
        return visible[:, -1] - visible[:, -2]  # +inf where a row sees one key only

    @property
    def saturated(self) -> list[int]:
        """Query rows where softmax is a hard choice: the best key leads the next by SATURATED_GAP or more."""
        leads = self.leads()
        return [int(row) for row in np.flatnonzero(np.isfinite(leads) & (leads >= SATURATED_GAP))]


def scores(q: np.ndarray, k: np.ndarray, kind: str) -> np.ndarray:  # [n_q, d], [n_k, d] -> [n_q, n_k]
    if kind == "gaussian":
        return -0.5 * np.sum((q[:, None, :] - k[None, :, :]) ** 2, axis=-1)  # [n_q, n_k, d] -> [n_q, n_k]
    dot = q @ k.T  # [n_q, n_k]
    return dot / np.sqrt(q.shape[-1]) if kind == "scaled-dot" else dot


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, score: str = ATTENTION_SCORE,
           causal: bool = False) -> Attention:
    """softmax(scores(Q, K) + M) · V, keeping every intermediate."""
    if score not in SCORES:
        raise bad_value("score", repr(score), f"expected one of {', '.join(SCORES)}")
    _check_shapes(q, k, v)
    if causal and len(q) > len(k):
        raise HandwiredError(f"{{causal}} with {len(q)} queries and {len(k)} keys: the first queries would see no key; "
                             "a causal mask needs at least as many keys as queries", ("causal",))
    raw = scores(q, k, score)  # [n_q, n_k]
    # forward.py's convention: the queries are the last n_q of the n_k positions.
    mask = causal_mask(len(q), len(k)) if causal else np.zeros(raw.shape)  # [n_q, n_k]
    masked = raw + mask
    weights = softmax(masked)  # [n_q, n_k]
    output = weights @ v  # [n_q, d_v]
    if not (np.isfinite(output).all() and np.isfinite(weights).all()):
        raise HandwiredError("the numbers are too large for float64 (about 1.8e308): the scores or the output "
                             "overflow; give smaller q, k, v")
    return Attention(score, causal, q, k, v, None if score == "gaussian" else q @ k.T, raw, masked, weights, output)


def _check_shapes(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
    if q.shape[1] != k.shape[1]:
        raise HandwiredError(f"q has {q.shape[1]} number(s) per row and k has {k.shape[1]}: "
                             "a query and a key must have the same length to be compared")
    if k.shape[0] != v.shape[0]:
        raise HandwiredError(f"k has {k.shape[0]} row(s) and v has {v.shape[0]}: every key needs exactly one value")


# ---------------------------------------------------------------- reading matrices
