"""A puzzle's verdict on an answer (:func:`submit`): whether the file fits the puzzle, then every context judged
by the puzzle's rule, the score if it is solved, and par from the statement; and the plans of a puzzle's contexts.

Which files are judged by a puzzle, and how, is decided in :mod:`handwired.judge.judging`, whose
:class:`~handwired.judge.judging.Verdict` carries a submission when a file was judged as an answer; ``puzzles check``,
``check``, ``watch`` and Python's ``submit`` all show what :func:`submit` returns, and none assembles a verdict itself.
"""

from collections.abc import Callable
from dataclasses import dataclass

from handwired.defaults import FAILURES_SHOWN
from handwired.errors import HandwiredError
from handwired.judge.checking.cases import space_of
from handwired.judge.checking.plans import (
    Plan,
    domain_plan,
    domain_sample_plan,
    every_string_plan,
    exhaustive_plan,
    sample_plan,
)
from handwired.judge.checking.proving import can_say, cases_plan
from handwired.judge.checking.report import Report, run
from handwired.judge.game.puzzle import Puzzle
from handwired.judge.game.scores import Score, score
from handwired.judge.kinds.domains import Domain, TooLargeToWalk
from handwired.weightfile import Model
from handwired.weightfile.axes import shown


@dataclass(frozen=True)
class Submission:
    """A weight file judged as an answer to a puzzle."""

    puzzle: Puzzle
    model: Model
    misfit: tuple[str, ...]  # how the file breaks the puzzle's vocab, n_ctx or caps; () when it fits
    report: Report | None  # every context judged by the rule; None when the file does not fit
    score: Score | None  # when solved

    @property
    def fits(self) -> bool:
        return not self.misfit

    @property
    def solved(self) -> bool:
        return self.score is not None

    @property
    def par(self) -> Score | None:
        return self.puzzle.par

    def __repr__(self) -> str:  # one line: the model and the report are long
        what = "does not fit" if not self.fits else ("solved" if self.solved else "not solved")
        return f"<Submission to {self.puzzle.name!r} of {self.model.source}: {what}>"

    @property
    def fitted_report(self) -> Report:
        """The report of a file that fits (one that does not is not run: its misfit error, raised)."""
        if self.report is None:
            raise self.misfit_error()
        return self.report

    def misfit_error(self) -> HandwiredError:
        """One line: what the puzzle expects and what the file has."""
        return _misfit_error(self.puzzle, self.model, self.misfit)


def require_fit(puzzle: Puzzle, model: Model) -> None:
    """Raise the one-line misfit error unless the file fits the puzzle's vocab, n_ctx and caps."""
    problems = fit_problems(puzzle, model)
    if problems:
        raise _misfit_error(puzzle, model, problems)


def _misfit_error(puzzle: Puzzle, model: Model, problems: list[str] | tuple[str, ...]) -> HandwiredError:
    return HandwiredError(f"{model.source}: does not fit puzzle {puzzle.name!r}: it expects " + "; ".join(problems))


def fit_problems(puzzle: Puzzle, model: Model) -> list[str]:
    """How a weight file breaks the puzzle's fixed vocab and n_ctx or its caps, in words."""
    problems = []
    if model.vocab != puzzle.vocab:
        order = " (in this order)" if sorted(model.vocab) == sorted(puzzle.vocab) else ""
        problems.append(f"vocab {', '.join(map(shown, puzzle.vocab))}{order}, the file has "
                        f"{', '.join(map(shown, model.vocab))}")
    if model.n_ctx != puzzle.n_ctx:
        problems.append(f"n_ctx {puzzle.n_ctx}, the file has {model.n_ctx}")
    caps = puzzle.caps
    for what, cap, has in (("n_embd", caps.n_embd, model.n_embd), ("n_head", caps.n_head, model.n_head),
                           ("blocks", caps.n_layer, model.n_layer)):
        if has > cap:
            problems.append(f"{what} at most {cap}, the file has {has}")
    with_mlp = [f"blocks[{i}]" for i, block in enumerate(model.params["blocks"]) if "mlp" in block]
    if with_mlp and not caps.mlp:
        problems.append(f"no MLP, the file has one in {', '.join(with_mlp)}")
    for i, width in enumerate(model.hidden):
        if caps.mlp and caps.hidden is not None and width > caps.hidden:
            problems.append(f"an MLP of at most {caps.hidden} hidden units, the file has {width} in blocks[{i}]")
    return problems


