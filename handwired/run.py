"""Running the model on one context: the trace behind predict and explain, and greedy completion."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from handwired.errors import HandwiredError
from handwired.forward import forward
from handwired.weightfile import Model

MAX_COMPLETE = 100_000


@dataclass(frozen=True)
class Trace:
    """One forward pass over one context, with every intermediate."""

    text: str  # what the user gave
    window: str  # what the model saw: the last n_ctx tokens
    tokens: np.ndarray  # [n_seq] ids of the window
    record: dict[str, np.ndarray]  # hook name -> value, batch axis removed
    causal: bool = True  # False: run without the mask, as bidirectional self-attention

    @property
    def truncated(self) -> bool:
        return len(self.window) < len(self.text)

    @property
    def logits(self) -> np.ndarray:  # [n_seq, n_vocab]
        return self.record["logits"]

    @property
    def probs(self) -> np.ndarray:  # [n_seq, n_vocab]
        return self.record["probs"]


def trace(model: Model, text: str, causal: bool = True) -> Trace:
    """Run the model on the last n_ctx tokens of ``text``, recording every intermediate.

    ``causal=False`` runs the same weights without the causal mask: every
    position attends to every other, later ones included (an encoder).
    """
    ids = model.encode(text)
    window = ids[-model.n_ctx :]
    record: dict[str, np.ndarray] = {}
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, by name, not as a warning
        forward(model.params, window[None, :], model.n_head, record=record, causal=causal)
    if not np.isfinite(record["logits"]).all():
        # Masked scores are −∞ by design; anything else that is not finite is where float64 ran out.
        broken = next(name for name, value in record.items()
                      if np.isnan(value).any() or (np.isinf(value).any() and not name.endswith(".attn.hook_attn_scores")))
        raise_not_finite(model, f"on {model.decode(window)!r}, {broken} is not a finite number")
    return Trace(text, model.decode(window), window, {name: value[0] for name, value in record.items()}, causal)


def raise_not_finite(model: Model, what: str) -> None:
    raise HandwiredError(f"{model.source}: {what}: the weights are too large for float64 (about 1.8e308); "
                         "make the largest ones smaller")


def require_finite(model: Model, contexts: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """The logits, if every one is a number; else one line naming the first context where float64 overflowed."""
    finite = np.isfinite(logits).all(axis=-1)
    if not finite.all():
        raise_not_finite(model, f"on {model.decode(contexts[int(np.argmin(finite))])!r}, the logits are not finite numbers")
    return logits


def top_token(logits: np.ndarray) -> tuple[int, bool]:
    """The predicted token id (the first on a tie, as argmax picks) and whether it is tied."""
    best = int(np.argmax(logits))
    return best, int(np.sum(logits == logits[best])) > 1


def complete(model: Model, text: str, n: int) -> str:
    """Append ``n`` greedily chosen tokens, the model always seeing the last n_ctx tokens."""
    from handwired.batch import next_logits  # here: predict and explain need no batches, and start faster without

    if n < 0 or n > MAX_COMPLETE:
        raise HandwiredError(f"-n {n}: expected a number of tokens from 0 to {MAX_COMPLETE:,}")
    ids = list(model.encode(text))
    for _ in range(n):
        window = np.array(ids[-model.n_ctx :])[None, :]
        ids.append(int(np.argmax(next_logits(model, window)[0])))
    return model.decode(ids)
