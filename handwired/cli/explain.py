"""explain: every intermediate of the forward pass on one context, step by step."""

from pathlib import Path
from typing import Annotated

import typer

from handwired.cli.common import (
    BlockOption,
    ForceOption,
    HeadOption,
    HtmlOption,
    JsonOption,
    NoMaskOption,
    Output,
    PositionOption,
    ShowAllOption,
    SvgOption,
    WeightsOption,
    given_flags,
    weight_spec,
)
from handwired.engine.trace import trace
from handwired.errors import HandwiredError
from handwired.views import steps as explaining
from handwired.views.cost import refuse_slow_drawing, refuse_slow_explain
from handwired.views.matrices import explain_parts
from handwired.weightfile import load
from handwired.weightfile.writing import json_text

app = typer.Typer()

StepOption = Annotated[
    list[str] | None,
    typer.Option("--step", "-s", help=f"Steps to show, repeatable: {', '.join(explaining.CHOICES)}. Default: all."),
]


@app.command()
def explain(
    text: Annotated[str | None, typer.Argument(help="The context; default: the weight file's example.")] = None,
    weights: WeightsOption = None,
    step: StepOption = None,
    block: BlockOption = None,
    head: HeadOption = None,
    position: PositionOption = None,
    show_all: ShowAllOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
    no_mask: NoMaskOption = False,
    as_json: JsonOption = False,
) -> None:
    """Show every intermediate of the forward pass on TEXT, step by step."""
    model = load(weight_spec(None, weights))
    out = Output(svg, html, force, reading=(Path(model.source),), as_json=as_json)
    if as_json:
        narrowed = given_flags(step=step, block=block, head=head, position=position, all=show_all)
        if narrowed:
            raise HandwiredError(f"--json prints every intermediate of the context; {narrowed[0]} does not apply")
    if text is None:
        if model.example is None:
            raise HandwiredError(f"{model.source}: has no 'example'; give the context, "
                                 f"e.g. handwired explain {model.vocab[0] * 3}")
        text = model.example
    wanted = explaining.expand(step or [])
    refuse_slow_explain(model, min(len(text), model.n_ctx), wanted, block, head)
    run = trace(model, text, causal=not no_mask)
    if as_json:
        from handwired.views.record import record_json  # only for --json

        typer.echo(json_text(record_json(model, run)))
        return
    named = any(name in explaining.BLOCK_STEPS for name in step or [])
    panels = explaining.steps(model, run, wanted, block, head, position, every_step=named)
    refuse_slow_drawing(panels, show_all)

    out.show(lambda everything: explain_parts(model, run, panels, everything), show_all)
