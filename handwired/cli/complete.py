"""complete: continue a context greedily."""

from typing import Annotated

import typer
from rich.text import Text

from handwired.cli.common import WeightsOption, stdout, weight_spec
from handwired.defaults import COMPLETE_TOKENS
from handwired.engine.generate import complete as continue_text
from handwired.errors import HandwiredError
from handwired.judge.contexts import SECONDS_PER_PASS, duration, forward_seconds
from handwired.views.cost import MAX_VIEW_SECONDS
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
    window = min(len(text) + n, model.n_ctx)  # the longest context the model sees on the way
    seconds = n * (SECONDS_PER_PASS + forward_seconds(model, 1, window))  # one token at a time
    if seconds > MAX_VIEW_SECONDS:
        raise HandwiredError(f"-n {n:,}: about {duration(seconds)} of generating for this model, more than the "
                             f"{duration(MAX_VIEW_SECONDS)} handwired will spend on it; ask for fewer tokens")
    completed = continue_text(model, text, n)
    stdout().print(Text.assemble((text, "bold"), (completed[len(text):], "green")), soft_wrap=True)
