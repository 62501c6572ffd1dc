"""spread: one value a model computes, over every context a check judges, grouped, with the threshold that splits it."""

from pathlib import Path
from typing import Annotated

import typer

from handwired.cli.checking import files_puzzle, warn_other_puzzle
from handwired.cli.common import ForceOption, HtmlOption, JsonOption, Output, SvgOption, WeightsOption, weight_spec
from handwired.errors import HandwiredError
from handwired.judge import spread as spreading
from handwired.judge.catalogue import load_puzzle
from handwired.views.spread import spread_json, spread_view
from handwired.weightfile import Model, load
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
    if puzzle is not None and every:
        raise HandwiredError("--puzzle and --every: choose one")
    probe = spreading.parse_value(model, value, head)
    source = _source(model, puzzle, every)
    result = spreading.spread(model, probe, source, by or ("answer" if source.rule is not None else "predicted"),
                              position)
    if as_json:
        typer.echo(json_text(spread_json(model, result), indent=2))
        return
    out.show(lambda everything: [spread_view(model, result)])


def _source(model: Model, puzzle: str | None, every: bool) -> spreading.Source:
    """The contexts: --puzzle's, else (unless --every) the puzzle the file names, else its target's, else all."""
    if puzzle is not None:
        judge = load_puzzle(puzzle)
        source = spreading.puzzle_source(judge, model)
        warn_other_puzzle(judge, model)
        return source
    named = None if every else files_puzzle(model)
    if named is not None:
        return spreading.puzzle_source(named, model)
    if model.target is not None and not every:
        return spreading.target_source(model, model.target)
    return spreading.every_source(model)
