"""Which contexts a check runs: every context of every length, a random sample of them, and what that costs.

Contexts of one length are numbered in base n_vocab, first token most
significant, so context ``i`` of a length is its digits. Reports list
contexts shortest first, ties in vocab order (:func:`shortest_first`), whatever
order a walk judged them in.
"""

import math
from collections.abc import Callable, Iterator

import numpy as np

from handwired import budget
from handwired.defaults import MIN_LENGTH, SEED
from handwired.engine.batch import peak_bytes
from handwired.engine.memory import gigabytes, refuse_large
from handwired.engine.walk import walk_bytes
from handwired.errors import HandwiredError, bad_value
from handwired.judge.kinds.domains import Domain
from handwired.weightfile import Model

BATCH = 65536  # contexts judged at a time: bounds memory however many there are
MAX_EXHAUSTIVE_SECONDS = budget.CHECK_SECONDS  # an exhaustive check estimated to take longer is refused: a sample
MAX_RUN_SECONDS = budget.RUN_SECONDS  # a sample or a stream estimated to take longer is refused, naming what narrows it
MAX_EXHAUSTIVE = 100_000_000  # contexts, a sanity bound whatever the model: even the cheapest takes ~30 s for these
# The cost of an exhaustive check, for the estimate in the refusal (see estimated_seconds).
SECONDS_PER_CHECK, SECONDS_PER_CONTEXT, SECONDS_PER_MULTIPLY_ADD, SECONDS_PER_GELU, SECONDS_PER_SCORE = (
    0.1, 0.3e-6, 0.1e-9, 15e-9, 80e-9
)
SECONDS_PER_WALKED_MULTIPLY_ADD = 0.1e-9  # the walk's products (fitted on a quiet machine; a busy one takes 2-3x)
# The cost of running contexts through the model one by one (see forward_seconds and stream_seconds).
SECONDS_PER_POSITION, SECONDS_PER_BATCH_SCORE, SECONDS_PER_PASS = 50e-9, 2e-9, 1.5e-3
SECONDS_PER_WINDOW, SECONDS_PER_WINDOW_TOKEN = 0.7e-6, 40e-9  # a stream's window: made, then compared with the others


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

    The walk computes one new position per context and block (handwired.engine.walk):
    a cost per context (judging, bookkeeping), per multiply-add, per GELU, and
    per score. Fitted to benchmarks/bench_exhaustive.py on a quiet 2-core machine,
    on the prefix tree that evaluated every string before the walk (whose siblings
    shared their scores): the walk, cut by slot and in parts, takes no longer.
    """
    n, n_keys = model.n_embd, model.n_ctx + model.n_vocab
    per_context = SECONDS_PER_CONTEXT
    for i, hidden in enumerate(model.hidden):
        multiply_adds = (n * n if i == 0 else 4 * n * n) + 2 * n * hidden + 2 * n * n_keys  # block 0: q, k, v looked up
        per_context += multiply_adds * SECONDS_PER_WALKED_MULTIPLY_ADD + hidden * SECONDS_PER_GELU
        per_context += n_keys * model.n_head * SECONDS_PER_SCORE / model.n_vocab
    return SECONDS_PER_CHECK + _times(contexts, per_context)


def forward_seconds(model: Model, contexts: int, length: int, last_only: bool = True) -> float:
    """Roughly how long running ``contexts`` contexts of ``length`` tokens through the model takes (a sample,
    complete; with ``last_only`` False, every position's view as explain draws it).

    Per position: q, k, v and c_proj, the MLP, every query against every key in
    each block but the last, where only the last position's row is needed
    (unless ``last_only`` is False). An upper bound: q, k, v are taken as
    computed, not looked up. Fitted to a 2-core machine like estimated_seconds.
    """
    n, blocks = model.n_embd, model.params["blocks"]
    multiply_adds, gelus, scores = n * model.n_vocab * (1 if last_only else length), 0, 0
    for i, hidden in enumerate(model.hidden):
        rows = 1 if last_only and i == len(blocks) - 1 else length  # positions whose row this block computes
        multiply_adds += length * 3 * n * n + rows * (2 * n * length + n * n + 2 * n * hidden)
        gelus += rows * hidden
        scores += rows * length * model.n_head
    per_context = (SECONDS_PER_CONTEXT + length * SECONDS_PER_POSITION + multiply_adds * SECONDS_PER_MULTIPLY_ADD
                   + gelus * SECONDS_PER_GELU + scores * SECONDS_PER_BATCH_SCORE)
    return _times(contexts, per_context)


def stream_seconds(model: Model, length: int, pattern_length: int) -> float:
    """Roughly how long a stream check of ``length`` tokens takes: every window of n_ctx tokens is made and
    compared with the others, each distinct one (at most the pattern's length of them) and each short
    prefix at the start is run through the model."""
    windows = _times(length, SECONDS_PER_WINDOW + model.n_ctx * SECONDS_PER_WINDOW_TOKEN)
    short = min(model.n_ctx, length) - 1  # prefixes shorter than n_ctx, each run on its own; bounded by the longest
    prefixes = short * (SECONDS_PER_PASS + forward_seconds(model, 1, short))
    return windows + prefixes + forward_seconds(model, min(length, pattern_length), model.n_ctx)


def _times(count: int, seconds: float) -> float:
    """count × seconds, infinite rather than an OverflowError for a count beyond float range."""
    try:
        return float(count) * seconds
    except OverflowError:
        return math.inf


def refuse_every_context(model: Model, instead: str, parameters: tuple[str, ...] = (), min_length: int = MIN_LENGTH,
                         limit: int = MAX_EXHAUSTIVE, max_seconds: float = MAX_EXHAUSTIVE_SECONDS,
                         cost: float = 1.0) -> int:
    """How many contexts of length min_length…n_ctx there are; refused when they would count more than ``limit``
    or take more than about ``max_seconds`` (or what the budget allows instead; estimated_seconds, times ``cost``: a
    certified check's is more), the line ending with what to do ``instead``."""
    total = count_contexts(model, min_length)
    seconds = estimated_seconds(model, total) * cost
    allowed = budget.seconds(max_seconds)
    if total > limit or seconds > allowed:
        reason = (f"more than the {limit:,} handwired will enumerate" if total > limit
                  else f"more than the {duration(allowed)} handwired will spend on one")
        allow = "" if total > limit else budget.more_time(seconds)
        raise HandwiredError(
            f"every context: {model.n_vocab}^{min_length} + … + {model.n_vocab}^{model.n_ctx} = {how_many(total)} "
            f"contexts, about {duration(seconds)} of checking for this model, {reason}; {instead}{allow}",
            (*parameters, *budget.TIME))
    return total


def how_many(count: int) -> str:
    """``1,234,567``, or ``about 3.6e+308`` for a count too long to print (2^1024 has 309 digits)."""
    if count < 10**15:
        return f"{count:,}"
    exponent = int(math.log10(count))
    return f"about {count / 10**exponent:.1f}e+{exponent}"  # int / int: exact, even beyond float range


def duration(seconds: float) -> str:
    """``3 seconds``, ``2 minutes``, ``5 hours``: a time estimate as people say it."""
    if seconds >= 3600 * 10**9:
        return "a billion hours or more"
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= 1.5 * size:
            return f"{round(seconds / size):,} {unit}s"
    whole = max(1, round(seconds))
    return f"{whole} second{'s' * (whole != 1)}"


MAX_SEED = 2**64  # seeds are whole numbers: numpy refuses a negative one, and this bounds what reports print


def _refuse_large_sample(model: Model, sample: int, lengths: np.ndarray, per_length: np.ndarray) -> None:
    """Refuse a sample whose batch evaluation would not fit the budget: the largest of its batches, as drawn."""
    peak = max(peak_bytes(model, min(int(count), BATCH), int(length)) for length, count in zip(lengths, per_length))
    one = peak_bytes(model, 1, model.n_ctx)
    narrowing = "; ask for fewer contexts" if one <= budget.memory() else f"; one context alone takes {gigabytes(one)}"
    refuse_large(f"{{sample}} {sample:,} of up to {model.n_ctx:,} tokens at n_embd {model.n_embd}, {model.n_head} "
                 f"head{'s' * (model.n_head != 1)}", peak, narrowing, ("sample",))


def sample_seconds(model: Model, sample: int, cost: float = 1.0, walked: bool = False,
                   longest: int | None = None) -> float:
    """Roughly how long ``sample`` contexts of up to ``longest`` (n_ctx) tokens take: through forward.py's
    whole-context pass, or with ``walked`` as the trie of their prefixes (the certified check's), every context
    apart as far as its length allows; times ``cost``."""
    if not walked:
        return SECONDS_PER_CHECK + forward_seconds(model, sample, model.n_ctx) * cost
    nodes, level = 0, 1
    for _ in range(longest or model.n_ctx):
        level = min(level * model.n_vocab, sample)  # prefixes of a length: at most the strings, at most the sample
        nodes += level
    return walk_seconds(model, nodes, sample) * cost


def refuse_sample(model: Model, sample: int, seed: int, cost: float = 1.0, longest: int | None = None,
                  walked: bool = False) -> None:
    """Refuse, before anything is drawn, a sample of no context, a seed out of range, or one estimated
    (:func:`sample_seconds`) over the budget; with ``longest``, one whose batches of that length would not fit."""
    if sample < 1:
        raise bad_value("sample", sample, "expected at least 1 context")
    if not 0 <= seed < MAX_SEED:
        raise bad_value("seed", seed, f"expected a whole number from 0 to {MAX_SEED - 1:,}")
    seconds = sample_seconds(model, sample, cost, walked, longest)
    if seconds > budget.seconds(MAX_RUN_SECONDS):
        raise HandwiredError(f"{{sample}} {sample:,}: about {duration(seconds)} of checking for this model, "
                             f"more than the {duration(budget.seconds(MAX_RUN_SECONDS))} handwired will spend on one; "
                             f"ask for fewer contexts{budget.more_time(seconds)}", ("sample", *budget.TIME))
    if longest is not None:
        _refuse_large_sample(model, sample, np.array([longest]), np.array([sample]))


def random_contexts(model: Model, sample: int, seed: int = SEED, min_length: int = MIN_LENGTH,
                    cost: float = 1.0, walked: bool = False) -> Callable[[], Iterator[np.ndarray]]:
    """``sample`` contexts drawn uniformly (with replacement) from :func:`exhaustive_contexts`'s set, shortest first.

    Returns a function that yields the same batches each time it is called.
    """
    refuse_sample(model, sample, seed, cost, walked=walked)
    lengths = np.array(_lengths(model, min_length))
    # Weight each length by how many contexts it has, so every context is equally likely.
    weights = np.array([float(model.n_vocab) ** (length - lengths[-1]) for length in lengths])
    rng = np.random.default_rng(seed)
    per_length = rng.multinomial(sample, weights / weights.sum())
    _refuse_large_sample(model, sample, lengths, per_length)
    dtype = np.min_scalar_type(model.n_vocab)

    def batches() -> Iterator[np.ndarray]:
        batch_rng = np.random.default_rng([seed, 1])
        for length, count in zip(lengths, per_length):
            for start in range(0, count, BATCH):
                yield batch_rng.integers(0, model.n_vocab, (min(BATCH, count - start), length)).astype(dtype)

    return batches


# The cost of walking a domain's trie (handwired.engine.walk), per node and per judged context.
SECONDS_PER_NODE, SECONDS_PER_JUDGED, SECONDS_PER_VOCAB_JUDGED = 0.3e-6, 1.0e-6, 10e-9  # the last: per token
KEPT_PER_CONTEXT = 8 + 1 + 8  # bytes a spread keeps for each context besides its tokens: value, present, predicted


def walk_seconds(model: Model, nodes: int, contexts: int) -> float:
    """Roughly how long walking a trie of ``nodes`` prefixes, ``contexts`` of them judged, takes on a 2-core
    machine: each node one new position per block, as :func:`estimated_seconds` counts it without siblings."""
    n = model.n_embd
    per_node = SECONDS_PER_NODE
    for i, hidden in enumerate(model.hidden):
        multiply_adds = (n * n if i == 0 else 4 * n * n) + 2 * n * hidden + 2 * n * model.n_ctx
        per_node += multiply_adds * SECONDS_PER_WALKED_MULTIPLY_ADD + hidden * SECONDS_PER_GELU
        per_node += (model.n_ctx + 1) * model.n_head * SECONDS_PER_BATCH_SCORE
    per_context = SECONDS_PER_JUDGED + model.n_vocab * (n * SECONDS_PER_WALKED_MULTIPLY_ADD + SECONDS_PER_VOCAB_JUDGED)
    return SECONDS_PER_CHECK + _times(nodes, per_node) + _times(contexts, per_context)


def refuse_large_domain(model: Model, domain: Domain, verb: str = "check", cost: float = 1.0) -> None:
    """Refuse, before anything is evaluated, to walk a domain whose estimate (from its parameters and the model's
    widths, times ``cost``: a certified check's is more) is over the budget's time or memory: one line with
    the figures and what narrows it; TooLargeToWalk when it has too many inputs to walk at all."""
    domain.refuse_walk()
    contexts, nodes = domain.bound()
    refuse_large_walk(model, f"every context of the domain: {how_many(contexts)} contexts ({how_many(nodes)} "
                      "prefixes)", contexts, nodes, domain.longest, verb,
                      "give the statement a smaller domain (fewer or shorter inputs)", cost)


def refuse_large_walk(model: Model, what: str, contexts: int, nodes: int, longest: int, verb: str,
                      instead: str, cost: float = 1.0) -> None:
    """Refuse a walk of ``nodes`` prefixes, ``contexts`` of them judged, whose time (times ``cost``) or memory would
    be over the limits; the line ends with what narrows it, ``instead``."""
    narrow = f"; {instead}"
    seconds = walk_seconds(model, nodes, contexts) * cost
    allowed = budget.seconds(MAX_EXHAUSTIVE_SECONDS)
    if seconds > allowed:
        unproved = seconds / cost  # the float64 check alone, without the certified bounds
        if cost > 1 and unproved <= allowed:
            narrow += f", or judge it in float64 without the proof ({{no_proof}}: about {duration(unproved)})"
        raise HandwiredError(f"{what}: about {duration(seconds)} to {verb} for this model, more than the "
                             f"{duration(allowed)} handwired will spend on one{narrow}{budget.more_time(seconds)}",
                             ("no_proof", *budget.TIME))
    kept = _times(contexts, longest + KEPT_PER_CONTEXT) if verb == "spread" else 0.0
    refuse_large(what, walk_bytes(model, longest) + kept, narrow)
