"""complete: continue a context greedily."""

from typing import Annotated

import typer
from rich.text import Text

from handwired.cli.common import WeightsOption, stdout, weight_spec
from handwired.defaults import COMPLETE_TOKENS
from handwired.engine.generate import complete as continue_text
from handwired.views.cost import refuse_slow_complete
from handwired.weightfile import load

app = typer.Typer()


@app.command()
def complete(
    text: Annotated[str, typer.Argument(help="The context to continue.")],
    n: Annotated[int, typer.Option("-n", help="How many tokens to generate.")] = COMPLETE_TOKENS,
    weights: WeightsOption = None,
) -> None:
    """Continue TEXT greedily, the model always seeing the last n_ctx tokens."""
    model = load(weight_spec(None, weights))
    refuse_slow_complete(model, len(text), n)
    completed = continue_text(model, text, n)
    stdout().print(Text.assemble((text, "bold"), (completed[len(text):], "green")), soft_wrap=True)
