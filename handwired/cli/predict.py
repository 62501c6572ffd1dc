"""predict: the next token after a context, with its logit and probability."""

from pathlib import Path
from typing import Annotated

import typer

from handwired.cli.common import (
    ForceOption,
    HtmlOption,
    JsonOption,
    NoMaskOption,
    Output,
    SvgOption,
    WeightsOption,
    weight_spec,
)
from handwired.engine.trace import trace
from handwired.views.model import prediction_json, prediction_view
from handwired.weightfile import Model, load
from handwired.weightfile.writing import json_text

app = typer.Typer()

# Positions × n_embd × blocks below which predict takes milliseconds: the estimate is not even imported.
WORTH_ESTIMATING = 2**16


@app.command()
def predict(
    text: Annotated[str, typer.Argument(help="The context, one character per token, e.g. aabaa.")],
    weights: WeightsOption = None,
    every_position: Annotated[
        bool,
        typer.Option("--every-position", help="Show the prediction at every position."),
    ] = False,
    puzzle: Annotated[
        str | None, typer.Option(help="Also show this puzzle's answer (default: the one the file names).")
    ] = None,
    as_json: JsonOption = False,
    no_mask: NoMaskOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """Predict the next token after TEXT."""
    model = load(weight_spec(None, weights))
    out = Output(svg, html, force, reading=(Path(model.source),), as_json=as_json)
    judge = _puzzle(model, puzzle) if puzzle is not None or model.puzzle is not None else None  # (*)
    _refuse_slow(model, text, every_position)
    run = trace(model, text, causal=not no_mask)  # refuses, before any array, a pass too large for memory
    if as_json:
        data = prediction_json(model, run, every_position)
        if judge is not None:  # the game's modules load only when a puzzle judges (see _puzzle)
            from handwired.views.puzzles import rule_answers

            data["puzzle"] = {"name": judge.name, "answers": rule_answers(judge, model, run, every_position)}
        typer.echo(json_text(data, indent=2))
    else:
        parts: list = [prediction_view(model, run, every_position)]
        if judge is not None:
            from handwired.views.puzzles import rule_view

            parts.append(rule_view(judge, model, run, every_position))
        out.show(lambda everything: parts)


def _refuse_slow(model: Model, text: str, every_position: bool) -> None:
    """The time estimate, loaded only for a pass large enough to need one: predict is the command that must start
    quickest."""
    length = min(len(model.encode(text)), model.n_ctx)
    if length * model.n_embd * max(1, model.n_layer) >= WORTH_ESTIMATING:
        from handwired.views.cost import refuse_slow_predict

        refuse_slow_predict(model, length, every_position)


def _puzzle(model: Model, name: str | None):
    """The puzzle whose rule is shown beside the model: --puzzle, else the file's, as the one decision chooses it.
    (*) Imported only when there may be one, which is all predict reads of the file's puzzle to choose: predict is
    the command that must start quickest, and loads nothing of the judge otherwise."""
    from handwired.cli.common import warn_notes
    from handwired.judge.judging import chosen_puzzle

    puzzle, notes = chosen_puzzle((model,), name)
    warn_notes(notes)
    return puzzle
