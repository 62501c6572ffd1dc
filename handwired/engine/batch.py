"""Next-token logits for many contexts at once, in bounded memory.

``check``, ``complete`` and the benchmark call this; it runs the same
:func:`handwired.forward.forward` as ``predict`` and ``explain``, so a context
gets the same logits however it is evaluated.
"""

import os
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from handwired.engine.forward import forward, qkv_table
from handwired.engine.logits import require_finite
from handwired.weightfile import Model

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

# Positions per forward pass (contexts x their length). Big enough that numpy's
# per-call overhead is small, small enough that the intermediates stay in cache.
CHUNK_POSITIONS = 8192
WORKERS = min(8, os.cpu_count() or 1)  # chunks run side by side


@lru_cache(maxsize=1)
def pool() -> "ThreadPoolExecutor":
    # numpy releases the GIL inside its loops, so chunks run side by side on every core.
    # imported with the first pool: the commands that load this module only to size a pass (a puzzle's check)
    # never make one
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="handwired")


def next_logits(model: Model, contexts: np.ndarray, chunk: int | None = None) -> np.ndarray:
    """[n, n_seq] token ids, every context the same length -> [n, n_vocab] logits for the next token."""
    contexts = np.asarray(contexts)
    if contexts.shape[0] == 0:
        return np.zeros((0, model.n_vocab))
    chunk = chunk or chunk_size(contexts.shape[1])
    starts = range(0, contexts.shape[0], chunk)
    table = qkv_table(model.params) if worth_a_table(model, contexts.size) else None

    def run(start: int) -> np.ndarray:
        return forward(model.params, contexts[start : start + chunk], model.n_head, last_only=True, table=table)

    logits = run(0) if len(starts) == 1 else np.concatenate(list(pool().map(run, starts)))
    return require_finite(model, contexts, logits)


def chunk_size(length: int) -> int:
    """Contexts of ``length`` tokens per forward pass."""
    return max(1, CHUNK_POSITIONS // length)


def worth_a_table(model: Model, positions: int) -> bool:
    # The lookup table pays off only when the batch has more positions than the table has rows
    # (complete, one context at a time, would build it for nothing).
    return bool(model.n_layer) and positions > model.n_vocab * model.n_ctx


def next_logits_distinct(model: Model, contexts: np.ndarray, chunk: int | None = None) -> np.ndarray:
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
