"""Proving a weight file right: run the model on many contexts and judge every answer.

A *plan* says which contexts to run and how to judge them:

* :func:`stream_plan`: every prefix of a long stream of the repeated pattern,
  each seen through the model's window of ``n_ctx`` tokens and judged against
  the token that really follows it (the published test, at any length);
* :func:`exhaustive_plan`: every context of every length the model can see,
  judged by a :class:`~handwired.rules.Rule`;
* :func:`sample_plan`: random contexts from that same set, for models too big
  to enumerate.

:func:`run` evaluates a plan in batches and returns a :class:`Report`. A
context passes when the best acceptable token's logit is strictly above every
other token's: a tie is not a proof.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from handwired.batch import next_logits_distinct
from handwired.errors import HandwiredError
from handwired.forward import softmax
from handwired.run import require_finite, top_token
from handwired.rules import AMBIGUOUS, DECIDED, OUT_OF_DOMAIN, Judgement, PatternRule, Rule
from handwired.tree import TreeBatch, evaluate_tree
from handwired.weightfile import Model

BATCH = 65536  # contexts judged at a time: bounds memory however many there are
MAX_EXHAUSTIVE_SECONDS = 30.0  # an exhaustive check estimated to take longer is refused: --sample instead
MAX_EXHAUSTIVE = 100_000_000  # contexts, a sanity bound whatever the model: even the cheapest takes ~30 s for these
# The cost of an exhaustive check, for the estimate in the refusal (see estimated_seconds).
SECONDS_PER_CHECK, SECONDS_PER_CONTEXT, SECONDS_PER_MULTIPLY_ADD, SECONDS_PER_GELU, SECONDS_PER_SCORE = (
    0.1, 0.3e-6, 0.1e-9, 15e-9, 80e-9
)
NEAR_MISS = 1.0  # logits: a margin below this means a small edit could flip an answer


@dataclass(frozen=True)
class Batch:
    contexts: np.ndarray  # [n, n_seq] token ids, one length per batch
    judgement: Judgement
    logits: np.ndarray | None = None  # [n, n_vocab] when the plan has evaluated the contexts already


@dataclass(frozen=True)
class Plan:
    description: str  # what is checked, for the report's first line
    rule: str  # how answers are judged
    total: int  # contexts the plan will run
    batches: Callable[[], Iterator[Batch]]


@dataclass(frozen=True)
class Failure:
    context: str
    acceptable: tuple[str, ...]
    predicted: str
    tied: bool  # the predicted token shares the top logit with another
    logits: np.ndarray
    probs: np.ndarray


@dataclass(frozen=True)
class Margin:
    value: float  # best acceptable logit - best other logit
    context: str
    right: str
    wrong: str


@dataclass
class Report:
    description: str
    rule: str
    total: int
    checked: int = 0
    passed: int = 0
    failed: int = 0
    ambiguous: int = 0
    out_of_domain: int = 0
    failures: list[Failure] = field(default_factory=list)  # distinct, shortest first, at most `show`
    margin: Margin | None = None  # the smallest over passing contexts
    interrupted: bool = False

    @property
    def decided(self) -> int:
        return self.passed + self.failed

    @property
    def ok(self) -> bool:
        return self.failed == 0 and not self.interrupted

    @property
    def shortest_failure(self) -> Failure | None:
        return self.failures[0] if self.failures else None

    def near_miss(self, threshold: float = NEAR_MISS) -> bool:
        return self.margin is not None and self.margin.value < threshold


# ---------------------------------------------------------------- plans


def _stream(ids: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Tokens start…stop-1 of ids repeated forever, made only as far as needed."""
    return ids[np.arange(start, stop) % len(ids)]


