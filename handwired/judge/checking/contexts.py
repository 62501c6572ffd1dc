"""Which contexts a check runs: every context of every length, a random sample of them, and what that costs.

Contexts of one length are numbered in base n_vocab, first token most
significant, so context ``i`` of a length is its digits. Reports list
contexts shortest first, ties in vocab order (:func:`shortest_first`), whatever
order a walk judged them in.
"""

import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from handwired import budget
from handwired.defaults import MIN_LENGTH, SEED
from handwired.engine.cost import (
    exhaustive_seconds,
    pass_bytes,
    sample_seconds,
    spread_bytes,
    trie_nodes,
    walk_peak_bytes,
    walk_seconds,
)
from handwired.engine.memory import gigabytes, refuse_large
from handwired.engine.parts import workers
from handwired.errors import HandwiredError, bad_value
from handwired.judge.kinds.domains import Domain
from handwired.weightfile import Model

BATCH = 65536  # contexts judged at a time: bounds memory however many there are
MAX_EXHAUSTIVE_SECONDS = budget.CHECK_SECONDS  # an exhaustive check estimated to take longer is refused: a sample
MAX_RUN_SECONDS = budget.RUN_SECONDS  # a sample or a stream estimated to take longer is refused, naming what narrows it
MAX_EXHAUSTIVE = 100_000_000  # contexts, a sanity bound whatever the model: even the cheapest takes ~30 s for these


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


def refuse_every_context(model: Model, instead: str, parameters: tuple[str, ...] = (), min_length: int = MIN_LENGTH,
                         limit: int = MAX_EXHAUSTIVE, max_seconds: float = MAX_EXHAUSTIVE_SECONDS,
                         proof: bool = False) -> int:
    """How many contexts of length min_length…n_ctx there are; refused when they would count more than ``limit``
    or take more than about ``max_seconds`` (or what the budget allows instead; ``proof``: with the certified bounds),
    the line ending with what to do ``instead``."""
    total = count_contexts(model, min_length)
    seconds = exhaustive_seconds(model, total, proof)
    allowed = budget.seconds(max_seconds)
    if total > limit or seconds > allowed:
        reason = (f"more than the {limit:,} handwired will enumerate" if total > limit
                  else f"more than the {duration(allowed)} handwired will spend on one")
        allow = "" if total > limit else budget.more_time(seconds)
        raise HandwiredError(
            f"every context: {model.n_vocab}^{min_length} + … + {model.n_vocab}^{model.n_ctx} = {how_many(total)} "
            f"contexts, about {duration(seconds)} of checking for this model, {reason}; {instead}{allow}",
            (*parameters, *budget.TIME))
    size = workers(model, total, model.n_ctx) * walk_peak_bytes(model, total, total, model.n_ctx, proof, True)
    refuse_large(f"every context: {how_many(total)} contexts at n_embd {model.n_embd}", size, f"; {instead}",
                 parameters)
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


def _refuse_large_sample(model: Model, sample: int, lengths: np.ndarray, per_length: np.ndarray,
                         proof: bool = False) -> None:
    """Refuse a sample whose batch evaluation (``proof``: the certified walk of a batch's trie) would not fit the
    budget: the largest of its batches, as drawn."""

    def peak(count: int, length: int) -> float:
        count = min(int(count), BATCH)
        if proof:
            return walk_peak_bytes(model, trie_nodes(model.n_vocab, count, length), count, length, proof=True)
        return pass_bytes(model, count, length)

    most = max(peak(count, length) for length, count in zip(lengths, per_length))
    one = peak(1, model.n_ctx)
    narrowing = "; ask for fewer contexts" if one <= budget.memory() else f"; one context alone takes {gigabytes(one)}"
    refuse_large(f"{{sample}} {sample:,} of up to {model.n_ctx:,} tokens at n_embd {model.n_embd}, {model.n_head} "
                 f"head{'s' * (model.n_head != 1)}", most, narrowing, ("sample",),
                 "the certified walk's tables and arrays" if proof else "attention scores and activations")


