"""Model commands: predict, explain, complete."""

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.text import Text

from handwired import explain as explaining
from handwired import render, run
from handwired.cli.app import (BlockOption, ForceOption, HeadOption, HtmlOption, Output, PositionOption, ShowAllOption,
                               StepOption, SvgOption, WeightsOption, app, stdout, user_errors)
from handwired.errors import HandwiredError
from handwired.weightfile import DEFAULT_MODEL, load

NoMaskOption = Annotated[
    bool, typer.Option("--no-mask", help="Run without the causal mask: bidirectional self-attention, as an encoder.")
]


@app.command()
@user_errors
def predict(
    text: Annotated[str, typer.Argument(help="The context, one character per token, e.g. aabaa.")],
    weights: WeightsOption = DEFAULT_MODEL,
    all_positions: Annotated[bool, typer.Option("--all", help="Show the prediction at every position.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable result.")] = False,
    no_mask: NoMaskOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """Predict the next token after TEXT."""
    model = load(weights)
    out = Output(svg, html, force, reading=(Path(model.source),), as_json=as_json)
    trace = run.trace(model, text, causal=not no_mask)
    if as_json:
        typer.echo(json.dumps(_prediction_json(model, trace, all_positions), indent=2, ensure_ascii=False))
    else:
        out.show(lambda everything: [render.prediction_view(model, trace, all_positions)])


def _prediction_json(model, trace: run.Trace, all_positions: bool) -> dict:
    def at(i: int) -> dict:
        best, tied = run.top_token(trace.logits[i])
        return {
            "position": i,
            "token": trace.window[i],
            "prediction": model.vocab[best],
            "tied": tied,
            "logits": trace.logits[i].tolist(),
            "probabilities": trace.probs[i].tolist(),
        }

    last = at(len(trace.window) - 1)
    result = {
        "model": model.name,
        "weights": model.source,
        "vocab": list(model.vocab),
        "text": trace.text,
        "window": trace.window,
        "truncated": trace.truncated,
        "causal": trace.causal,
        "tokens": trace.tokens.tolist(),
        "prediction": last["prediction"],
        "tied": last["tied"],
        "logits": last["logits"],
        "probabilities": last["probabilities"],
    }
    if all_positions:
        result["positions"] = [at(i) for i in range(len(trace.window))]
    return result


@app.command()
@user_errors
def explain(
    text: Annotated[Optional[str], typer.Argument(help="The context; default: the weight file's example.")] = None,
    weights: WeightsOption = DEFAULT_MODEL,
    step: StepOption = None,
    block: BlockOption = None,
    head: HeadOption = None,
    position: PositionOption = None,
    show_all: ShowAllOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
    no_mask: NoMaskOption = False,
) -> None:
    """Show every intermediate of the forward pass on TEXT, step by step."""
    model = load(weights)
    out = Output(svg, html, force, reading=(Path(model.source),))
    if text is None:
        if model.example is None:
            raise HandwiredError(f"{model.source}: has no 'example'; give the context, e.g. handwired explain {model.vocab[0] * 3}")
        text = model.example
    wanted = explaining.expand(step or [])
    trace = run.trace(model, text, causal=not no_mask)
    named = any(name in explaining.BLOCK_STEPS for name in step or [])
    panels = explaining.steps(model, trace, wanted, block, head, position, every_step=named)

    def view(everything: bool) -> list:
        notes = [note for note in (render.window_note(model, trace), render.mask_note(trace)) if note]
        return [render.model_line(model),
                Text.assemble(("context ", "dim"), (trace.window, "bold"), f"  ({len(trace.window)} tokens)"),
                *notes,
                *[render.step_panel(panel, everything) for panel in panels]]

    out.show(view, show_all)


@app.command()
@user_errors
def complete(
    text: Annotated[str, typer.Argument(help="The context to continue.")],
    n: Annotated[int, typer.Option("-n", help="How many tokens to generate.")] = 10,
    weights: WeightsOption = DEFAULT_MODEL,
) -> None:
    """Continue TEXT greedily, the model always seeing the last n_ctx tokens."""
    model = load(weights)
    completed = run.complete(model, text, n)
    stdout().print(Text.assemble((text, "bold"), (completed[len(text):], "green")), soft_wrap=True)
