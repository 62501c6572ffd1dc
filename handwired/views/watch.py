"""The live loop's pure parts: load a snapshot of a weight file, judge it, mark what changed, build the screen.

``handwired watch`` (in :mod:`handwired.cli.watch`) polls the file and calls
these; nothing here touches a terminal, so every part is testable on its own.

A :class:`Snapshot` is one load of the file: the model, the trace of the
context, the explain steps, the verdict and the shortest failure's headline, or
the error that stopped it; all of it is worked out while loading, so drawing
the screen runs no forward pass. A
:class:`State` keeps the latest good snapshot, the good one before it (whose
values the marks compare against) and the current error, if the file is
mid-edit.
"""

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.panel import Panel
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from handwired.engine import attribution
from handwired.engine.trace import Trace, trace
from handwired.errors import HandwiredError
from handwired.judge import judging
from handwired.judge.game.puzzle import Puzzle
from handwired.judge.judging import QUICK_EXHAUSTIVE, Choice, Verdict
from handwired.judge.workbench.compare import WeightChange, weight_changes
from handwired.views import steps as explaining
from handwired.views.cost import refuse_slow_explain
from handwired.views.failure import headline
from handwired.views.matrices import CHANGED, step_panel
from handwired.views.model import model_line, window_note
from handwired.views.numbers import number
from handwired.views.report import margin_line, proof_line
from handwired.weightfile import Model, parse, read_json
from handwired.weightfile.checker import known

FAILURES_SHOWN = 5
EDITS_SHOWN = 8


Judge = Callable[[Model], Verdict]


def judge(puzzle: Puzzle | None = None, proof: bool = True, limit: int = QUICK_EXHAUSTIVE) -> Judge:
    """Watch's judge, decided afresh at each save as the one decision decides it (handwired.judge.judging): the
    puzzle asked for, else the one the file names (as it names it at this save), else the file's target, on every
    context when there are at most ``limit``, else by the stream test; or nothing to check."""

    def judged(model: Model) -> Verdict:
        return judging.verdict(model, judging.decide(model, Choice(puzzle, proof=proof, quick=limit)), FAILURES_SHOWN)

    return judged


file_verdict = judge()  # no choice: the puzzle the file names, else its target


@dataclass(frozen=True)
class Snapshot:
    path: Path
    saved: float  # the file's modification time (the time of loading, if it is missing)
    model: Model | None = None
    trace: Trace | None = None
    steps: tuple[explaining.Step, ...] = ()
    verdict: Verdict | None = None
    errors: tuple[str, ...] = ()  # every problem, when the file could not be shown
    drawn: str = ""  # why this context is drawn, when it is not the one asked for
    headline: tuple[Text, ...] = ()  # the shortest failure's logit gap and the part that pushed it, if one fails

    @property
    def ok(self) -> bool:
        return not self.errors

    def loaded(self) -> tuple[Model, Trace, Verdict]:
        """The model, the drawn context's trace and the verdict of a snapshot that loaded (one that did not has
        its errors instead)."""
        if self.model is None or self.trace is None or self.verdict is None:
            raise ValueError(f"{self.path}: did not load: {'; '.join(self.errors)}")
        return self.model, self.trace, self.verdict


def fingerprint(path: Path) -> tuple[int, ...] | None:
    """What tells one save from the next without reading the file; None while it is missing."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino


def load_snapshot(
    path: Path,
    text: str | None = None,
    wanted: list[str] | tuple[str, ...] = explaining.STEPS,
    block: int | None = None,
    head: int | None = None,
    judge: Judge = file_verdict,
    every_step: bool = False,
    position: int | None = None,
    spell: Callable[[str], str] = str,
) -> Snapshot:
    """Read, validate and run the file as it is now. Never raises for a bad file: the snapshot holds the errors.

    ``wanted``, ``block``, ``head``, ``every_step`` and ``position`` choose the steps as for
    :func:`handwired.views.steps.steps`; ``spell`` writes a parameter an error names as the caller does.
    """
    try:
        saved = path.stat().st_mtime
    except OSError:
        saved = time.time()
    try:
        parsed, problems = parse(read_json(path), source=str(path))
        if problems:
            return Snapshot(path, saved, errors=tuple(problems))
        model = known(parsed)
        verdict = judge(model)
        context, drawn = _context(model, text, verdict)
        if context is None:
            raise HandwiredError(f'the file has no "example"; give the context: handwired watch {path} '
                                 f"{model.vocab[0] * 3}")
        refuse_slow_explain(model, min(len(context), model.n_ctx), wanted, block, head)  # the screen is cropped
        trace_ = trace(model, context)
        steps = tuple(explaining.steps(model, trace_, list(wanted), block, head, position, every_step))
        return Snapshot(path, saved, model, trace_, steps, verdict, drawn=drawn,
                        headline=_failure_headline(model, verdict, trace_))
    except HandwiredError as error:
        return Snapshot(path, saved, errors=(error.render(spell),))


def _context(model: Model, text: str | None, verdict: Verdict) -> tuple[str | None, str]:
    """The context to draw: the one asked for; else, under a puzzle, its shortest failure while there is one;
    else the file's example. And why, in words, when it is not the one asked for."""
    if text is not None:
        return text, ""
    report = verdict.report
    failure = report.shortest_failure if report is not None else None
    if verdict.answers and failure is not None:
        return failure.context, "the shortest failing context"
    if verdict.answers and report is not None and report.ok:
        return model.example, "the file's example: every context passes"
    return model.example, ""


