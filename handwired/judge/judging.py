"""How a weight file is judged, decided in one place, and what the judging produced: one :class:`Verdict`.

Every face (``check``, ``puzzles check``, ``watch``, ``spread``, ``sweep``, ``ablate``, ``diff``, ``predict``, and
Python's :func:`handwired.check` and ``puzzle(…).submit``) gives :func:`decide` or :func:`chosen_puzzle` what its
caller asked for (a :class:`Choice`) and gets back a :class:`Judging`: the puzzle's answer, a sample of its contexts,
a target's check or nothing to check, with the notes to show beside it (a puzzle asked for that is not the one the
file names, a statement changed since the file was started, a target checked instead of the file's puzzle). The faces
read no model's ``puzzle`` or ``target`` to choose: the notes and errors name the caller's parameters (``{target}``),
as every error of the core does, and each face spells them its own way.

:func:`verdict` runs a judging: a :class:`Verdict` holds how it was judged, the report, the puzzle's submission
(fit, score) when it was judged as an answer, and why nothing was run when nothing was.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from handwired.defaults import FAILURES_SHOWN, MIN_LENGTH, SEED, stream_length
from handwired.errors import HandwiredError, Note
from handwired.judge.checking.contexts import count_contexts, how_many
from handwired.judge.checking.plans import Plan, chosen_plan, exhaustive_plan, pattern_rule, sample_plan, stream_plan
from handwired.judge.checking.proving import cases_plan
from handwired.judge.checking.report import Report, run
from handwired.judge.game.catalogue import bundled_puzzles, load_puzzle, named_puzzle, other_puzzle
from handwired.judge.game.puzzle import Puzzle
from handwired.judge.game.scores import Score
from handwired.judge.game.verdict import Submission, puzzle_sample_plan, require_fit, submit
from handwired.judge.kinds.rules import Rule
from handwired.weightfile import Model

ANSWER, SAMPLE, TARGET, NOTHING = "answer", "sample", "target", "nothing"  # what a judging is
QUICK_EXHAUSTIVE = 100_000  # contexts: a quick target check below this many runs on every context, above it the stream
TARGET_CHOICES = ("target", "length", "exhaustive", "sample", "min_length")  # what asks for a target's check


@dataclass(frozen=True)
class Choice:
    """What the caller asked for; None or False where it asked nothing. ``puzzle``: a puzzle asked for (its name or
    path, or read already); ``rule``: a rule that judges every context (or a sample) instead of a target; ``answers``:
    the puzzle the file names judges it, as its answer, unless a choice asks for a target's check (False: a target's
    check always, as Python's ``check`` is); ``quick``: with no choice, the target is checked on every context when
    there are at most this many, else by the stream test (None: as asked, the stream test by default)."""

    puzzle: str | Puzzle | None = None
    target: str | None = None
    length: int | None = None
    exhaustive: bool = False
    sample: int | None = None
    seed: int = SEED
    min_length: int | None = None
    proof: bool = True
    rule: Rule | None = None
    answers: bool = True
    quick: int | None = None
    by_cases: bool | None = None  # True: proved by cases; False: walked; None: by cases where a domain cannot be walked

    def __post_init__(self) -> None:
        if self.by_cases and self.sample is not None:
            raise HandwiredError("{by_cases} proves every context, {sample} checks some: choose one",
                                 ("by_cases", "sample"))
        if self.by_cases and not self.proof:
            raise HandwiredError("{by_cases} proves; {no_proof} skips the proof: choose one", ("by_cases", "no_proof"))
        if self.puzzle is not None:  # a puzzle's verdict is every context of its domain, or a sample of them
            other = [name for name in self.given() if name not in ("exhaustive", "sample")]
            if other:
                raise HandwiredError(f"{{puzzle}} judges every context by the puzzle's rule, or {{sample}} some of "
                                     f"them; {{{other[0]}}} does not apply", ("puzzle", "sample", other[0]))
        if (self.puzzle is not None or self.rule is not None) and self.exhaustive and self.sample is not None:
            raise HandwiredError("{exhaustive} and {sample}: choose one", ("exhaustive", "sample"))

    def given(self) -> list[str]:
        """The choices that ask for a target's check, in order: a value of 0 is given, None and False are not."""
        return [name for name in TARGET_CHOICES if getattr(self, name) is not None and getattr(self, name) is not False]


