"""Judging from Python: :func:`check` (a model on its target, as ``handwired check``) and :func:`puzzle`, whose
``submit(model)`` is the game's verdict (as ``handwired puzzles check``, without touching the player's progress).
Each result keeps the core's own report (``.report``) and shows itself as the command line would."""

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from handwired.api.keywords import speaks_python, warn
from handwired.api.loading import load
from handwired.api.model import HookedModel, warn_other_puzzle
from handwired.defaults import FAILURES_SHOWN, MIN_LENGTH, NEAR_MISS, SEED
from handwired.errors import HandwiredError
from handwired.judge import progress
from handwired.judge.catalogue import load_puzzle, reference_solution
from handwired.judge.plans import Plan, chosen_plan, exhaustive_plan, sample_plan
from handwired.judge.puzzle import Answer, Puzzle, answer
from handwired.judge.report import Report, check_near_miss, run
from handwired.judge.rules import FunctionRule
from handwired.judge.scores import Score
from handwired.judge.verdict import Submission, submit
from handwired.views.display import View, html_fragment
from handwired.views.puzzles import puzzle_line, score_text, score_view, statement_view, unsolved_line
from handwired.views.report import failure_view
from handwired.weightfile import Model
from handwired.weightfile.axes import printable
from handwired.weightfile.puzzlekey import HASH_MARK


def _model(model) -> HookedModel:
    return load(model)


class CheckReport:
    """A check's result: ``ok``, the counts, the shortest failures and the margin (``.report``, the core's)."""

    def __init__(self, model: HookedModel, report: Report, near_miss: float = NEAR_MISS) -> None:
        self.model, self.report, self.near_miss = model, report, near_miss

    @property
    def ok(self) -> bool:
        return self.report.ok

    def view(self) -> View:
        return View(f"check · model {self.model.name}",
                    lambda everything: failure_view(self.model.model, self.report, self.near_miss, everything))

    def __repr__(self) -> str:
        r = self.report
        verdict = ("passed" if r.ok else "interrupted" if r.interrupted else f"FAILED {r.failed:,}" if r.failed
                   else f"NOT PROVED {r.unproved:,}")  # passing in float64, not proved
        first = f"; shortest failure {r.shortest_failure.context!r}" if r.shortest_failure else ""
        margin = f"; margin {r.margin.value:g} at {r.margin.context!r}" if r.margin else ""
        return printable(f"<CheckReport {verdict}: {r.passed:,} of {r.decided:,} judged contexts pass "
                         f"({r.description}){first}{margin}>")

    def _repr_html_(self) -> str:
        return self.view()._repr_html_()


@speaks_python
def check(model, target: str | None = None, *, rule: Callable[[str], Any] | None = None, exhaustive: bool = False,
          sample: int | None = None, seed: int = SEED, min_length: int | None = None, length: int | None = None,
          show: int = FAILURES_SHOWN, near_miss: float = NEAR_MISS, proof: bool = True) -> CheckReport:
    """Judge ``model`` on a repeating pattern (``target``; default: the file's) as ``handwired check`` does: the
    stream test, or ``exhaustive=True`` every context, or ``sample=N`` random ones. ``rule``: a Python function
    from a context to its acceptable next tokens (or AMBIGUOUS, OUT_OF_DOMAIN) judges instead of a target, on
    every context (or ``sample=N``). ``proof=False`` skips the certified bounds (then nothing is proved)."""
    check_near_miss(near_miss)
    hooked = _model(model)
    if rule is not None:
        plan = _rule_plan(hooked.model, rule, target, length, exhaustive, sample, seed, min_length, proof)
    elif target is None and hooked.model.target is None:  # chosen_plan's advice is the command line's: Python's
        raise _no_target(hooked.model)
    else:
        plan = chosen_plan(hooked.model, target, length, exhaustive, sample, seed, min_length, proof=proof)
        if hooked.model.puzzle is not None:  # as the command line says when a flag asks for the target check
            warn(f"{hooked.model.source} names the puzzle {hooked.model.puzzle!r}; checked on the target "
                 f"{target if target is not None else hooked.model.target!r} instead (as the puzzle's answer: "
                 f"{_puzzle_call(hooked.model)}.submit(model))")
    return CheckReport(hooked, run(hooked.model, plan, show), near_miss)


def _rule_plan(model: Model, function: Callable[[str], Any], target: str | None, length: int | None,
               exhaustive: bool, sample: int | None, seed: int, min_length: int | None, proof: bool) -> Plan:
    """Every context (or a sample) judged by a rule function; ``proof``: with certified bounds."""
    if exhaustive and sample is not None:
        raise HandwiredError("{exhaustive} and {sample}: choose one", ("exhaustive", "sample"))
    if target is not None or length is not None:
        raise HandwiredError("{rule} judges instead of a target: {target} and {length} do not apply",
                             ("rule", "target", "length"))
    judge = FunctionRule(function, model.vocab, getattr(function, "__name__", "a Python rule"))
    least = MIN_LENGTH if min_length is None else min_length
    if sample is None:
        return exhaustive_plan(model, judge, least, proof=proof)
    return sample_plan(model, judge, sample, seed, least, proof)


