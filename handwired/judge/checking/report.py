"""Running a plan and reporting on it: the counts, the shortest failures, the margin.

A context passes when the best acceptable token's logit is strictly above every
other token's: a tie is not a proof. When the plan is certified, a passing
context is *proved* when the best acceptable token's lower bound is above every
other token's upper bound: the same weights in exact real arithmetic give it too.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from handwired.defaults import FAILURES_SHOWN, NEAR_MISS
from handwired.engine.batch import next_logits_distinct
from handwired.engine.certify import logit_bounds, outward
from handwired.engine.forward import softmax
from handwired.engine.logits import require_finite, top_token
from handwired.errors import bad_value
from handwired.judge.checking.contexts import shortest_first
from handwired.judge.checking.plans import Batch, Plan
from handwired.judge.kinds.rules import AMBIGUOUS, DECIDED, OUT_OF_DOMAIN, Judgement
from handwired.weightfile import Model


@dataclass(frozen=True)
class Failure:
    context: str
    acceptable: tuple[str, ...]
    predicted: str
    tied: bool  # the predicted token shares the top logit with another
    logits: np.ndarray
    probs: np.ndarray
    right: int  # the best acceptable token (id)
    wrong: int  # the best other token (id)

    @property
    def gap(self) -> float:
        """The logit gap: the best wrong token's logit minus the best right one's (>= 0 on a failure; 0 is a tie)."""
        return float(self.logits[self.wrong] - self.logits[self.right])


@dataclass(frozen=True)
class Margin:
    value: float  # best acceptable logit - best other logit
    context: str
    right: str
    wrong: str


@dataclass(frozen=True)
class Unproved:
    """A context that passes in float64 whose bounds do not prove it: the best wrong token's upper bound is
    ``overlap`` logits above the best right token's lower bound (inf: a logit is unbounded, float64 having overflowed
    or made a NaN on the way to it)."""

    context: str
    overlap: float
    right: str
    wrong: str


@dataclass
class CaseCounts:
    """A proof by cases (:mod:`handwired.judge.checking.cases`): the cases evaluated in the certified arithmetic over
    sets of contexts (``proved`` of them whole), the ``leaves`` judged one context each, the ``deepest`` split, and
    what was ``left`` when it stopped (cases, and the contexts they cover, at most); ``spent``: stopped because the
    budget's ``seconds`` were spent (Ctrl-C is the report's ``interrupted``)."""

    cases: int = 0
    proved: int = 0
    leaves: int = 0
    deepest: int = 0
    left: int = 0
    left_contexts: int = 0
    spent: bool = False
    seconds: float = 0.0


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
    proof: bool = False  # certified: every passing context is either proved or unproved
    proved: int = 0  # passing contexts whose bounds prove them
    unproved: int = 0  # passing in float64, not proved
    first_unproved: Unproved | None = None  # the shortest, first in vocab order
    sampled: bool = False  # a random sample: proved on the contexts drawn, not on every one
    widest: float = 0.0  # logits: the widest bound on any logit of a judged context (upper minus lower)
    cases: CaseCounts | None = None  # proved by cases: the counts (the margin is then a certified lower bound)

    @property
    def decided(self) -> int:
        return self.passed + self.failed

    @property
    def ok(self) -> bool:
        """Nothing failed, nothing was left unchecked (no case left, by cases), and when certified, every passing
        context is proved."""
        left = self.cases is not None and self.cases.left > 0
        return self.failed == 0 and not self.interrupted and self.unproved == 0 and not left

    @property
    def shortest_failure(self) -> Failure | None:
        return self.failures[0] if self.failures else None

    def near_miss(self, threshold: float = NEAR_MISS) -> bool:
        return self.margin is not None and self.margin.value < threshold

    def __repr__(self) -> str:  # one line: the failures hold logits
        first = f", shortest failure {self.failures[0].context!r}" if self.failures else ""
        return (f"<Report {'ok' if self.ok else 'not ok'}: {self.passed:,} passed, {self.failed:,} failed of "
                f"{self.checked:,} checked ({self.description}){first}>")


def check_near_miss(near_miss: float) -> None:
    """Refuse a near-miss threshold that is no number of logits, 0 or more (nan, a negative one, or ∞, under which
    every margin would be called a near miss)."""
    if not near_miss >= 0 or near_miss == math.inf:  # also refuses nan
        raise bad_value("near_miss", near_miss, "expected a number of logits, 0 or more")


def run(
    model: Model,
    plan: Plan,
    show: int = FAILURES_SHOWN,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> Report:
    """Evaluate every batch of the plan; keep counts, the ``show`` shortest failures and the margin.

    ``should_stop`` is asked between batches (the CLI sets it on Ctrl-C); the
    report then covers what was checked so far and says it was interrupted.
    """
    if show < 1:
        raise bad_value("show", show, "expected 1 or more")
    if plan.runs is not None:  # a plan that runs itself: a proof by cases
        return plan.runs(show, progress, should_stop)
    report = Report(plan.description, plan.rule, plan.total, proof=plan.proof, sampled=plan.sampled)
    failures: dict[str, Failure] = {}
    for batch in plan.batches():
        _tally(model, batch, report, failures, show)
        if progress is not None:
            progress(report.checked, plan.total)
        if should_stop():
            report.interrupted = report.checked < plan.total
            break
    report.failures = sorted(failures.values(), key=lambda f: shortest_first(model.vocab, f.context))[:show]
    return report


def leads(logits: np.ndarray, acceptable: np.ndarray) -> np.ndarray:
    """[n, n_vocab] logits and acceptable tokens -> [n]: the best acceptable token's logit minus the best other
    token's, the right answer's lead (negative when a wrong token is on top, +inf when every token is acceptable)."""
    # on columns ([n_vocab, n], as the walk computes logits): each max over a few tokens is then whole rows of n
    columns, right = np.ascontiguousarray(logits.T), np.ascontiguousarray(acceptable.T)
    best_right = np.where(right, columns, -np.inf).max(axis=0)  # [n]
    best_wrong = np.where(right, -np.inf, columns).max(axis=0)  # [n]
    return best_right - best_wrong  # [n]


def decided_leads(logits: np.ndarray, answer: np.ndarray) -> np.ndarray:
    """[n, n_vocab] logits and each context's one acceptable token ([n], a Judgement's ``answer``) -> [n]: what
    :func:`leads` gives where the answer is a token (where it is -1, no lead: a number to ignore), from the answer's
    logit and the others' max."""
    columns = np.array(logits.T, order="C")  # [n_vocab, n], a copy: the answer's logit is set aside in it
    at = np.maximum(answer, 0) * len(answer) + np.arange(len(answer))  # [n]: each answer's logit, in columns.flat
    right = columns.take(at)  # [n]
    columns.put(at, -np.inf)
    return right - columns.max(axis=0)