def _failure_headline(model: Model, verdict: Verdict, drawn: Trace) -> tuple[Text, ...]:
    """The shortest failure's headline, on the loading thread; its trace is the drawn one when that is the
    failing context (under a puzzle, unless another was asked for), so the pass is not run twice."""
    failure = verdict.report.shortest_failure if verdict.report is not None else None
    if failure is None:
        return ()
    run = drawn if drawn.text == failure.context else trace(model, failure.context)
    return tuple(headline(model, failure, attribution.attribute(model, run)))


# ---------------------------------------------------------------- what changed


def changed_cells(previous: Snapshot | None, current: Snapshot) -> dict[tuple[str, str], np.ndarray]:
    """(step title, matrix title) -> [rows, cols] bool: the cells whose value differs from the previous snapshot.

    Only matrices present in both with the same row and column labels are
    compared; a matrix that is new or has changed shape has nothing to mark.
    """
    if previous is None or not previous.ok or not current.ok:
        return {}
    before = {(step.title, m.title): m for step in previous.steps for m in step.matrices}
    marks = {}
    for step in current.steps:
        for matrix in step.matrices:
            old = before.get((step.title, matrix.title))
            if old is None or old.rows != matrix.rows or old.cols != matrix.cols:
                continue
            same = (old.values == matrix.values) | (np.isnan(old.values) & np.isnan(matrix.values))
            if not same.all():
                marks[(step.title, matrix.title)] = ~same
    return marks


def edited_weights(previous: Snapshot | None, current: Snapshot) -> list[WeightChange] | str:
    """The weights changed since the previous good version; or, when comparing them would take too long on every
    save (see compare.refuse_slow_weights), why they are not compared."""
    if previous is None or not previous.ok or not current.ok:
        return []
    try:
        return weight_changes(previous.loaded()[0], current.loaded()[0])
    except HandwiredError as error:  # said on the screen, never the end of watch
        return str(error)


@dataclass(frozen=True)
class State:
    good: Snapshot | None = None  # the latest snapshot that loaded
    before: Snapshot | None = None  # the good one before it: the marks compare against it
    failed: Snapshot | None = None  # the file as it is now, when it does not load

    def advance(self, snapshot: Snapshot) -> "State":
        if snapshot.ok:
            return State(snapshot, self.good, None)
        return replace(self, failed=snapshot)


# ---------------------------------------------------------------- the screen


def _clock(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(seconds))


def verdict_view(verdict: Verdict, earlier: Verdict | None = None, failure_headline: Sequence[Text] = ()) -> Group:
    """The verdict's lines, then the shortest failure's headline (its logit gap and the part that pushed it)."""
    report = verdict.report
    if report is None:
        return Group(Text.assemble((f"{verdict.how}: ", "bold"),
                                   (verdict.reason, "yellow" if verdict.how.startswith("puzzle") else "dim")))
    warning = [Text(str(note), style="yellow") for note in verdict.notes]
    ok = report.ok
    line = Text.assemble(
        ("PASS " if ok else "FAIL ", "bold green" if ok else "bold red"), (verdict.how, "bold"), ": ",
        f"{report.passed:,} passed, ", (f"{report.failed:,} failed", "red" if report.failed else ""),
        f", {report.ambiguous + report.out_of_domain:,} not judged of {report.checked:,}",
    )
    if earlier is not None and earlier.report is not None and (earlier.report.passed, earlier.report.failed) != (
            report.passed, report.failed):
        line.append(f"  (previous version: {earlier.report.passed:,} passed, {earlier.report.failed:,} failed)", "dim")
    parts: list = [line, *warning]
    proof = proof_line(report)  # proved on every context, or the first that is not
    if proof is not None:
        parts.append(proof)
    if report.margin is not None:
        parts.append(margin_line(report.margin, report.near_miss()))
    if report.failures:
        shown = ", ".join(f"{f.context!r} → {f.predicted}{' (tie)' if f.tied else ''} "
                          f"(expected {' or '.join(f.acceptable)})"
                          for f in report.failures)
        more = f" and {report.failed - len(report.failures):,} more" if report.failed > len(report.failures) else ""
        parts.append(Text.assemble(("shortest failures: ", "dim"), shown, more, style="red"))
        parts += failure_headline
    return Group(*parts)


