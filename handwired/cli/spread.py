"""spread: one value a model computes, over every context a check judges, grouped, with the threshold that splits it."""

from pathlib import Path
from typing import Annotated

import typer

from handwired.cli.common import (
    ForceOption,
    HtmlOption,
    JsonOption,
    Output,
    SvgOption,
    WeightsOption,
    warn_notes,
    weight_spec,
)
from handwired.judge.workbench import spread as spreading
from handwired.views.spread import spread_json, spread_view
from handwired.weightfile import load
from handwired.weightfile.writing import json_text

app = typer.Typer()


@app.command()
def spread(
    value: Annotated[str, typer.Argument(
        help="HOOK:COLUMN, e.g. blocks.0.mlp.hook_pre:h0, blocks.0.hook_resid_post:tok, logits:b, or "
             "blocks.1.attn.hook_pattern:-2 (a key position; with --head on several heads); HOOK:A-B or HOOK:A/B, "
             "two columns' difference or ratio (logits:a-b); or lead, the right token's logit minus the best "
             "wrong one's.")],
    weights: WeightsOption = None,
    puzzle: Annotated[str | None, typer.Option(
        help="Every context this puzzle judges (a name or a statement file), with its rule's answers; default: the "
             "puzzle the file names.")] = None,
    every: Annotated[bool, typer.Option("--every", help="Every context of length 1…n_ctx, with no answers, even "
                                                         "when the file names a puzzle or has a target.")] = False,
    by: Annotated[str, typer.Option(help="Group by: answer, predicted, last-token or length. Default: answer, "
                                         "or predicted when there are no answers.")] = "",
    position: Annotated[int, typer.Option(help="The position read in each context; -1 is the last, "
                                               "-2 the one before.")] = -1,
    head: Annotated[int | None, typer.Option(help="The head, for an attention pattern or its scores.")] = None,
    as_json: JsonOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """The value of VALUE over every judged context, grouped by the right answer: ranges, histograms, threshold."""
    model = load(weight_spec(None, weights))
    out = Output(svg, html, force, reading=(Path(model.source),), as_json=as_json)
    probe = spreading.parse_value(model, value, head)
    source, notes = spreading.judged_source(model, puzzle, every)
    warn_notes(notes)
    result = spreading.spread(model, probe, source, by or ("answer" if source.rule is not None else "predicted"),
                              position)
    if as_json:
        typer.echo(json_text(spread_json(model, result), indent=2))
        return
    out.show(lambda everything: [spread_view(model, result)])
