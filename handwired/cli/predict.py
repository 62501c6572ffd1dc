"""predict: the next token after a context, with its logit and probability."""

import json
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
from handwired.weightfile import load

app = typer.Typer()


@app.command()
def predict(
    text: Annotated[str, typer.Argument(help="The context, one character per token, e.g. aabaa.")],
    weights: WeightsOption = None,
    every_position: Annotated[
        bool,
        typer.Option("--every-position", help="Show the prediction at every position."),
    ] = False,
    as_json: JsonOption = False,
    no_mask: NoMaskOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """Predict the next token after TEXT."""
    model = load(weight_spec(None, weights))
    out = Output(svg, html, force, reading=(Path(model.source),), as_json=as_json)
    run = trace(model, text, causal=not no_mask)
    if as_json:
        typer.echo(json.dumps(prediction_json(model, run, every_position), indent=2, ensure_ascii=False))
    else:
        out.show(lambda everything: [prediction_view(model, run, every_position)])