def _tally(model: Model, batch: Batch, report: Report, failures: dict[str, Failure], show: int) -> None:
    contexts, status, acceptable = batch.contexts, batch.judgement.status, batch.judgement.acceptable
    if batch.logits is None:
        logits = next_logits_distinct(model, contexts)  # checked finite there
    else:  # a walk's: a NaN would count as neither passing nor failing
        logits = require_finite(model, contexts, batch.logits)
    answer = batch.judgement.answer  # when the rule gives it: each decided context's one token
    margins = leads(logits, acceptable) if answer is None else decided_leads(logits, answer)  # (decided: all read)
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
            or (margins[row], shortest_first(model.vocab, context))
            < (report.margin.value, shortest_first(model.vocab, report.margin.context))
        ):
            report.margin = Margin(
                value=float(margins[row]),
                context=context,
                right=model.vocab[int(np.argmax(np.where(acceptable[row], logits[row], -np.inf)))],
                wrong=model.vocab[int(np.argmax(np.where(acceptable[row], -np.inf, logits[row])))],
            )
    _keep_failures(model, contexts, logits, acceptable, np.flatnonzero(failing), failures, show)
    if batch.radius is not None:
        _tally_proof(model, contexts, logits, batch.radius, batch.judgement, passing, decided, report)


def _tally_proof(model, contexts, logits, radius, judgement: Judgement, passing, decided, report: Report) -> None:
    """Count the passing contexts the bounds prove; keep the first unproved one and the widest bound."""
    # on columns ([n_vocab, n]): each check and maximum over a context's few tokens is then whole rows of n
    radius, columns = np.array(radius.T, order="C"), np.ascontiguousarray(logits.T)  # (radius: a copy, written in)
    finite = np.isfinite(radius)
    # [n]: a logit that overflowed, or an intermediate that overflowed or made a NaN, bounds nothing
    bounded = np.asarray(finite.all(axis=0) & np.isfinite(columns).all(axis=0))
    np.copyto(radius, np.inf, where=~finite)  # NaN, inf: unbounded
    right_lo, wrong_hi = _bounds_apart(columns, radius, judgement)  # [n] each
    proved = passing & bounded & (right_lo > wrong_hi)
    unproved = passing & ~proved
    report.proved += int(proved.sum())
    report.unproved += int(unproved.sum())
    if decided.any():
        report.widest = max(report.widest, 2 * float(np.max(radius, where=decided, initial=0.0)))  # (radii ≥ 0)
    if unproved.any():
        row = int(np.flatnonzero(unproved)[0])  # a batch is in vocab order and batches come shortest first
        context = model.decode(contexts[row])
        if report.first_unproved is None or shortest_first(model.vocab, context) < shortest_first(
                model.vocab, report.first_unproved.context):
            low, high = logit_bounds(columns[:, row], radius[:, row]) if bounded[row] else (logits[row], logits[row])
            acceptable = judgement.acceptable[row]
            report.first_unproved = Unproved(context, float(wrong_hi[row] - right_lo[row]) if bounded[row] else np.inf,
                                             model.vocab[int(np.argmax(np.where(acceptable, low, -np.inf)))],
                                             model.vocab[int(np.argmax(np.where(acceptable, -np.inf, high)))])


def _bounds_apart(mid: np.ndarray, rad: np.ndarray, judgement: Judgement) -> tuple[np.ndarray, np.ndarray]:
    """[n_vocab, n] logits and radii -> [n] each: below the real logit of the best acceptable token, and above the real
    logits of all the others (by the rule's answer when it gives one: then for the decided contexts alone). The
    sums mid ± rad are rounded outward once each context's extreme is found: n numbers, not n_vocab·n."""
    answer = judgement.answer
    if answer is not None:
        at = np.maximum(answer, 0) * len(answer) + np.arange(len(answer))  # [n]: each answer's logit, in .flat
        high = mid + rad
        high.put(at, -np.inf)
        right, wrong = mid.take(at) - rad.take(at), high.max(axis=0)
    else:
        acceptable = np.ascontiguousarray(judgement.acceptable.T)
        right = np.where(acceptable, mid - rad, -np.inf).max(axis=0)
        wrong = np.where(acceptable, -np.inf, mid + rad).max(axis=0)
    return outward(right, wrong)


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
            right=int(np.argmax(np.where(acceptable[row], logits[row], -np.inf))),
            wrong=int(np.argmax(np.where(acceptable[row], -np.inf, logits[row]))),
        )
    if len(failures) > show * 4:  # keep the dict small on a model that fails everywhere
        keep = set(sorted(failures, key=lambda c: shortest_first(model.vocab, c))[:show])
        for context in [c for c in failures if c not in keep]:
            del failures[context]