def edits_view(changes: list[WeightChange]) -> Text:
    def entry(value: float | None) -> str:
        return "—" if value is None else number(value)

    shown = [f"{c.label} {entry(c.old)} → {entry(c.new)}" for c in changes[:EDITS_SHOWN]]
    more = f", and {len(changes) - EDITS_SHOWN:,} more" if len(changes) > EDITS_SHOWN else ""
    return Text.assemble(("edited since the previous version: ", "dim"), ", ".join(shown) + more)


def error_view(failed: Snapshot, good: Snapshot | None) -> Panel:
    lines = [Text(problem) for problem in failed.errors]
    after = (f"Showing the last version that loaded, saved {_clock(good.saved)}." if good is not None
             else "Nothing to show until it loads.")
    return Panel(
        Group(*lines, Text(f"Still watching: save again to redraw. {after}", style="italic")),
        title=Text(f"{failed.path} does not load ({_clock(failed.saved)})", style="bold red"),
        title_align="left", border_style="red",
    )


def screen(state: State, header: str = "", show_all: bool = False) -> Group:
    """Everything ``watch`` shows for ``state``: header, error, verdict, edits, then the explain view, marked.

    All-zero rows and columns fold as in ``explain`` unless ``show_all``; a changed cell never folds.
    """
    parts: list = []
    if header:
        parts.append(Text(header, style="reverse"))
    if state.failed is not None:
        parts.append(error_view(state.failed, state.good))
    good = state.good
    if good is None:
        return Group(*parts)
    model, run, verdict = good.loaded()
    parts.append(verdict_view(verdict, state.before.loaded()[2] if state.before is not None else None, good.headline))
    edits = edited_weights(state.before, good)
    if isinstance(edits, str):
        parts.append(Text(f"edited since the previous version: not compared ({edits})", style="dim"))
    elif edits:
        parts.append(edits_view(edits))
    marks = changed_cells(state.before, good)
    parts.append(Text.assemble(model_line(model), ("  saved ", "dim"), _clock(good.saved)))
    parts.append(Text.assemble(("context ", "dim"), (run.window, "bold"), f"  ({len(run.window)} tokens)",
                               (f"  {good.drawn}" if good.drawn else "", "dim")))
    note = window_note(model, run)
    if note:
        parts.append(note)
    if state.before is not None:
        parts.append(Text(_changes_line(state.before, good, marks), style="dim"))
    for step in good.steps:
        parts.append(step_panel(step, show_all, changed={matrix: mask for (title, matrix), mask in marks.items()
                                                                 if title == step.title}))
    return Group(*parts)


def _changes_line(before: Snapshot, now: Snapshot, marks: dict) -> str:
    """How many values of the view changed since the previous version, or why none can be compared."""
    window = before.loaded()[1].window if before.ok else None
    if window is not None and window != now.loaded()[1].window:  # e.g. the failure fixed, the example drawn now
        return f"another context than the previous version's ({window}): no value is compared"
    count = sum(int(mask.sum()) for mask in marks.values())
    if not count:
        return "no value in this view changed from the previous version"
    return f"{CHANGED} marks a value that changed from the previous version ({count} value{'s' if count != 1 else ''})"


class Cropped:
    """A screen cut to the height it is given, ending with a line that names what is below.

    A live view taller than the window cannot scroll; rather than cut silently,
    the last line names the panels that did not fit and how to see them. The
    parts are drawn one at a time and only until the screen is full, so a tall
    view costs no more to redraw than what shows.
    """

    def __init__(self, screen: Group, hint: str = "narrow the view with --step, --block or --head") -> None:
        self.parts = list(screen.renderables)
        self.hint = hint

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        height = options.height or console.height
        lines: list[list[Segment]] = []
        below: list[str] = []
        for index, part in enumerate(self.parts):
            lines += console.render_lines(part, options.update(height=None), pad=False)
            if len(lines) > height:
                below = [_name(p) for p in self.parts[index:]]  # this one is cut, the rest not drawn
                break
        if below:
            lines = lines[: height - 1] + [[Segment(self._note(below, options.max_width), Style(reverse=True))]]
        for index, line in enumerate(lines):
            yield from line
            if index < len(lines) - 1:
                yield Segment.line()

    def _note(self, below: list[str], width: int) -> str:
        names = [name for name in below if name]
        shown = len(names)
        while True:  # as many of the names as fit before the hint
            listed = " ".join(names[:shown]) + (" …" if shown < len(names) else "")
            note = f"… below: {listed.strip() + ' · ' if listed.strip() else ''}{self.hint}"
            if len(note) <= width or shown == 0:
                return note[:width]
            shown -= 1


def _name(part) -> str:
    """A panel's name for the cut line: the start of its title ("[pattern]"), else nothing."""
    if isinstance(part, Panel) and isinstance(part.title, Text):
        return part.title.plain.split(" ")[0]
    return ""
