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
from handwired.run import top_token
from handwired.rules import AMBIGUOUS, DECIDED, OUT_OF_DOMAIN, Judgement, PatternRule, Rule
from handwired.weightfile import Model

BATCH = 65536  # contexts judged at a time: bounds memory however many there are
MAX_EXHAUSTIVE = 20_000_000  # about half a minute of checking on a small machine
NEAR_MISS = 1.0  # logits: a margin below this means a small edit could flip an answer


@dataclass(frozen=True)
class Batch:
    contexts: np.ndarray  # [n, n_seq] token ids, one length per batch
    judgement: Judgement


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


def all_contexts(model: Model, min_length: int = 1) -> Iterator[np.ndarray]:
    """Every context of length min_length…n_ctx, shortest first, in vocab order: [n, length] ids a batch at a time."""
    dtype = np.min_scalar_type(model.n_vocab)
    for length in _lengths(model, min_length):
        place = model.n_vocab ** np.arange(length - 1, -1, -1, dtype=np.int64)
        count = model.n_vocab**length
        for start in range(0, count, BATCH):
            index = np.arange(start, min(start + BATCH, count), dtype=np.int64)
            yield ((index[:, None] // place) % model.n_vocab).astype(dtype)  # base-n_vocab digits


def random_contexts(model: Model, n: int, seed: int = 0, min_length: int = 1) -> Callable[[], Iterator[np.ndarray]]:
    """``n`` contexts drawn uniformly (with replacement) from :func:`all_contexts`'s set, shortest first.

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


def exhaustive_plan(model: Model, rule: Rule, min_length: int = 1, limit: int = MAX_EXHAUSTIVE) -> Plan:
    """Every context of length min_length…n_ctx over the vocab, shortest first, in vocab order."""
    total = count_contexts(model, min_length)
    if total > limit:
        raise HandwiredError(
            f"--exhaustive: {model.n_vocab}^1 + … + {model.n_vocab}^{model.n_ctx} = {total:,} contexts, "
            f"more than the {limit:,} handwired will enumerate; check a random sample instead, "
            f"e.g. --sample 1000000 --seed 0"
        )

    def batches() -> Iterator[Batch]:
        for contexts in all_contexts(model, min_length):
            yield Batch(contexts, rule.judge(contexts))

    return Plan(
        description=f"every context of length {min_length}…{model.n_ctx} over {', '.join(model.vocab)} "
        f"({total:,} contexts)",
        rule=rule.description,
        total=total,
        batches=batches,
    )


def sample_plan(model: Model, rule: Rule, n: int, seed: int = 0, min_length: int = 1) -> Plan:
    """``n`` contexts drawn uniformly (with replacement) from the exhaustive set."""
    contexts_of = random_contexts(model, n, seed, min_length)

    def batches() -> Iterator[Batch]:
        for contexts in contexts_of():
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
    logits = next_logits_distinct(model, contexts)
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
        row = int(np.flatnonzero(passing)[np.argmin(margins[passing])])
        if math.isfinite(margins[row]) and (report.margin is None or margins[row] < report.margin.value):
            report.margin = Margin(
                value=float(margins[row]),
                context=model.decode(contexts[row]),
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
