"""One context through the model, every intermediate recorded: the trace behind predict, explain and watch."""

from dataclasses import dataclass

import numpy as np

from handwired.engine.forward import forward
from handwired.engine.logits import raise_not_finite
from handwired.engine.memory import refuse_large_trace
from handwired.weightfile import Model


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
    position attends to every other, later ones included (an encoder). A pass
    whose arrays would not fit the budget's memory is refused before it starts.
    """
    ids = model.encode(text)
    window = ids[-model.n_ctx :]
    refuse_large_trace(model, len(window))  # before any array: the recorded [head, n, n] scores grow as n²
    record: dict[str, np.ndarray] = {}
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, by name, not as a warning
        forward(model.params, window[None, :], model.n_head, record=record, causal=causal)
    if not np.isfinite(record["logits"]).all():
        # Masked scores are −∞ by design; anything else that is not finite is where float64 ran out.
        broken = next(name for name, value in record.items()
                      if np.isnan(value).any()
                      or (np.isinf(value).any() and not name.endswith(".attn.hook_attn_scores")))
        raise_not_finite(model, f"on {model.decode(window)!r}, {broken} is not a finite number")
    return Trace(text, model.decode(window), window, {name: value[0] for name, value in record.items()}, causal)