def refuse_sample(model: Model, sample: int, seed: int, proof: bool = False, longest: int | None = None) -> None:
    """Refuse, before anything is drawn, a sample of no context, a seed out of range, or one estimated over the
    budget (``proof``: certified, the walk of their prefixes' trie); with ``longest``, one whose batches of that
    length would not fit."""
    if sample < 1:
        raise bad_value("sample", sample, "expected at least 1 context")
    if not 0 <= seed < MAX_SEED:
        raise bad_value("seed", seed, f"expected a whole number from 0 to {MAX_SEED - 1:,}")
    seconds = sample_seconds(model, sample, proof, longest)
    if seconds > budget.seconds(MAX_RUN_SECONDS):
        raise HandwiredError(f"{{sample}} {sample:,}: about {duration(seconds)} of checking for this model, "
                             f"more than the {duration(budget.seconds(MAX_RUN_SECONDS))} handwired will spend on one; "
                             f"ask for fewer contexts{budget.more_time(seconds)}", ("sample", *budget.TIME))
    if longest is not None:
        _refuse_large_sample(model, sample, np.array([longest]), np.array([sample]), proof)


def random_contexts(model: Model, sample: int, seed: int = SEED, min_length: int = MIN_LENGTH,
                    proof: bool = False) -> Callable[[], Iterator[np.ndarray]]:
    """``sample`` contexts drawn uniformly (with replacement) from :func:`exhaustive_contexts`'s set, shortest first.

    Returns a function that yields the same batches each time it is called.
    """
    refuse_sample(model, sample, seed, proof)
    lengths = np.array(_lengths(model, min_length))
    # Weight each length by how many contexts it has, so every context is equally likely.
    weights = np.array([float(model.n_vocab) ** (length - lengths[-1]) for length in lengths])
    rng = np.random.default_rng(seed)
    per_length = rng.multinomial(sample, weights / weights.sum())
    _refuse_large_sample(model, sample, lengths, per_length, proof)
    dtype = np.min_scalar_type(model.n_vocab)

    def batches() -> Iterator[np.ndarray]:
        batch_rng = np.random.default_rng([seed, 1])
        for length, count in zip(lengths, per_length):
            for start in range(0, count, BATCH):
                yield batch_rng.integers(0, model.n_vocab, (min(BATCH, count - start), length)).astype(dtype)

    return batches


def refuse_large_domain(model: Model, domain: Domain, verb: str = "check", proof: bool = False) -> None:
    """Refuse, before anything is evaluated, to walk a domain whose estimate (from its parameters and the model's
    widths; ``proof``: with the certified bounds) is over the budget's time or memory: one line with
    the figures and what narrows it; TooLargeToWalk when it has too many inputs to walk at all."""
    domain.refuse_walk()
    contexts, nodes = domain.bound()
    refuse_large_walk(model, f"every context of the domain: {how_many(contexts)} contexts ({how_many(nodes)} "
                      "prefixes)", contexts, nodes, domain.longest, verb,
                      "give the statement a smaller domain (fewer or shorter inputs)", proof, widths=domain.widths())


def refuse_large_walk(model: Model, what: str, contexts: int, nodes: int, longest: int, verb: str,
                      instead: str, proof: bool = False, every_string: bool = False,
                      widths: Sequence[int] = ()) -> None:
    """Refuse a walk of ``nodes`` prefixes, ``contexts`` of them judged, whose time (``proof``: with the certified
    bounds) or memory would be over the limits (``every_string``: the trie of every string, walked in parts; else
    ``widths``, a domain's nodes at each length, if known); the line ends with what narrows it, ``instead``."""
    narrow = f"; {instead}"
    unproved = walk_seconds(model, nodes, contexts, longest)  # the float64 check alone, without the certified bounds
    seconds = walk_seconds(model, nodes, contexts, longest, proof)
    allowed = budget.seconds(MAX_EXHAUSTIVE_SECONDS)
    if seconds > allowed:
        if proof and unproved <= allowed:
            narrow += f", or judge it in float64 without the proof ({{no_proof}}: about {duration(unproved)})"
        raise HandwiredError(f"{what}: about {duration(seconds)} to {verb} for this model, more than the "
                             f"{duration(allowed)} handwired will spend on one{narrow}{budget.more_time(seconds)}",
                             ("no_proof", *budget.TIME))
    kept = spread_bytes(contexts, longest) if verb == "spread" else 0.0
    walks = workers(model, contexts, longest) if every_string else 1  # every string's parts walk side by side
    peak = walk_peak_bytes(model, nodes, contexts, longest, proof, every_string, widths)
    refuse_large(what, walks * peak + kept, narrow)
