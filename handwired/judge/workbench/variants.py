"""The workbench: one set of judged contexts, and the verdict of many variants of one model on it.

``sweep`` (a constant changed) and ``ablate`` (a part removed) judge many variants of a model on the same
contexts — a puzzle's, or every context by the file's target, as :func:`handwired.judge.workbench.spread.judged_source`
finds them. The
contexts are walked as a trie of their prefixes, depth first in bounded batches, once for a group of variants
(:mod:`handwired.engine.resume`): each batch is judged by the rule once, the base model runs on it once, and every
variant resumes from the first stage it changes. A context passes as in ``check``: the right token's logit strictly
above every other token's, in float64. Nothing is kept per context: each verdict is tallied batch by batch.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from handwired import budget
from handwired.engine.cost import workbench_bytes, workbench_seconds
from handwired.engine.memory import refuse_large
from handwired.engine.resume import VARIANT_MEMORY, groups, resumed, variant_walk
from handwired.engine.walk import EveryString, batch_nodes
from handwired.errors import HandwiredError
from handwired.judge.checking.contexts import MAX_RUN_SECONDS, duration, every_length, how_many
from handwired.judge.checking.report import leads
from handwired.judge.kinds.domains import Domain
from handwired.judge.kinds.rules import DECIDED
from handwired.judge.workbench.spread import Source
from handwired.weightfile import Model

SHARED_MEMORY = 64 * 2**20  # bytes of the base model's values and judgements kept across walks, at most


@dataclass(frozen=True)
class Tally:
    """A variant's tally on the judged contexts, in float64: how many pass and fail, the worst lead and where, what it
    broke of the base model's. Not a :class:`handwired.judge.judging.Verdict`: no report, no proof, no puzzle."""

    passed: int
    failed: int
    worst: float  # the smallest lead over the judged contexts: the margin when none fails, else <= 0; nan: none
    worst_context: str  # where it is
    broken: int  # contexts the base model passes and this variant fails
    first_broken: str | None  # the shortest of them
    finite: bool = True  # False: some logit overflowed; every context counts as failed

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.finite


class _Tallying:
    """One variant's tally, kept batch by batch (batches come depth first: ties go to the shortest, then vocab
    order, as reports list contexts)."""

    def __init__(self) -> None:
        self.passed, self.total, self.broken, self.finite = 0, 0, 0, True
        self.worst: tuple | None = None  # (lead, length, tokens): the smallest lead below +inf, and where
        self.first_broken: tuple | None = None  # (length, tokens)

    def add(self, contexts: np.ndarray, lead: np.ndarray, finite: bool, base: np.ndarray) -> None:
        """A batch of judged contexts [n, L], the variant's leads there [n], whether its logits are all numbers,
        and which of them the base model passes [n]."""
        self.finite &= finite
        passes = lead > 0
        self.passed += int(passes.sum())
        self.total += len(lead)
        if len(lead) and lead.min() < np.inf:  # the first smallest of a batch in vocab order
            row = int(np.argmin(lead))
            here = (float(lead[row]), contexts.shape[1], tuple(contexts[row].tolist()))
            self.worst = here if self.worst is None else min(self.worst, here)
        newly = base & ~passes
        self.broken += int(newly.sum())
        if newly.any():
            shortest = (contexts.shape[1], tuple(contexts[int(np.argmax(newly))].tolist()))
            self.first_broken = min(self.first_broken or shortest, shortest)

    def verdict(self, model: Model, base_passed: int) -> Tally:
        if not self.finite:
            return Tally(0, self.total, np.nan, "", base_passed, None, False)
        worst = np.nan if not self.total else np.inf if self.worst is None else self.worst[0]
        where = "" if self.worst is None else model.decode(np.array(self.worst[2]))
        first = None if self.first_broken is None else model.decode(np.array(self.first_broken[1]))
        return Tally(self.passed, self.total - self.passed, worst, where, self.broken, first)


