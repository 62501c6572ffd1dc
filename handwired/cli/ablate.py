"""ablate: the verdict with each part of the model removed, and the parts it does not need."""

from pathlib import Path
from typing import Annotated

import typer

from handwired.cli.common import EXIT_CHECK_FAILED, ForceOption, HtmlOption, JsonOption, Output, SvgOption
from handwired.cli.sweep import JudgeOption, judged_source, show, working
from handwired.judge.workbench.ablate import ablate as ablating
from handwired.judge.workbench.ablate import refuse_long
from handwired.views.ablate import ablate_json, ablate_view
from handwired.weightfile import load

app = typer.Typer()


@app.command()
def ablate(
    file: Annotated[str, typer.Argument(metavar="NAME|PATH", help="A weight file or bundled model.")],
    entries: Annotated[bool, typer.Option("--entries", help="Also remove each non-zero weight entry in turn.")
                       ] = False,
    mean: Annotated[bool, typer.Option("--mean", help="Replace a head, unit, attention or MLP by its mean output "
                                                      "over the judged contexts, instead of zero.")] = False,
    puzzle: JudgeOption = None,
    as_json: JsonOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """Remove each head, MLP unit, attention, MLP and ln_f in turn (and each weight entry with --entries) and judge
    the rest; exit code 0 if the model itself passes."""
    model = load(file)
    out = Output(svg, html, force, reading=(Path(model.source),), as_json=as_json)
    source = judged_source(model, puzzle)
    refuse_long(model, source, entries)
    with working(as_json, "parts") as progress:
        result = ablating(model, source, entries, mean, progress)
    show(out, as_json, lambda: ablate_json(model, result), lambda: ablate_view(model, result))
    if not result.base.ok:
        raise typer.Exit(EXIT_CHECK_FAILED)
