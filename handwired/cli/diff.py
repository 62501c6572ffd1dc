"""diff: the weights two files disagree on, and the contexts whose answer that moves."""

from pathlib import Path
from typing import Annotated

import typer

from handwired.cli.common import (
    EXIT_INTERRUPTED,
    ForceOption,
    HtmlOption,
    JsonOption,
    Output,
    SvgOption,
    stderr,
    warn_notes,
)
from handwired.defaults import CHANGES_SHOWN, SEED
from handwired.errors import HandwiredError
from handwired.judge.checking.plans import Plan
from handwired.judge.game.verdict import puzzle_plan
from handwired.judge.judging import chosen_puzzle
from handwired.judge.workbench.compare import compare, most_changes
from handwired.views.cost import refuse_slow_diff
from handwired.views.diff import diff_json, diff_view
from handwired.weightfile import Model, load
from handwired.weightfile.writing import json_text

app = typer.Typer()


@app.command()
def diff(
    old: Annotated[
        str,
        typer.Argument(metavar="OLD", help="The weight file before the edit (or a bundled model's name)."),
    ],
    new: Annotated[str, typer.Argument(metavar="NEW", help="The weight file after the edit.")],
    show: Annotated[int, typer.Option(help="How many changed contexts to list, shortest first.")] = CHANGES_SHOWN,
    sample: Annotated[
        int | None, typer.Option(help="Compare this many random contexts instead of every one.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Random seed for --sample.")] = SEED,
    puzzle: Annotated[
        str | None, typer.Option(help="Compare on this puzzle's contexts, each change fixed, broken or margin only; "
                                      "default: the puzzle the new (or old) file names, unless --sample.")
    ] = None,
    as_json: JsonOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """List the weights that differ, by label, and every context whose prediction or margin changed (on a puzzle's
    contexts when the files name one: fixed, broken or margin only)."""
    before, after = load(old), load(new)
    out = Output(svg, html, force, reading=(Path(before.source), Path(after.source)), as_json=as_json)
    judging = _puzzle(before, after, puzzle, sample)
    refuse_slow_diff(most_changes(before, after), as_json)  # before any is made: a bound, counted as arrays
    try:
        result = compare(before, after, sample, seed, show, puzzle=judging)
    except KeyboardInterrupt:
        stderr().print("interrupted: nothing compared is reported")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if as_json:
        typer.echo(json_text(diff_json(before, after, result), indent=2))
        return
    out.show(lambda everything: [diff_view(before, after, result)])


def _puzzle(before: Model, after: Model, name: str | None, sample: int | None) -> tuple[str, Plan] | None:
    """The puzzle that judges the comparison, and its plan on the old file: --puzzle, else the one a file names."""
    if name is not None and sample is not None:
        raise HandwiredError("--puzzle compares every context the puzzle judges; --sample does not apply")
    if name is None and sample is not None:
        return None
    puzzle, notes = chosen_puzzle((before, after), name)
    warn_notes(notes)
    return None if puzzle is None else (puzzle.name, puzzle_plan(puzzle, before, proof=False))