def _no_target(model: Model) -> HandwiredError:
    """A model with no target to check, and how to judge it from Python (by the puzzle it names, if it names one)."""
    how = "give one"
    if model.puzzle is not None:
        how = f"it names a puzzle: judge it with {_puzzle_call(model)}.submit(model), or give a target"
    return HandwiredError(f"{model.source}: has no 'target'; {how} as target=, e.g. "
                          f"check(model, target={model.vocab[0] * 2!r})")


def _puzzle_call(model: Model) -> str:
    """The call that reads the puzzle a file names: a bundled one by name, a statement beside the file by its path."""
    path, mark, _ = model.puzzle.rpartition(HASH_MARK) if model.puzzle else ("", "", "")
    return f"handwired.puzzle({str(Path(model.source).parent / path) if mark else model.puzzle!r})"


class Verdict:
    """A model judged as a puzzle's answer: ``fits``, ``solved``, ``score`` and ``par``, ``report`` (the core's),
    and ``misfit`` (what breaks the puzzle's vocab, n_ctx or caps; a misfit is not run)."""

    def __init__(self, submission: Submission, near_miss: float = NEAR_MISS) -> None:
        self.submission, self.near_miss = submission, near_miss

    @property
    def fits(self) -> bool:
        return self.submission.fits

    @property
    def solved(self) -> bool:
        return self.submission.solved

    @property
    def score(self) -> Score | None:
        return self.submission.score

    @property
    def par(self) -> Score | None:
        return self.submission.par

    @property
    def report(self) -> Report | None:
        return self.submission.report

    @property
    def misfit(self) -> tuple[str, ...]:
        return self.submission.misfit

    def parts(self, everything: bool = True) -> list:
        s, report = self.submission, self.submission.report
        if report is None:  # a misfit is not run
            return [puzzle_line(s.puzzle), str(s.misfit_error())]
        parts: list = [puzzle_line(s.puzzle), *failure_view(s.model, report, self.near_miss, everything)]
        parts.append(score_view(s, None, False) if s.solved else unsolved_line(s))
        return parts

    def __repr__(self) -> str:
        s, report = self.submission, self.submission.report
        if report is None:
            return f"<Verdict on {s.puzzle.name!r}: does not fit: {'; '.join(s.misfit)}>"
        if s.score is not None:
            return f"<Verdict on {s.puzzle.name!r}: solved, {score_text(s.score)}>"
        first = report.shortest_failure
        return (f"<Verdict on {s.puzzle.name!r}: not solved, {report.failed:,} of {report.decided:,} judged "
                f"contexts fail{f', the shortest {first.context!r}' if first else ''}>")

    def _repr_html_(self) -> str:
        return html_fragment(self.parts())


class PuzzleHandle:
    """A puzzle: its statement (``.puzzle``, the core's), ``answer(context)`` by its rule, ``reference()`` (the
    bundled solution) and ``submit(model)``."""

    def __init__(self, puzzle: Puzzle) -> None:
        self.puzzle = puzzle

    @property
    def name(self) -> str:
        return self.puzzle.name

    @speaks_python
    def answer(self, context: str) -> Answer:
        return answer(self.puzzle, context)

    @speaks_python
    def reference(self) -> HookedModel:
        """The puzzle's reference solution (a bundled puzzle's; a written one has none)."""
        model = reference_solution(self.puzzle)
        if model is None:
            raise HandwiredError(f"puzzle {self.puzzle.name!r}: has no bundled reference solution")
        return HookedModel(model)

    @speaks_python
    def submit(self, model, show: int = FAILURES_SHOWN, proof: bool = True) -> Verdict:
        """The verdict on ``model`` (a HookedModel, name, path or dict) as an answer: fit, every context, score.
        ``proof=False`` judges in float64 alone, as ``--no-proof`` does: then nothing is proved or solved."""
        hooked = _model(model)
        verdict = Verdict(submit(self.puzzle, hooked.model, show, proof=proof))
        warn_other_puzzle(self.puzzle, hooked.model)
        return verdict

    def __repr__(self) -> str:
        p = self.puzzle
        return printable(f"<puzzle {p.name!r} (level {p.level}): {p.title}; vocab {''.join(p.vocab)}, n_ctx {p.n_ctx}>")

    def _repr_html_(self) -> str:
        player = progress.load()  # read as handwired puzzles show reads it: the hints and best shown are the player's
        player.writable = False
        return html_fragment([statement_view(self.puzzle, player)])


@speaks_python
def puzzle(name: str | os.PathLike[str]) -> PuzzleHandle:
    """A bundled puzzle by name, or a statement someone wrote by its path."""
    return PuzzleHandle(load_puzzle(os.fspath(name)))