def _windows(model: Model, ids: np.ndarray, length: int, min_length: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(contexts, next tokens) for every prefix of length >= min_length of the stream, cut to n_ctx."""
    for prefix in range(min_length, min(model.n_ctx, length)):  # the short prefixes at the start
        tokens = _stream(ids, 0, prefix + 1)
        yield tokens[None, :prefix], tokens[prefix:]
    # Then full windows, a batch at a time: prefix length `end` is predicting token `end`.
    for end in range(max(min_length, model.n_ctx), length, BATCH):
        stop = min(end + BATCH, length)
        segment = _stream(ids, end - model.n_ctx, stop)
        yield np.lib.stride_tricks.sliding_window_view(segment[:-1], model.n_ctx), segment[model.n_ctx :]


def stream_plan(model: Model, pattern: str, length: int, min_length: int = 2) -> Plan:
    """Every prefix of ``pattern`` repeated to ``length`` tokens, judged by the token after it."""
    ids = model.encode(pattern, "target").astype(np.min_scalar_type(model.n_vocab))
    if length < 2:
        raise HandwiredError(f"--length {length}: expected at least 2 tokens")
    _check_min_length(min_length, length - 1, "the stream's last prefix")
    total = max(0, length - min_length)

    def batches() -> Iterator[Batch]:
        for contexts, following in _windows(model, ids, length, min_length):
            acceptable = np.zeros((len(following), model.n_vocab), dtype=bool)
            acceptable[np.arange(len(following)), following] = True
            status = np.full(len(following), DECIDED, dtype=np.int8)
            yield Batch(contexts, Judgement(status, acceptable))

    shown = pattern * (1 + 12 // len(pattern))
    return Plan(
        description=f"every prefix of length {min_length}…{length - 1} of {shown[:12]}… ({length:,} tokens), "
        f"each seen through the last {model.n_ctx} tokens",
        rule="the token that follows it in the stream",
        total=total,
        batches=batches,
    )


def pattern_rule(model: Model, pattern: str) -> PatternRule:
    return PatternRule(model.encode(pattern, "target"), model.n_vocab, pattern)


def _check_min_length(min_length: int, longest: int, what: str) -> None:
    if min_length < 1:
        raise HandwiredError(f"--min-length {min_length}: expected at least 1")
    if min_length > longest:
        raise HandwiredError(f"--min-length {min_length}: longer than {what} ({longest})")


def _lengths(model: Model, min_length: int) -> range:
    _check_min_length(min_length, model.n_ctx, "the model's context, n_ctx")
    return range(min_length, model.n_ctx + 1)


def count_contexts(model: Model, min_length: int = 1) -> int:
    return sum(model.n_vocab**length for length in _lengths(model, min_length))


def contexts_of(length: int, first: int, n: int, n_vocab: int) -> np.ndarray:
    """Contexts first…first+n-1 of ``length`` in base-n_vocab order: [n, length] token ids (the digits)."""
    place = n_vocab ** np.arange(length - 1, -1, -1, dtype=np.int64)
    index = np.arange(first, first + n, dtype=np.int64)
    return ((index[:, None] // place) % n_vocab).astype(np.min_scalar_type(n_vocab))


def exhaustive_contexts(model: Model, min_length: int = 1) -> Iterator[np.ndarray]:
    """Every context of length min_length…n_ctx, shortest first, in vocab order, BATCH at a time."""
    for length in _lengths(model, min_length):
        count = model.n_vocab**length
        for first in range(0, count, BATCH):
            yield contexts_of(length, first, min(BATCH, count - first), model.n_vocab)


def estimated_seconds(model: Model, contexts: int) -> float:
    """Roughly how long an exhaustive check of ``contexts`` takes on a 2-core machine.

    The tree computes one new position per context and block (handwired.tree):
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


def _duration(seconds: float) -> str:
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= 1.5 * size:
            return f"{round(seconds / size):,} {unit}s"
    whole = max(1, round(seconds))
    return f"{whole} second{'s' * (whole != 1)}"


def random_contexts(model: Model, n: int, seed: int = 0, min_length: int = 1) -> Callable[[], Iterator[np.ndarray]]:
    """``n`` contexts drawn uniformly (with replacement) from :func:`exhaustive_contexts`'s set, shortest first.

    Returns a function that yields the same batches each time it is called.
    """
    if n < 1:
        raise HandwiredError(f"--sample {n}: expected at least 1 context")
    lengths = np.array(_lengths(model, min_length))
    # Weight each length by how many contexts it has, so every context is equally likely.
    weights = np.array([float(model.n_vocab) ** (length - lengths[-1]) for length in lengths])
    rng = np.random.default_rng(seed)
    per_length = rng.multinomial(n, weights / weights.sum())
    dtype = np.min_scalar_type(model.n_vocab)

    def batches() -> Iterator[np.ndarray]:
        batch_rng = np.random.default_rng([seed, 1])
        for length, count in zip(lengths, per_length):
            for start in range(0, count, BATCH):
                yield batch_rng.integers(0, model.n_vocab, (min(BATCH, count - start), length)).astype(dtype)

    return batches


def exhaustive_plan(model: Model, rule: Rule, min_length: int = 1, limit: int = MAX_EXHAUSTIVE,
                    max_seconds: float = MAX_EXHAUSTIVE_SECONDS) -> Plan:
    """Every context of length min_length…n_ctx over the vocab, evaluated as a tree of shared prefixes.

    Refused when it would take more than about ``max_seconds`` (estimated_seconds) or count more than ``limit``.
    """
    total = count_contexts(model, min_length)
    seconds = estimated_seconds(model, total)
    if total > limit or seconds > max_seconds:
        reason = (f"more than the {limit:,} handwired will enumerate" if total > limit
                  else f"more than the {_duration(max_seconds)} handwired will spend on one")
        raise HandwiredError(
            f"--exhaustive: {model.n_vocab}^{min_length} + … + {model.n_vocab}^{model.n_ctx} = {total:,} contexts, "
            f"about {_duration(seconds)} of checking for this model, {reason}; "
            f"check a random sample instead, e.g. --sample 1000000 --seed 0"
        )

    def judged(runs: list[TreeBatch]) -> Batch:
        runs = sorted(runs, key=lambda run: run.first)  # threads interleave their runs; a batch is in vocab order
        contexts = np.concatenate([contexts_of(r.length, r.first, len(r.logits), model.n_vocab) for r in runs])
        return Batch(contexts, rule.judge(contexts), np.concatenate([r.logits for r in runs]))

    def batches() -> Iterator[Batch]:
        # The tree's batches are small; the rule judges them BATCH at a time, one length at a time.
        pending: dict[int, list[TreeBatch]] = {}
        counts: dict[int, int] = {}
        for evaluated in evaluate_tree(model, min_length):
            pending.setdefault(evaluated.length, []).append(evaluated)
            counts[evaluated.length] = counts.get(evaluated.length, 0) + len(evaluated.logits)
            if counts[evaluated.length] >= BATCH:
                counts[evaluated.length] = 0
                yield judged(pending.pop(evaluated.length))
        for length in sorted(pending):
            yield judged(pending[length])

    return Plan(
        description=f"every context of length {min_length}…{model.n_ctx} over {', '.join(model.vocab)} "
        f"({total:,} contexts)",
        rule=rule.description,
        total=total,
        batches=batches,
    )


def sample_plan(model: Model, rule: Rule, n: int, seed: int = 0, min_length: int = 1) -> Plan:
    """``n`` contexts drawn uniformly (with replacement) from the exhaustive set."""
    draw = random_contexts(model, n, seed, min_length)

    def batches() -> Iterator[Batch]:
        for contexts in draw():
            yield Batch(contexts, rule.judge(contexts))

    return Plan(
        description=f"{n:,} random contexts of length {min_length}…{model.n_ctx} (seed {seed})",
        rule=rule.description,
        total=n,
        batches=batches,
    )


# ---------------------------------------------------------------- running


def run(
    model: Model,
    plan: Plan,
    show: int = 20,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> Report:
    """Evaluate every batch of the plan; keep counts, the ``show`` shortest failures and the margin.

    ``should_stop`` is asked between batches (the CLI sets it on Ctrl-C); the
    report then covers what was checked so far and says it was interrupted.
    """
    report = Report(plan.description, plan.rule, plan.total)
    failures: dict[str, Failure] = {}
    for batch in plan.batches():
        _tally(model, batch, report, failures, show)
        if progress is not None:
            progress(report.checked, plan.total)
        if should_stop():
            report.interrupted = report.checked < plan.total
            break
    report.failures = sorted(failures.values(), key=lambda f: _order(model, f.context))[:show]
    return report


def _order(model: Model, context: str) -> tuple[int, list[int]]:
    # shortest first; ties in the order of the vocab
    return len(context), [model.vocab.index(token) for token in context]


def _tally(model: Model, batch: Batch, report: Report, failures: dict[str, Failure], show: int) -> None:
    contexts, status, acceptable = batch.contexts, batch.judgement.status, batch.judgement.acceptable
    if batch.logits is None:
        logits = next_logits_distinct(model, contexts)  # checked finite there
    else:  # the tree's: a NaN would count as neither passing nor failing
        logits = require_finite(model, contexts, batch.logits)
    best_right = np.where(acceptable, logits, -np.inf).max(axis=1)
    best_wrong = np.where(acceptable, -np.inf, logits).max(axis=1)
    margins = best_right - best_wrong  # +inf when every token is acceptable
    decided = status == DECIDED
    passing = decided & (margins > 0)
    failing = decided & ~(margins > 0)

    report.checked += len(contexts)
    report.passed += int(passing.sum())
    report.failed += int(failing.sum())
    report.ambiguous += int((status == AMBIGUOUS).sum())
    report.out_of_domain += int((status == OUT_OF_DOMAIN).sum())

    if passing.any():
        row = int(np.flatnonzero(passing)[np.argmin(margins[passing])])  # a batch is in vocab order
        context = model.decode(contexts[row])
        # On a tie the shortest context, then the first in vocab order, whatever order the batches come in.
        if math.isfinite(margins[row]) and (
            report.margin is None
            or (margins[row], _order(model, context)) < (report.margin.value, _order(model, report.margin.context))
        ):
            report.margin = Margin(
                value=float(margins[row]),
                context=context,
                right=model.vocab[int(np.argmax(np.where(acceptable[row], logits[row], -np.inf)))],
                wrong=model.vocab[int(np.argmax(np.where(acceptable[row], -np.inf, logits[row])))],
            )
    _keep_failures(model, contexts, logits, acceptable, np.flatnonzero(failing), failures, show)


def _keep_failures(model, contexts, logits, acceptable, rows, failures: dict[str, Failure], show: int) -> None:
    """Merge this batch's failures into ``failures``, keeping the ``show`` shortest distinct contexts."""
    if len(rows) == 0:
        return
    # np.unique sorts rows in vocab order; batches come shortest first.
    distinct, first = np.unique(contexts[rows], axis=0, return_index=True)
    for key, index in zip(distinct[:show], first[:show]):
        row = rows[index]
        context = model.decode(key)
        if context in failures:
            continue
        predicted, tied = top_token(logits[row])
        failures[context] = Failure(
            context=context,
            acceptable=tuple(model.vocab[i] for i in np.flatnonzero(acceptable[row])),
            predicted=model.vocab[predicted],
            tied=tied,
            logits=logits[row],
            probs=softmax(logits[row]),
        )
    if len(failures) > show * 4:  # keep the dict small on a model that fails everywhere
        keep = set(sorted(failures, key=lambda c: _order(model, c))[:show])
        for context in [c for c in failures if c not in keep]:
            del failures[context]
