"""What a model may be given from Python: a string, a list of strings of one length, or token ids (one context
[pos] or a batch [batch, pos]), always returned as [batch, pos] ids."""

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

from handwired import budget
from handwired.engine.cost import logits_bytes, trace_bytes
from handwired.engine.memory import refuse_large
from handwired.errors import HandwiredError
from handwired.weightfile import Model


def to_tokens(model: Model, given: object, chunked: bool = False) -> NDArray[np.intp]:  # -> [batch, pos]
    """``given`` as token ids [batch, pos]; one line naming what is wrong otherwise, before any work. ``chunked``: the
    contexts will be run a part at a time (:func:`chunks`), so only their logits must fit the memory budget at once,
    with one context's pass."""
    if isinstance(given, str):
        tokens = model.encode(given, "input")[None, :]
    elif isinstance(given, (list, tuple)) and given and all(isinstance(item, str) for item in given):
        tokens = _same_length([model.encode(text, f"input[{i}]") for i, text in enumerate(given)])
    else:
        tokens = token_ids(model, given)
    if tokens.shape[1] > model.n_ctx:
        raise HandwiredError(f"{{input}}: {tokens.shape[1]} positions, more than the model's n_ctx {model.n_ctx}; "
                             f"give at most {model.n_ctx} tokens (the last {model.n_ctx}: text[-{model.n_ctx}:])",
                             ("input",))
    size = (logits_bytes(model, tokens.size) + trace_bytes(model, tokens.shape[1]) if chunked
            else len(tokens) * trace_bytes(model, tokens.shape[1]))
    refuse_large(f"{{input}}: {len(tokens):,} contexts of {tokens.shape[1]} tokens", size,
                 "; give fewer contexts at a time", ("input",))
    return tokens


def chunks(model: Model, shape: tuple[int, ...]) -> Iterator[tuple[int, int]]:
    """The parts, (start, stop), a batch of ``shape`` [batch, pos] is run in: as many contexts at a time as the memory
    budget holds (less what the whole batch's logits take), at least one."""
    batch, pos = shape
    room = budget.memory() - logits_bytes(model, batch * pos)
    step = max(1, int(room // trace_bytes(model, pos)))
    for start in range(0, batch, step):
        yield start, min(batch, start + step)


def _same_length(rows: list[np.ndarray]) -> np.ndarray:
    lengths = sorted({len(row) for row in rows})
    if len(lengths) > 1:
        raise HandwiredError(f"{{input}}: a batch is contexts of one length; these have lengths "
                             f"{', '.join(map(str, lengths))}: give each length as a batch of its own, or each "
                             "text alone ([model(text) for text in texts]); handwired has no padding token",
                             ("input",))
    return np.stack(rows)


def token_ids(model: Model, given: object, name: str = "input",
              expected: str = "text, a list of texts, or token ids [pos] or [batch, pos]") -> NDArray[np.intp]:
    """``given`` as token ids [batch, pos], each one of the model's; one line naming parameter ``name`` otherwise."""
    where = "{" + name + "}"
    try:
        ids = np.asarray(given)
    except ValueError:  # ragged nested lists
        raise HandwiredError(f"{where}: a batch is contexts of one length; give each length as a batch of its own",
                             (name,)) from None
    if ids.size == 0 or ids.ndim not in (1, 2):
        raise HandwiredError(f"{where}: expected {expected}; found {_described(given, ids)}", (name,))
    if ids.dtype == bool or not np.issubdtype(ids.dtype, np.integer):
        raise HandwiredError(f"{where}: token ids are whole numbers; found {ids.dtype} values", (name,))
    wrong = (ids < 0) | (ids >= model.n_vocab)
    if wrong.any():
        raise HandwiredError(f"{where}: token id {int(ids[wrong][0])} is not in the vocabulary, whose ids are "
                             f"0…{model.n_vocab - 1}", (name,))
    return (ids[None, :] if ids.ndim == 1 else ids).astype(np.intp)


def _described(given: object, ids: np.ndarray) -> str:
    return "nothing" if ids.size == 0 else f"{type(given).__name__} of shape {list(ids.shape)}"
