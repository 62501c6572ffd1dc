"""Which contexts a check runs: every context of every length, a random sample of them, and what that costs.

Contexts of one length are numbered in base n_vocab, first token most
significant, so context ``i`` of a length is its digits; the tree evaluation
(:mod:`handwired.engine.tree`) and the judge use the same order. Reports list
contexts shortest first, ties in vocab order (:func:`shortest_first`).
"""

from collections.abc import Callable, Iterator

import numpy as np

from handwired.defaults import MIN_LENGTH, SEED
from handwired.errors import bad_value
from handwired.weightfile import Model

BATCH = 65536  # contexts judged at a time: bounds memory however many there are
MAX_EXHAUSTIVE_SECONDS = 30.0  # an exhaustive check estimated to take longer is refused: a sample instead
MAX_EXHAUSTIVE = 100_000_000  # contexts, a sanity bound whatever the model: even the cheapest takes ~30 s for these
# The cost of an exhaustive check, for the estimate in the refusal (see estimated_seconds).
SECONDS_PER_CHECK, SECONDS_PER_CONTEXT, SECONDS_PER_MULTIPLY_ADD, SECONDS_PER_GELU, SECONDS_PER_SCORE = (
    0.1, 0.3e-6, 0.1e-9, 15e-9, 80e-9
)


def shortest_first(vocab: tuple[str, ...], context: str) -> tuple[int, list[int]]:
    """The order reports list contexts in: shortest first, ties in the order of the vocab."""
    return len(context), [vocab.index(token) for token in context]


def check_min_length(min_length: int, longest: int, what: str) -> None:
    if min_length < 1:
        raise bad_value("min_length", min_length, "expected at least 1")
    if min_length > longest:
        raise bad_value("min_length", min_length, f"longer than {what} ({longest})")


def _lengths(model: Model, min_length: int) -> range:
    check_min_length(min_length, model.n_ctx, "the model's context, n_ctx")
    return range(min_length, model.n_ctx + 1)


def every_length(n_vocab: int, n_ctx: int, min_length: int = MIN_LENGTH) -> int:
    """How many strings of length min_length…n_ctx there are over a vocab of n_vocab tokens."""
    return sum(n_vocab**length for length in range(min_length, n_ctx + 1))


def count_contexts(model: Model, min_length: int = MIN_LENGTH) -> int:
    """How many contexts of length min_length…n_ctx there are over the model's vocab."""
    check_min_length(min_length, model.n_ctx, "the model's context, n_ctx")
    return every_length(model.n_vocab, model.n_ctx, min_length)


def contexts_of(length: int, first: int, n: int, n_vocab: int) -> np.ndarray:
    """Contexts first…first+n-1 of ``length`` in base-n_vocab order: [n, length] token ids (the digits)."""
    place = n_vocab ** np.arange(length - 1, -1, -1, dtype=np.int64)
    index = np.arange(first, first + n, dtype=np.int64)
    return ((index[:, None] // place) % n_vocab).astype(np.min_scalar_type(n_vocab))


def exhaustive_contexts(model: Model, min_length: int = MIN_LENGTH) -> Iterator[np.ndarray]:
    """Every context of length min_length…n_ctx, shortest first, in vocab order, BATCH at a time."""
    for length in _lengths(model, min_length):
        count = model.n_vocab**length
        for first in range(0, count, BATCH):
            yield contexts_of(length, first, min(BATCH, count - first), model.n_vocab)


def estimated_seconds(model: Model, contexts: int) -> float:
    """Roughly how long an exhaustive check of ``contexts`` takes on a 2-core machine.

    The tree computes one new position per context and block (handwired.engine.tree):
    a cost per context (judging, bookkeeping), per multiply-add, per GELU, and
    per score, which the n_vocab siblings of a parent compute together.
    Fitted to benchmarks/bench_exhaustive.py on a quiet 2-core machine.
    """
    n, n_keys = model.n_embd, model.n_ctx + model.n_vocab
    per_context = SECONDS_PER_CONTEXT
    for i, block in enumerate(model.params["blocks"]):
        hidden = block["mlp"]["c_fc"]["w"].shape[1] if "mlp" in block else 0
        multiply_adds = (n * n if i == 0 else 4 * n * n) + 2 * n * hidden + 2 * n * n_keys  # block 0: q, k, v looked up
        per_context += multiply_adds * SECONDS_PER_MULTIPLY_ADD + hidden * SECONDS_PER_GELU
        per_context += n_keys * model.n_head * SECONDS_PER_SCORE / model.n_vocab
    return SECONDS_PER_CHECK + contexts * per_context


def duration(seconds: float) -> str:
    """``3 seconds``, ``2 minutes``, ``5 hours``: a time estimate as people say it."""
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= 1.5 * size:
            return f"{round(seconds / size):,} {unit}s"
    whole = max(1, round(seconds))
    return f"{whole} second{'s' * (whole != 1)}"


MAX_SEED = 2**64  # seeds are whole numbers: numpy refuses a negative one, and this bounds what reports print


def random_contexts(model: Model, sample: int, seed: int = SEED,
                    min_length: int = MIN_LENGTH) -> Callable[[], Iterator[np.ndarray]]:
    """``sample`` contexts drawn uniformly (with replacement) from :func:`exhaustive_contexts`'s set, shortest first.

    Returns a function that yields the same batches each time it is called.
    """
    if sample < 1:
        raise bad_value("sample", sample, "expected at least 1 context")
    if not 0 <= seed < MAX_SEED:
        raise bad_value("seed", seed, f"expected a whole number from 0 to {MAX_SEED - 1:,}")
    lengths = np.array(_lengths(model, min_length))
    # Weight each length by how many contexts it has, so every context is equally likely.
    weights = np.array([float(model.n_vocab) ** (length - lengths[-1]) for length in lengths])
    rng = np.random.default_rng(seed)
    per_length = rng.multinomial(sample, weights / weights.sum())
    dtype = np.min_scalar_type(model.n_vocab)

    def batches() -> Iterator[np.ndarray]:
        batch_rng = np.random.default_rng([seed, 1])
        for length, count in zip(lengths, per_length):
            for start in range(0, count, BATCH):
                yield batch_rng.integers(0, model.n_vocab, (min(BATCH, count - start), length)).astype(dtype)

    return batches
