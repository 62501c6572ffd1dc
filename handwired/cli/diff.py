"""diff: the weights two files disagree on, and the contexts whose answer that moves."""

import json
from pathlib import Path
from typing import Annotated

import typer

from handwired.cli.common import EXIT_INTERRUPTED, ForceOption, HtmlOption, JsonOption, Output, SvgOption, stderr
from handwired.defaults import CHANGES_SHOWN, SEED
from handwired.judge.compare import compare
from handwired.views.diff import diff_json, diff_view
from handwired.weightfile import load

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
    as_json: JsonOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """List the weights that differ, by label, and every context whose prediction or margin changed."""
    before, after = load(old), load(new)
    out = Output(svg, html, force, reading=(Path(before.source), Path(after.source)), as_json=as_json)
    try:
        result = compare(before, after, sample, seed, show)
    except KeyboardInterrupt:
        stderr().print("interrupted: nothing compared is reported")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if as_json:
        typer.echo(json.dumps(diff_json(before, after, result), indent=2, ensure_ascii=False))
        return
    out.show(lambda everything: [diff_view(before, after, result)])
