"""Greedy generation: append the most likely token, again and again, the model always seeing the last n_ctx."""

import numpy as np

from handwired.engine.batch import next_logits
from handwired.errors import bad_value
from handwired.weightfile import Model

MAX_COMPLETE = 100_000


def complete(model: Model, text: str, n: int) -> str:
    """``text`` followed by ``n`` greedily chosen tokens."""
    if n < 0 or n > MAX_COMPLETE:
        raise bad_value("n", n, f"expected a number of tokens from 0 to {MAX_COMPLETE:,}")
    ids = list(model.encode(text))
    for _ in range(n):
        window = np.array(ids[-model.n_ctx :])[None, :]
        ids.append(int(np.argmax(next_logits(model, window)[0])))
    return model.decode(ids)