@dataclass(frozen=True)
class Judging:
    """What judges a file: ``kind`` (ANSWER: as the answer to ``puzzle``; SAMPLE and TARGET: ``plan``, a sample of
    the puzzle's contexts or a target's check, ``target`` its pattern; NOTHING: ``reason``), ``how`` in words, the
    ``notes`` to show, and ``names``: the puzzle the file names, as it writes it (None: none)."""

    kind: str
    how: str
    puzzle: Puzzle | None = None
    plan: Plan | None = None
    target: str | None = None
    notes: tuple[Note, ...] = ()
    reason: str = ""
    names: str | None = None
    proof: bool = True  # with certified bounds (an answer is solved only when proved)
    by_cases: bool | None = None  # an answer's: see Choice.by_cases


def decide(model: Model, choice: Choice = Choice()) -> Judging:
    """How ``model`` is judged, given the caller's ``choice``: the puzzle asked for; else the one the file names
    (unless a choice asks for a target's check); else a rule asked for; else the target (the one asked for, or the
    file's), or nothing to check."""
    if choice.puzzle is not None:
        puzzle = choice.puzzle if isinstance(choice.puzzle, Puzzle) else load_puzzle(choice.puzzle)
        notes = other_puzzle_notes(puzzle, (model,))
        if choice.sample is not None:
            return Judging(SAMPLE, f"puzzle {puzzle.name}", puzzle, notes=notes, names=model.puzzle,
                           plan=puzzle_sample_plan(puzzle, model, choice.sample, choice.seed, choice.proof))
        return Judging(ANSWER, f"puzzle {puzzle.name}", puzzle, notes=notes, names=model.puzzle, proof=choice.proof,
                       by_cases=choice.by_cases)
    named = _named(model, choice) if choice.answers and choice.rule is None else None
    return named if named is not None else _target(model, choice)


def _named(model: Model, choice: Choice) -> Judging | None:
    """The puzzle the file names, when it judges the file: with no choice, with ``exhaustive`` alone on a file
    without a target (a puzzle's verdict is every context of its domain), or a sample of its contexts on such a
    file; None when a choice asks for the target's check."""
    if model.puzzle is None:
        return None
    given = choice.given()
    if "target" in given or (given and model.target is not None):
        return None
    puzzle, changed = named_puzzle(model)
    assert puzzle is not None, "a file that names a puzzle gives one, or an error"
    notes = (Note(changed),) if changed else ()
    if given == ["sample"] and choice.sample is not None:
        return Judging(SAMPLE, f"puzzle {puzzle.name}", puzzle, notes=notes, names=model.puzzle,
                       plan=puzzle_sample_plan(puzzle, model, choice.sample, choice.seed, choice.proof))
    other = [name for name in given if name != "exhaustive"]
    if other:
        raise HandwiredError(f"{model.source}: names the puzzle {puzzle.name!r}, judged on every context of its "
                             f"domain by its rule; {{{other[0]}}} does not apply (a target check needs {{target}})",
                             (other[0], "target"))
    return Judging(ANSWER, f"puzzle {puzzle.name}", puzzle, notes=notes, names=model.puzzle, proof=choice.proof,
                   by_cases=choice.by_cases)


