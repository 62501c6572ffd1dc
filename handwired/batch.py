"""Next-token logits for many contexts at once, in bounded memory.

``check``, ``complete`` and the benchmark call this; it runs the same
:func:`handwired.forward.forward` as ``predict`` and ``explain``, so a context
gets the same logits however it is evaluated.
"""

from __future__ import annotations

import numpy as np

from handwired.forward import forward
from handwired.weightfile import Model

# Contexts per forward pass. Big enough that numpy's per-call overhead is small,
# small enough that the largest intermediate (a few MB) stays in cache.
CHUNK = 8192


def next_logits(model: Model, contexts: np.ndarray, chunk: int = CHUNK) -> np.ndarray:
    """[n, n_seq] token ids, every context the same length -> [n, n_vocab] logits for the next token."""
    contexts = np.asarray(contexts)
    if contexts.shape[0] == 0:
        return np.zeros((0, model.n_vocab))
    return np.concatenate(
        [
            forward(model.params, contexts[start : start + chunk], model.n_head, last_only=True)
            for start in range(0, contexts.shape[0], chunk)
        ]
    )


def next_logits_distinct(model: Model, contexts: np.ndarray, chunk: int = CHUNK) -> np.ndarray:
    """As :func:`next_logits`, but each distinct context runs through the model once.

    The model is a pure function of its context, so a long stream, whose windows
    repeat, costs one pass per distinct window; every row still gets its logits.
    """
    contexts = np.ascontiguousarray(contexts)
    n, n_seq = contexts.shape
    if n == 0:
        return np.zeros((0, model.n_vocab))
    rows = contexts.view(np.dtype((np.void, contexts.dtype.itemsize * n_seq))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return next_logits(model, contexts[first], chunk)[inverse.ravel()]
