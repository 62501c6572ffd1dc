"""attend: one attention step on matrices given inline or in a JSON file."""

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from handwired.cli.common import ForceOption, HtmlOption, JsonOption, Output, SvgOption
from handwired.defaults import ATTENTION_SCORE
from handwired.engine.attend import SCORES
from handwired.engine.attend import attend as attention_step
from handwired.errors import HandwiredError
from handwired.views import attend as attending
from handwired.views.cost import refuse_slow_attend
from handwired.views.matrices import step_panel
from handwired.weightfile.writing import json_text

app = typer.Typer()
MATRIX_HELP = "',' between numbers in a row, ';' between rows; without ';' each number is a row of its own."


@app.command()
def attend(
    file: Annotated[
        Path | None,
        typer.Argument(help="A JSON file with q, k and v (or x); or give them inline."),
    ] = None,
    q: Annotated[str | None, typer.Option("--q", help=f"Queries, e.g. 62 or '64,85;61,80'. {MATRIX_HELP}")] = None,
    k: Annotated[str | None, typer.Option("--k", help="Keys, e.g. 60,64,68 or '68,91;60,87;64,88'.")] = None,
    v: Annotated[str | None, typer.Option("--v", help="Values, one row per key.")] = None,
    x: Annotated[str | None, typer.Option("--x", help="Self-attention: Q = K = V = X.")] = None,
    score: Annotated[str, typer.Option(help=f"Score function: {', '.join(SCORES)}.")] = ATTENTION_SCORE,
    causal: Annotated[bool, typer.Option("--causal", help="Mask keys after the query (a decoder's mask).")] = False,
    as_json: JsonOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """Compute one attention step: scores, softmax weights and the weighted sum of values."""
    inline = {name: text for name, text in (("q", q), ("k", k), ("v", v), ("x", x)) if text is not None}
    if file is not None and inline:
        raise HandwiredError(f"{file}: give the matrices in the file or inline (--{next(iter(inline))}), not both")
    if file is None and not inline:
        raise HandwiredError("nothing to attend: give --q, --k and --v (or --x), or a JSON file, "
                             "e.g. handwired attend --q 62 --k 60,64,68 --v 110,115,126 --score gaussian")
    out = Output(svg, html, force, reading=(file,) if file is not None else (), as_json=as_json, what="file")
    given = attending.read_file(file) if file is not None else {
        name: attending.parse_inline(text, f"--{name}") for name, text in inline.items()}
    queries, keys, values = attending.gather(given)
    refuse_slow_attend(len(queries), len(keys), queries.shape[1], values.shape[1], score, drawn=not as_json)
    result = attention_step(queries, keys, values, score, causal)
    if as_json:
        typer.echo(json_text(attending.to_json(result), indent=2))
        return
    note = attending.saturation_note(result)

    def view(_everything: bool) -> list:  # matrices given by hand are shown whole: nothing folded
        return [Text.assemble(("attention ", "dim"), (score, "bold"),
                              ("  causal mask" if causal else "  no mask", "dim")),
                *[step_panel(step, show_all=True) for step in attending.view(result, self_attention="x" in given)],
                *([Text(note, style="yellow")] if note else [])]

    out.show(view)