def _target(model: Model, choice: Choice) -> Judging:
    """A rule's or a target's check (the target asked for, else the file's), or nothing to check."""
    if choice.rule is not None:
        return Judging(TARGET, "check", plan=_rule_plan(model, choice.rule, choice), names=model.puzzle)
    pattern = choice.target if choice.target is not None else model.target  # target '' is a mistake, not the file's
    if pattern is None and (choice.quick is not None or not choice.answers):
        return Judging(NOTHING, "check", reason='the file has no "target": nothing to check', names=model.puzzle)
    if choice.by_cases and pattern is not None:  # every context, by cases: refused, the pattern rule cannot say
        how, plan = "check", cases_plan(model, pattern_rule(model, pattern), None, _least(choice))
    elif choice.quick is not None and pattern is not None and not choice.given():
        how, plan = quick_plan(model, pattern, choice.quick, choice.proof)
    else:
        named_after = model.name if model.name in bundled_puzzles() else None  # a reference, by puzzles solution -o
        how, plan = "check", chosen_plan(model, choice.target, choice.length, choice.exhaustive, choice.sample,
                                         choice.seed, choice.min_length, named_after, choice.proof)
    notes = () if model.puzzle is None else (_target_instead(model, choice, pattern),)
    return Judging(TARGET, how, plan=plan, target=pattern, notes=notes, names=model.puzzle)


def _target_instead(model: Model, choice: Choice, pattern: str | None) -> Note:
    """A file that names a puzzle, checked on a target because the caller asks: a note saying which judges it."""
    said = f"{model.source} names the puzzle {model.puzzle!r}; checked on the target {pattern!r} instead"
    if not choice.answers:  # the caller judges the puzzle's answer another way, and spells it as {submit}
        return Note(said + " (as the puzzle's answer: {submit})", ("submit",))
    given = choice.given()
    asked = "target" if "target" in given else given[0] if given else "target"
    return Note(f"{said}, as {{{asked}}} asks (with no flag, it is judged as the puzzle's answer)", (asked,))


def _rule_plan(model: Model, rule: Rule, choice: Choice) -> Plan:
    """Every context (or a sample) judged by a rule the caller gives; with certified bounds unless not ``proof``."""
    if choice.target is not None or choice.length is not None:
        raise HandwiredError("{rule} judges instead of a target: {target} and {length} do not apply",
                             ("rule", "target", "length"))
    least = _least(choice)
    if choice.by_cases:
        return cases_plan(model, rule, None, least)
    if choice.sample is None:
        return exhaustive_plan(model, rule, least, proof=choice.proof)
    return sample_plan(model, rule, choice.sample, choice.seed, least, choice.proof)


def _least(choice: Choice) -> int:
    return MIN_LENGTH if choice.min_length is None else choice.min_length


def quick_plan(model: Model, pattern: str, limit: int = QUICK_EXHAUSTIVE, proof: bool = True) -> tuple[str, Plan]:
    """A target's check that is quick whatever the model: every context when there are at most ``limit``, else the
    stream test. What is run, in words, and its plan."""
    total = count_contexts(model)
    if total <= limit:
        return "check, every context", exhaustive_plan(model, pattern_rule(model, pattern), proof=proof)
    return (f"check, the stream test (every context would be {how_many(total)})",
            stream_plan(model, pattern, stream_length(pattern), proof=proof))


def other_puzzle_notes(puzzle: Puzzle, models: Sequence[Model]) -> tuple[Note, ...]:
    """Judging by a puzzle asked for (it wins), a note for each file that names another one."""
    named = [(model, other_puzzle(model, puzzle)) for model in models]
    return tuple(Note(f"{model.source} names the puzzle {other!r}; judged by {puzzle.name!r}, as asked")
                 for model, other in named if other is not None)


def chosen_puzzle(models: Sequence[Model], puzzle: str | Puzzle | None = None,
                  fit: Callable[[Puzzle, Model], None] = require_fit) -> tuple[Puzzle | None, tuple[Note, ...]]:
    """The puzzle that judges ``models`` (each must ``fit`` it), and the notes to show: the one asked for (a note
    for each file that names another), else the one the files name, the last first (a note if its statement has
    changed since the file was started). None: no puzzle."""
    if puzzle is not None:
        chosen = puzzle if isinstance(puzzle, Puzzle) else load_puzzle(puzzle)
        for model in models:
            fit(chosen, model)
        return chosen, other_puzzle_notes(chosen, models)
    notes: list[Note] = []
    for model in reversed(models):
        named, changed = named_puzzle(model)
        notes += [Note(changed)] if changed else []
        if named is not None:
            for each in models:
                fit(named, each)
            return named, tuple(notes)
    return None, tuple(notes)