TREE_VOCAB = 64  # tokens: up to this many, every string's check is estimated and refused as --exhaustive's


def puzzle_plan(puzzle: Puzzle, model: Model, proof: bool = True, by_cases: bool | None = None) -> Plan:
    """Every context the puzzle judges: its domain's, else every string of length 1…n_ctx, each by its rule;
    ``proof``: with certified bounds. Every string is walked as a trie whatever the vocabulary; over a small one its
    estimate, and the refusal, are --exhaustive's (cost.exhaustive_seconds), beyond it a walk's (cost.walk_seconds).
    ``by_cases``: proved by cases (handwired.judge.checking.proving) when True; walked when False; by default (None)
    walked, but a domain too large to walk is proved by cases when its rule can say over them (else refused, as
    TooLargeToWalk: a sample is the check left)."""
    if by_cases:
        if not proof:
            raise HandwiredError("{by_cases} proves; {no_proof} skips the proof: choose one", ("by_cases", "no_proof"))
        return cases_plan(model, puzzle.rule, puzzle.domain)
    if by_cases is None and proof and puzzle.domain is not None and too_large(puzzle.domain) and can_say(
            puzzle.rule, space_of(puzzle.domain, model.n_vocab, model.n_ctx)):
        return cases_plan(model, puzzle.rule, puzzle.domain)
    if puzzle.domain is None:  # a puzzle is judged on every context: no sample, so only a smaller statement helps
        if model.n_vocab <= TREE_VOCAB:
            return exhaustive_plan(model, puzzle.rule, instead=(
                "a puzzle is judged on every one of its contexts, so only a statement with a smaller vocab or n_ctx "
                "(or a domain) makes the check shorter", ()), proof=proof)
        return every_string_plan(model, puzzle.rule, proof)
    return domain_plan(model, puzzle.domain, puzzle.rule, proof)


def puzzle_sample_plan(puzzle: Puzzle, model: Model, sample: int, seed: int, proof: bool = True) -> Plan:
    """``sample`` random contexts of those the puzzle judges (its domain's, drawn without enumerating it; else every
    string of length 1…n_ctx), each by its rule: a check of a model that fits, never the puzzle's verdict."""
    require_fit(puzzle, model)
    if puzzle.domain is None:
        return sample_plan(model, puzzle.rule, sample, seed, proof=proof)
    return domain_sample_plan(model, puzzle.domain, puzzle.rule, sample, seed, proof)


def too_large(domain: Domain) -> bool:
    """Whether a domain has too many inputs or tokens to walk at all (Domain.refuse_walk)."""
    try:
        domain.refuse_walk()
    except TooLargeToWalk:
        return True
    return False


def submit(puzzle: Puzzle, model: Model, show: int = FAILURES_SHOWN,
           progress: Callable[[int, int], None] | None = None,
           should_stop: Callable[[], bool] = lambda: False, proof: bool = True,
           by_cases: bool | None = None) -> Submission:
    """The whole verdict on ``model`` as an answer to ``puzzle``: fit, counts, failures, margin, score.

    A file that does not fit is not run: its submission holds only what it breaks. Without ``proof`` the contexts
    are judged in float64 alone, and the puzzle is not solved: only a proof scores. ``by_cases``: see
    :func:`puzzle_plan` (a proof by cases solves the puzzle only when every case is proved).
    """
    misfit = tuple(fit_problems(puzzle, model))
    if misfit:
        return Submission(puzzle, model, misfit, None, None)
    report = run(model, puzzle_plan(puzzle, model, proof, by_cases), show, progress, should_stop)
    return Submission(puzzle, model, (), report, score(model, report))
