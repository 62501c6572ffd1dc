"""Running a check from the command line: a progress bar on long work, Ctrl-C, and the puzzle verdict.

``check`` (by the puzzle a file names, or ``--puzzle``) and ``puzzles check`` show the same verdict through
:func:`puzzle_verdict`; which puzzle judges and the verdict itself are the core's
(:func:`handwired.judge.judging.decide`, :func:`handwired.judge.judging.verdict`).
"""

import shlex
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from handwired.cli.common import EXIT_CHECK_FAILED, EXIT_INTERRUPTED, Output, warn, warn_notes
from handwired.defaults import DEFAULT_MODEL
from handwired.errors import HandwiredError
from handwired.judge.checking.proving import spent_note
from handwired.judge.checking.report import Report
from handwired.judge.game import progress as progressing
from handwired.judge.game.puzzle import Puzzle
from handwired.judge.judging import Choice, Judging, decide, verdict
from handwired.judge.kinds.domains import SAMPLE_INSTEAD, TooLargeToWalk
from handwired.views.puzzles import puzzle_line, score_view, submission_json, unsolved_line
from handwired.views.report import failure_view
from handwired.views.terminal import SafeConsole
from handwired.weightfile import Model, bundled_models, load
from handwired.weightfile.jsonfile import check_path
from handwired.weightfile.writing import json_text

BAR_AFTER = 1.0  # seconds: a check quicker than this never shows a progress bar
COUNTED = 10**9  # contexts: up to this many the bar counts them, beyond (a proof by cases) it shows a percentage


@contextmanager
def progress_and_stop(show_progress: bool) -> Iterator[tuple[Callable[[int, int], None], Callable[[], bool]]]:
    """(progress, should_stop) for a long run: a bar on stderr once it has taken a second (only on a
    terminal), and Ctrl-C asking the run to stop between batches instead of killing it."""
    stop = {"asked": False}
    started = time.monotonic()
    bar: dict = {}
    console = SafeConsole(stderr=True)

    def on_interrupt(signum, frame):
        stop["asked"] = True

    def progress(done: int, total: int) -> None:
        if not show_progress or not console.is_terminal or time.monotonic() - started < BAR_AFTER:
            return
        if not bar:
            # loaded here, with the first bar: a check that ends within BAR_AFTER (every small puzzle's) never needs it
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeRemainingColumn,
            )

            done_column = MofNCompleteColumn() if total <= COUNTED else TaskProgressColumn()  # a proof by cases: %
            bar["progress"] = Progress(TextColumn("checking"), BarColumn(), done_column, TimeRemainingColumn(),
                                       console=console, transient=True)
            bar["task"] = bar["progress"].add_task("check", total=total)
            bar["progress"].start()
        bar["progress"].update(bar["task"], completed=done)

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield progress, lambda: stop["asked"]
    finally:
        signal.signal(signal.SIGINT, previous)
        if bar:
            bar["progress"].stop()


def warn_spent(report: Report) -> None:
    """After a proof by cases that the time allowed ran out on: how to allow more, on stderr."""
    note = spent_note(report)
    if note is not None:
        warn_notes((note,))


def explain_command(model: Model, weights: str, context: str) -> str:
    """The explain command that shows a failing context's every step with nothing folded."""
    again = ["handwired", "explain", context, *(["-w", weights] if weights != DEFAULT_MODEL else []), "--all"]
    return shlex.join(again)


def load_answer(puzzle: Puzzle, weights: str) -> Model:
    """The player's weight file; a missing one points at the command that writes a starter."""
    check_path(weights)
    if not Path(weights).exists() and weights not in bundled_models():
        raise HandwiredError(f"{weights}: no such file; write a starter with handwired puzzles start "
                             f"{shlex.quote(puzzle.ref)} -o {shlex.quote(weights)}")
    return load(weights)


def puzzle_verdict(puzzle: Puzzle, weights: str, show: int, near_miss: float, as_json: bool,
                   svg: Path | None = None, html: Path | None = None, force: bool = False,
                   show_all: bool = False, model: Model | None = None, judging: Judging | None = None,
                   proof: bool = True, by_cases: bool | None = None) -> None:
    """Judge a weight file (or ``model``, loaded already) as an answer to a puzzle (as ``judging`` decided, else as
    asked for), record the player's progress, and show the verdict and its notes."""
    model = model or load_answer(puzzle, weights)
    judging = judging or decide(model, Choice(puzzle=puzzle, proof=proof, by_cases=by_cases))
    out = Output(svg, html, force, reading=(Path(model.source),), as_json=as_json)
    with progress_and_stop(not as_json) as (progress, should_stop):
        try:
            submission = verdict(model, judging, show, progress, should_stop).submission
        except TooLargeToWalk as error:
            again = shlex.join(["handwired", "check", weights, "--puzzle", puzzle.ref, "--sample", str(SAMPLE_INSTEAD)])
            raise HandwiredError(f"{puzzle.source}: {error.problem}; check a random sample instead: {again}") from None
    assert submission is not None, "a puzzle's answer is judged by its submission"
    if not submission.fits:
        raise submission.misfit_error()
    warn_notes(judging.notes)
    report = submission.fitted_report
    player = progressing.load(warn=warn)
    best_before = player.best(puzzle.key)
    new_best = player.record(puzzle.key, submission.score) if submission.score is not None else False
    if as_json:
        typer.echo(json_text(submission_json(submission, player.best(puzzle.key), new_best, near_miss), indent=2))
    else:
        def view(everything: bool) -> list:
            failure = report.shortest_failure
            reveal = explain_command(model, weights, failure.context) if failure is not None else None
            parts: list = [puzzle_line(puzzle), *failure_view(model, report, near_miss, everything, reveal)]
            if submission.solved:
                parts.append(score_view(submission, best_before, new_best))
            elif not report.interrupted:
                parts.append(unsolved_line(submission))
            return parts

        out.show(view, show_all)
    warn_spent(report)
    if report.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if not submission.solved:
        raise typer.Exit(EXIT_CHECK_FAILED)