def _leads(logits: np.ndarray, rows: np.ndarray, acceptable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every variant's leads at once, as report.leads computes each: [variants, m, n_vocab] logits, the rows judged
    [n] and their acceptable tokens [n, n_vocab] -> the leads [variants, n], and whether each variant's logits
    there are all numbers [variants]. The vocab is the first axis, so each max is over whole rows."""
    by_token = np.moveaxis(logits[:, rows], 2, 0)  # [n_vocab, variants, n]
    right = acceptable.T[:, None, :]  # [n_vocab, 1, n]
    best_right = np.where(right, by_token, -np.inf).max(axis=0)  # [variants, n]
    best_wrong = np.where(right, -np.inf, by_token).max(axis=0)  # [variants, n]
    with np.errstate(over="ignore", invalid="ignore"):  # a variant whose logits overflow is said so, by its flag
        return best_right - best_wrong, np.asarray(np.isfinite(by_token).all(axis=(0, 2)))


@dataclass(frozen=True)
class _Judged:
    """A batch's judged contexts: their rows in the batch [n], tokens [n, L], acceptable tokens [n, n_vocab], and
    the base model's leads there [n] (and whether its logits are all numbers)."""

    rows: np.ndarray
    contexts: np.ndarray
    acceptable: np.ndarray
    base: np.ndarray
    finite: bool

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes + self.contexts.nbytes + self.acceptable.nbytes + self.base.nbytes


class Bench:
    """A base model, the contexts it is judged on, and its variants' verdicts there.

    What the base model hands the variants at each batch, and the batch's judgement, are kept across walks when
    all of them fit in SHARED_MEMORY (one walk finds out): the next walks replay them instead of running the base
    model and the rule again. Past that, every walk computes them afresh."""

    def __init__(self, model: Model, source: Source) -> None:
        if source.rule is None:
            raise HandwiredError(f"{model.source}: nothing to judge by: give a puzzle, or a file with a target")
        self.model, self.source, self.rule = model, source, source.rule
        self.base: Tally | None = None  # known after the first walk
        self.total = 0
        self._shared: list[tuple[dict, _Judged | None]] | None = None  # per batch, of the last walk that fitted
        self._names: frozenset[str] = frozenset()  # the hooks _shared holds
        self._fits = True  # False once a walk's shared values were found over SHARED_MEMORY

    def shares_run(self, variant: Model) -> bool:
        """Whether walking the variant would run the base model too, to hand it what it shares (not kept from an
        earlier walk): then judging several such variants in one walk saves a run of the base model each."""
        plan = resumed(self.model, variant)
        return plan.stage > 0 and not (self._shared is not None and set(plan.hooks) <= self._names)

    def verdicts(self, variants: Sequence[Model], tick: Callable[[int], None] = lambda done: None) -> list[Tally]:
        """Each variant's verdict, evaluated from the first stage it changes, judged as ``check`` judges;
        ``tick(done)`` is told after each batch of each walk how many of the variants have their verdict."""
        plans = [resumed(self.model, variant) for variant in variants]
        out: list[Tally] = []
        for group in groups(self.model, plans, batch_nodes(self.model, self.model.n_ctx)):
            chosen = [plans[i] for i in group]
            tallies = [_Tallying() for _ in range(len(chosen) + 1)]  # the base model's first
            self._walk(chosen, tallies, lambda: tick(len(out)))  # noqa: B023 (out grows only between walks)
            if self.base is None:
                self._set_base(tallies[0])
            base_passed = self.base.passed if self.base is not None else 0
            out += [tally.verdict(plan.model, base_passed) for tally, plan in zip(tallies[1:], chosen)]
            tick(len(out))
        return out

    def _walk(self, chosen: list, tallies: list[_Tallying], tick: Callable[[], None]) -> None:
        names = frozenset(hook for plan in chosen for hook in plan.hooks)
        replay = self._shared if self._shared is not None and names <= self._names else None
        recording: list | None = [] if replay is None and self._fits else None
        size = 0
        walk = variant_walk(self.model, chosen, self.source.shape,
                            replay=None if replay is None else [entries for entries, _ in replay])
        for i, (visit, logits, entries) in enumerate(walk):
            judged = replay[i][1] if replay is not None else self._judge(visit)
            if judged is not None:
                self._tally(judged, logits, tallies)
            if recording is not None:
                size += sum(value.nbytes for value in entries.values()) + (judged.nbytes if judged else 0)
                self._fits = size <= SHARED_MEMORY
                recording = recording if self._fits else None
                if recording is not None:
                    recording.append((entries, judged))
            tick()
        if recording is not None:
            self._shared, self._names = recording, names

    def _judge(self, visit) -> _Judged | None:
        """A batch's contexts judged by the rule, and the base model's leads there."""
        if not visit.judged.any() or visit.logits is None:
            return None
        rows = np.flatnonzero(visit.judged)
        judgement = self.rule.judge(visit.prefixes[rows])
        decided = judgement.status == DECIDED  # [n]
        rows, acceptable = rows[decided], judgement.acceptable[decided]
        mine = visit.logits[rows]  # [n, n_vocab]
        return _Judged(rows, visit.prefixes[rows], acceptable, leads(mine, acceptable), bool(np.isfinite(mine).all()))

    @staticmethod
    def _tally(judged: _Judged, logits: np.ndarray | None, tallies: list[_Tallying]) -> None:
        """Tally the base model's verdict and each variant's on a batch's judged contexts."""
        passes = judged.base > 0
        tallies[0].add(judged.contexts, judged.base, judged.finite, passes)
        if logits is None or len(tallies) == 1:
            return
        lead, finite = _leads(logits, judged.rows, judged.acceptable)
        for i, tally in enumerate(tallies[1:]):
            tally.add(judged.contexts, lead[i], bool(finite[i]), passes)

    def _set_base(self, tally: _Tallying) -> None:
        if not tally.total:
            raise HandwiredError(f"{self.model.source}: the rule judges none of these contexts")
        self.total = tally.total
        self.base = tally.verdict(self.model, tally.passed)


def size(model: Model, source: Source) -> tuple[int, int, int]:
    """The contexts, the prefixes walked and the longest context of ``source``, from its shape alone."""
    if isinstance(source.shape, Domain):
        source.shape.refuse_walk()  # a domain too large to walk at all: offers the sample check instead
        contexts, nodes = source.shape.bound()
        return contexts, nodes, source.shape.longest
    assert isinstance(source.shape, EveryString), "a source is every string or a puzzle's domain"
    total = every_length(model.n_vocab, model.n_ctx)
    return total, total, model.n_ctx


def refuse_long(model: Model, source: Source, runs: int, what: str, instead: str, parameters=(),
                variants: tuple[int, float, float] = (0, 0.0, 0.0), walks: int = 1) -> None:
    """Refuse judging ``runs`` variants on ``source``'s contexts, in ``walks`` walks of them, estimated at more than
    the budget's time (by default MAX_RUN_SECONDS), or a walk whose memory is over the budget's, before any runs;
    ``variants``: how many copies of the model (or of its arrays) the work holds at once, their bytes, and the
    seconds making every copy takes, counted too."""
    contexts, nodes, longest = size(model, source)
    widths = source.shape.widths() if isinstance(source.shape, Domain) else ()
    kept = workbench_bytes(model, nodes, contexts, longest, runs, SHARED_MEMORY, VARIANT_MEMORY, widths)
    copies, held, making = variants
    refuse_large(f"{what}: {how_many(contexts)} contexts at n_embd {model.n_embd}"
                 + (f", and {copies:,} copies of the model's arrays held at once" if held else ""), kept + held,
                 f"; {instead}" if held else "; judge fewer contexts", (*parameters,),
                 "the walk's arrays and the copies" if held else "attention scores and activations")
    seconds = workbench_seconds(model, nodes, contexts, longest, runs, walks) + making
    if seconds > budget.seconds(MAX_RUN_SECONDS):
        raise HandwiredError(f"{what}: {runs:,} variants judged on {how_many(contexts)} contexts, about "
                             f"{duration(seconds)} "
                             f"for this model, more than the {duration(budget.seconds(MAX_RUN_SECONDS))} handwired "
                             f"will spend on one; {instead}{budget.more_time(seconds)}", (*parameters, *budget.TIME))
