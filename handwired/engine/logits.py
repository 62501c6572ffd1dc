"""What a row of logits says: the predicted token, a tie, and whether every number is finite."""

import numpy as np

from handwired.errors import HandwiredError
from handwired.weightfile import Model


def top_token(logits: np.ndarray) -> tuple[int, bool]:
    """The predicted token id (the first on a tie, as argmax picks) and whether it is tied."""
    best = int(np.argmax(logits))
    return best, int(np.sum(logits == logits[best])) > 1


def gaps(logits: np.ndarray) -> np.ndarray:  # [..., n_vocab] -> [..., n_vocab]
    """Each token's logit minus the highest logit among the other tokens: the top token's lead (> 0 unless tied),
    every other token's distance below the top (< 0). A vocab of one token has nothing to compare: +inf."""
    if logits.shape[-1] < 2:
        return np.full(logits.shape, np.inf)
    top2 = -np.partition(-logits, 1, axis=-1)[..., :2]  # [..., 2]: the highest, the second highest
    best, second = top2[..., :1], top2[..., 1:]
    return logits - np.where(logits == best, second, best)  # the top token is compared with the runner-up


def raise_not_finite(model: Model, what: str) -> None:
    raise HandwiredError(f"{model.source}: {what}: the weights are too large for float64 (about 1.8e308); "
                         "make the largest ones smaller")


def require_finite(model: Model, contexts: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """The logits, if every one is a number; else one line naming the first context where float64 overflowed."""
    if np.isfinite(logits).all():  # (over every number at once: by rows, a short loop per context)
        return logits
    finite = np.isfinite(logits).all(axis=-1)
    if not finite.all():
        raise_not_finite(model, f"on {model.decode(contexts[int(np.argmin(finite))])!r}, "
                                "the logits are not finite numbers")
    return logits
