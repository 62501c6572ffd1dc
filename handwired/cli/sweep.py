"""sweep: the verdict at each value of one or two of the file's constants, and the interval where it passes."""

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from handwired.cli.checking import progress_and_stop
from handwired.cli.common import (
    EXIT_CHECK_FAILED,
    ForceOption,
    HtmlOption,
    JsonOption,
    Output,
    SvgOption,
    stderr,
    warn_notes,
)
from handwired.errors import HandwiredError
from handwired.judge.workbench import spread as spreading
from handwired.judge.workbench.sweep import check_steps, parse_range, refuse_long
from handwired.judge.workbench.sweep import sweep as sweeping
from handwired.views.sweep import sweep_json, sweep_view
from handwired.weightfile import Model, load
from handwired.weightfile.writing import json_text

app = typer.Typer()
STEPS = {1: 50, 2: 15}  # values per constant by default, for one constant and for two
JudgeOption = Annotated[str | None, typer.Option(
    "--puzzle", help="Judge by this puzzle; default: the one the file names, else its target on every context.")]


def judged_source(model: Model, puzzle: str | None) -> spreading.Source:
    """The contexts check judges the file on: --puzzle's, else the puzzle the file names, else every context by
    the file's target (handwired.judge.judging decides)."""
    source, notes = spreading.judged_source(model, puzzle, required=True)
    warn_notes(notes)
    return source


@contextmanager
def working(as_json: bool, noun: str) -> Iterator[Callable[[int, int], None]]:
    """progress(done, total) for a long sweep or ablation: check's progress bar on a terminal, and Ctrl-C
    stopping it (exit code 130) between two variants (``noun``: values, parts), saying how far it got."""
    stopped: list[str] = []
    try:
        with progress_and_stop(not as_json) as (progress, should_stop):
            def tick(done: int, total: int) -> None:
                progress(done, total)
                if should_stop():
                    stopped.append(f"stopped by Ctrl-C with {done:,} of the {total:,} {noun} judged; nothing is shown")
                    raise KeyboardInterrupt

            yield tick
    finally:  # once the progress bar is gone
        for line in stopped:
            stderr().print(line, soft_wrap=True)


def show(out: Output, as_json: bool, data: Callable[[], dict], view: Callable[[], object]) -> None:
    """The result as JSON on stdout, or the view on the terminal (and saved with --svg/--html)."""
    if as_json:
        typer.echo(json_text(finite(data()), indent=2))
    else:
        out.show(lambda everything: [view()])


def finite(data):
    """JSON has no infinity: a lead of +inf (every token right) is written as null."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {key: finite(item) for key, item in data.items()}
    if isinstance(data, list):
        return [finite(item) for item in data]
    return data


@app.command()
def sweep(
    file: Annotated[str, typer.Argument(metavar="NAME|PATH", help="A weight file or bundled model.")],
    ranges: Annotated[list[str], typer.Argument(metavar="NAME=LO..HI...",
                                                help="One or two of the file's constants and their ranges, "
                                                     "e.g. Lg=1..4096; Lg=1..4096:log spaces that one's values on a "
                                                     "log scale.")],
    steps: Annotated[int | None, typer.Option(help="Values per constant; default 50 for one, 15 for two.")] = None,
    log: Annotated[bool, typer.Option("--log", help="Space every constant's values on a log scale (LO > 0); "
                                                    "NAME=LO..HI:log, one constant's.")] = False,
    precision: Annotated[float | None, typer.Option(
        help="Refine each edge of a passing interval by bisection to this width; default: 1/1024 of the "
             "grid step it lies in.")] = None,
    puzzle: JudgeOption = None,
    as_json: JsonOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """The verdict at every value of one or two constants; exit code 0 if some value passes every context."""
    if not 1 <= len(ranges) <= 2:
        raise HandwiredError(f"{len(ranges)} ranges: sweep one constant (a line) or two (a heatmap)")
    steps = STEPS[len(ranges)] if steps is None else steps
    check_steps(steps, len(ranges))
    model = load(file)
    out = Output(svg, html, force, reading=(Path(model.source),), as_json=as_json)
    swept = [parse_range(model, text, steps, log) for text in ranges]
    source = judged_source(model, puzzle)
    refuse_long(model, source, swept, precision)
    with working(as_json, "values") as progress:
        result = sweeping(model, source, swept, precision, progress)
    show(out, as_json, lambda: sweep_json(model, result), lambda: sweep_view(model, result))
    if not any(point.verdict.ok for point in result.points):
        raise typer.Exit(EXIT_CHECK_FAILED)
