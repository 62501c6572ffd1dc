"""Judging from Python: :func:`check` (a model on its target, as ``handwired check``) and :func:`puzzle`, whose
``submit(model)`` is the game's verdict (as ``handwired puzzles check``, without touching the player's progress).
Each result keeps the core's own report (``.report``) and shows itself as the command line would."""

import os
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from handwired.api.keywords import speaks_python, warn
from handwired.api.loading import Loadable, load
from handwired.api.model import HookedModel
from handwired.defaults import FAILURES_SHOWN, NEAR_MISS, SEED
from handwired.errors import HandwiredError
from handwired.judge.checking.report import Report, check_near_miss
from handwired.judge.game import progress
from handwired.judge.game.catalogue import load_puzzle, reference_solution
from handwired.judge.game.puzzle import Answer, Puzzle, answer
from handwired.judge.game.verdict import Submission
from handwired.judge.judging import NOTHING, Choice, Verdict, decide, verdict
from handwired.judge.kinds.rules import FunctionRule
from handwired.views.display import View, html_fragment
from handwired.views.puzzles import puzzle_line, score_text, score_view, statement_view, unsolved_line
from handwired.views.report import failure_view
from handwired.weightfile import Model
from handwired.weightfile.axes import printable
from handwired.weightfile.puzzlekey import HASH_MARK


def _model(model: Loadable) -> HookedModel:
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
                   else f"NOT PROVED: {r.cases.left:,} cases left" if r.cases is not None and r.cases.left
                   else f"NOT PROVED {r.unproved:,}")  # passing in float64, not proved
        first = f"; shortest failure {r.shortest_failure.context!r}" if r.shortest_failure else ""
        margin = f"; margin {r.margin.value:g} at {r.margin.context!r}" if r.margin else ""
        return printable(f"<CheckReport {verdict}: {r.passed:,} of {r.decided:,} judged contexts pass "
                         f"({r.description}){first}{margin}>")

    def _repr_html_(self) -> str:
        return self.view()._repr_html_()


@speaks_python
def check(model: Loadable, target: str | None = None, *, rule: Callable[[str], Any] | None = None,
          exhaustive: bool = False, sample: int | None = None, seed: int = SEED, min_length: int | None = None,
          length: int | None = None,
          show: int = FAILURES_SHOWN, near_miss: float = NEAR_MISS, proof: bool = True) -> CheckReport:
    """Judge ``model`` on a repeating pattern (``target``; default: the file's) as ``handwired check`` does: the
    stream test, or ``exhaustive=True`` every context, or ``sample=N`` random ones. ``rule``: a Python function
    from a context to its acceptable next tokens (or AMBIGUOUS, OUT_OF_DOMAIN) judges instead of a target, on
    every context (or ``sample=N``). ``proof=False`` skips the certified bounds (then nothing is proved). A puzzle's
    answer is judged by ``puzzle(…).submit(model)``: here the file's puzzle never judges (the one decision,
    handwired.judge.judging, is asked for a target's check)."""
    check_near_miss(near_miss)
    hooked = _model(model)
    judge = None if rule is None else FunctionRule(rule, hooked.model.vocab, getattr(rule, "__name__", "a Python rule"))
    judging = decide(hooked.model, Choice(target=target, length=length, exhaustive=exhaustive, sample=sample, seed=seed,
                                          min_length=min_length, proof=proof, rule=judge, answers=False))
    if judging.kind == NOTHING:
        raise _no_target(hooked.model, judging.names)
    for note in judging.notes:  # a file that names a puzzle, checked on a target: how to judge it as the answer
        warn(note.render(lambda name: f"{_puzzle_call(hooked.model.source, judging.names)}.submit(model)"))
    report = verdict(hooked.model, judging, show).report
    assert report is not None, "a target's check has a report"
    return CheckReport(hooked, report, near_miss)


def _no_target(model: Model, names: str | None) -> HandwiredError:
    """A model with no target to check, and how to judge it from Python (by the puzzle it ``names``, if any)."""
    how = "give one"
    if names is not None:
        how = f"it names a puzzle: judge it with {_puzzle_call(model.source, names)}.submit(model), or give a target"
    return HandwiredError(f"{model.source}: has no 'target'; {how} as target=, e.g. "
                          f"check(model, target={model.vocab[0] * 2!r})")


def _puzzle_call(source: str, names: str | None) -> str:
    """The call that reads the puzzle a file ``names``: a bundled one by name, a statement beside the file by its
    path."""
    path, mark, _ = names.rpartition(HASH_MARK) if names else ("", "", "")
    return f"handwired.puzzle({str(Path(source).parent / path) if mark else names!r})"


class ShownVerdict(Verdict):
    """The one verdict (handwired.judge.judging.Verdict, ``handwired.Verdict``) of a model judged as a puzzle's
    answer, shown as the command line shows it: a one-line repr, and HTML in Jupyter."""

    near_miss = NEAR_MISS

    @classmethod
    def of(cls, judged: Verdict) -> "ShownVerdict":
        return cls(**{field.name: getattr(judged, field.name) for field in fields(judged)})

    def _submission(self) -> Submission:
        assert self.submission is not None, "submit judges a model as a puzzle's answer"
        return self.submission

    def parts(self, everything: bool = True) -> list:
        s, report = self._submission(), self.report
        if report is None:  # a misfit is not run
            return [puzzle_line(s.puzzle), str(s.misfit_error())]
        parts: list = [puzzle_line(s.puzzle), *failure_view(s.model, report, self.near_miss, everything)]
        parts.append(score_view(s, None, False) if s.solved else unsolved_line(s))
        return parts

    def __repr__(self) -> str:
        s, report = self._submission(), self.report
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
        """What the puzzle's rule says follows ``context`` (its acceptable next tokens, or why none is judged)."""
        p = self.puzzle
        strangers = [char for char in context if char not in p.vocab]
        if not context or strangers or len(context) > p.n_ctx:
            problem = (f"{strangers[0]!r} is not in the puzzle's vocabulary {', '.join(p.vocab)}" if strangers
                       else f"expected 1…{p.n_ctx} tokens (n_ctx)")
            raise HandwiredError(f"{{context}} {printable(repr(context[:40]))}: {problem}", ("context",))
        return answer(p, context)

    @speaks_python
    def reference(self) -> HookedModel:
        """The puzzle's reference solution (a bundled puzzle's; a written one has none)."""
        model = reference_solution(self.puzzle)
        if model is None:
            raise HandwiredError(f"puzzle {self.puzzle.name!r}: has no bundled reference solution")
        return HookedModel(model)

    @speaks_python
    def submit(self, model: Loadable, show: int = FAILURES_SHOWN, proof: bool = True,
               by_cases: bool | None = None) -> ShownVerdict:
        """The verdict on ``model`` (a HookedModel, name, path or dict) as an answer: fit, every context, score.
        ``proof=False`` judges in float64 alone, as ``--no-proof`` does: then nothing is proved or solved.
        ``by_cases=True`` proves it by cases, as ``--by-cases`` does (by default only a domain too large to walk is;
        ``False``: never, the walk's refusal instead)."""
        hooked = _model(model)
        judging = decide(hooked.model, Choice(self.puzzle, proof=proof, by_cases=by_cases))
        judged = ShownVerdict.of(verdict(hooked.model, judging, show))
        for note in judging.notes:  # the file names another puzzle
            warn(str(note))
        return judged

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