def judged_contexts(model: Model, puzzle: str | Puzzle | None = None, every: bool = False,
                    required: bool = False) -> Judging:
    """What a spread, a sweep or an ablation reads: the puzzle asked for (the file fitting its vocab and n_ctx; its
    caps too when ``required``), else the one the file names, else the file's target (all unless ``every``); else
    every context with no answers, or, when an answer is ``required``, an error saying how to give one."""
    if puzzle is not None and every:
        raise HandwiredError("{puzzle} and {every}: choose one", ("puzzle", "every"))
    if every:
        return Judging(NOTHING, "every context", reason="every context", names=model.puzzle)
    chosen, notes = chosen_puzzle((model,), puzzle, require_fit if required else _looks)
    if chosen is not None:
        return Judging(ANSWER, f"puzzle {chosen.name}", chosen, notes=notes, names=model.puzzle)
    if model.target is not None:
        return Judging(TARGET, "check", target=model.target, notes=notes, names=model.puzzle)
    if required:
        named = f" {model.name}" if model.name in bundled_puzzles() else ""  # a reference, by puzzles solution -o
        raise HandwiredError(f"{model.source}: has no 'target' and names no puzzle; judge it by one with "
                             f"{{puzzle}}{named}", ("puzzle",))
    return Judging(NOTHING, "every context", notes=notes, reason="no answers", names=model.puzzle)


def _looks(puzzle: Puzzle, model: Model) -> None:
    """What only looks at a puzzle's contexts (a spread) asks no fit here: it needs the puzzle's vocab and n_ctx, not
    its caps, and says so where it reads the contexts (handwired.judge.workbench.spread.puzzle_source)."""


@dataclass(frozen=True)
class Verdict:
    """What a judging produced: ``how`` it was judged, the ``report`` (None: nothing was run), the puzzle's
    ``submission`` when the file was judged as its answer (its fit and score), ``reason`` when nothing was run (no
    target, or a file that does not fit the puzzle), and the ``notes`` to show beside it."""

    how: str
    report: Report | None = None
    submission: Submission | None = None
    reason: str = ""
    notes: tuple[Note, ...] = ()

    @property
    def fits(self) -> bool:
        return self.submission is None or self.submission.fits

    @property
    def solved(self) -> bool:
        return self.submission is not None and self.submission.solved

    @property
    def score(self) -> Score | None:
        return None if self.submission is None else self.submission.score

    @property
    def par(self) -> Score | None:
        return None if self.submission is None else self.submission.par

    @property
    def misfit(self) -> tuple[str, ...]:
        return () if self.submission is None else self.submission.misfit

    @property
    def answers(self) -> bool:
        """Judged as a puzzle's answer, on every context (a watch follows its shortest failure)."""
        return self.submission is not None

    def __repr__(self) -> str:  # one line: the report and the submission are long
        report = self.report
        what = self.reason if report is None else f"{report.passed:,} of {report.decided:,} judged contexts pass"
        return f"<Verdict by {self.how}: {what}>"


def verdict(model: Model, judging: Judging, show: int = FAILURES_SHOWN,
            progress: Callable[[int, int], None] | None = None,
            should_stop: Callable[[], bool] = lambda: False) -> Verdict:
    """Run the judging of ``model``: the puzzle's whole verdict on an answer, a plan's report, or nothing."""
    if judging.kind == ANSWER:
        assert judging.puzzle is not None, "an answer's judging names its puzzle"
        submission = submit(judging.puzzle, model, show, progress, should_stop, judging.proof, judging.by_cases)
        misfit = "; ".join(submission.misfit)
        reason = f"the file does not fit the puzzle: it expects {misfit}" if misfit else ""
        return Verdict(judging.how, submission.report, submission, reason, judging.notes)
    if judging.plan is None:
        return Verdict(judging.how, None, reason=judging.reason, notes=judging.notes)
    return Verdict(judging.how, run(model, judging.plan, show, progress, should_stop), notes=judging.notes)
