"""weights: show, convert, validate, create and list weight files."""

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.text import Text

from handwired.cli.common import (
    EXIT_USER_ERROR,
    ForceOption,
    HtmlOption,
    Output,
    ShowAllOption,
    SvgOption,
    WeightsArgument,
    WeightsOption,
    check_outputs,
    stderr,
    stdout,
    weight_spec,
    write_output,
)
from handwired.errors import HandwiredError
from handwired.views.cost import refuse_slow_weights
from handwired.views.model import model_line
from handwired.views.numbers import count
from handwired.views.weights import weights_view
from handwired.weightfile import bundled_models, load, validate
from handwired.weightfile.axes import printable, shown
from handwired.weightfile.checker import known
from handwired.weightfile.forms import FORMS, document, entry_counts
from handwired.weightfile.starter import starter_document
from handwired.weightfile.writing import dumps

app = typer.Typer(name="weights", help="Show, convert, validate, create and list weight files.", no_args_is_help=True)


@app.command("show")
def weights_show(
    file: WeightsArgument = None,
    weights: WeightsOption = None,
    as_sparse: Annotated[
        bool, typer.Option("--sparse", help="Print the file in the sparse form instead: JSON to write back.")
    ] = False,
    show_all: ShowAllOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """Show every weight matrix, labelled."""
    model = load(weight_spec(file, weights))
    if as_sparse and (svg is not None or html is not None):
        raise HandwiredError("--sparse prints JSON to write back and --svg/--html save the view: choose one")
    out = Output(svg, html, force, reading=(Path(model.source),))
    if as_sparse:
        typer.echo(dumps(document(model, "sparse")), nl=False)
        return
    refuse_slow_weights(model, show_all)
    out.show(lambda everything: [weights_view(model, everything)], show_all)


@app.command("convert")
def weights_convert(
    output: Annotated[Path, typer.Option("--output", "-o", help="The file to write (never the one read).")],
    to: Annotated[str, typer.Option("--to", help="sparse (only non-zero entries, by label) or dense (every number).")],
    file: WeightsArgument = None,
    weights: WeightsOption = None,
    force: ForceOption = False,
) -> None:
    """Rewrite a weight file sparse or dense; constants and expressions are kept as written."""
    if to not in FORMS:
        raise HandwiredError(f"--to {to!r}: expected {' or '.join(FORMS)}")
    model = load(weight_spec(file, weights))
    check_outputs(Path(model.source), force, output)
    say = write_output(output, dumps(document(model, to, output.parent)), force)
    written, total = entry_counts(model)
    say.print(f"wrote {escape(str(output))} ({to}): {count(total, 'entry', 'entries')}, "
              f"{written:,} of them non-zero")


@app.command("validate")
def weights_validate(
    file: WeightsArgument = None,
    weights: WeightsOption = None,
) -> None:
    """List every problem in a weight file, or say it is OK."""
    path, model, problems = validate(weight_spec(file, weights))
    if model is not None and model.puzzle is not None:
        problems = _puzzle_problems(model)
    if problems:
        err = stderr()
        for problem in problems:
            err.print(escape(printable(f"{path}: {problem}")), soft_wrap=True)
        err.print(count(len(problems), "problem"))
        raise typer.Exit(EXIT_USER_ERROR)
    stdout().print(Text.assemble(("OK ", "bold green"), f"{path}: ", model_line(known(model))))


def _puzzle_problems(model) -> list[str]:
    """The file's own problems are none; is the puzzle it names one that exists (as check will look for it)? The
    problem's advice names check's option: validate has none to give a puzzle with."""
    from handwired.judge.game.catalogue import named_puzzle  # the game loads only for a file that names a puzzle

    try:
        named_puzzle(model)
    except HandwiredError as error:
        return [error.render(lambda name: f"handwired check --{name}").removeprefix(f"{model.source}: ")]
    return []


@app.command("new")
def weights_new(
    output: Annotated[Path, typer.Option("--output", "-o", help="The file to create.")],
    vocab: Annotated[str, typer.Option(help="The tokens, one character each, e.g. ab.")] = "ab",
    n_ctx: Annotated[int, typer.Option("--n-ctx", help="How many tokens the model sees.")] = 5,
    n_embd: Annotated[int, typer.Option("--n-embd", help="The residual stream's width.")] = 8,
    n_head: Annotated[int, typer.Option("--n-head", help="Attention heads (must divide --n-embd).")] = 1,
    n_layer: Annotated[int, typer.Option("--n-layer", help="How many blocks.")] = 1,
    force: ForceOption = False,
) -> None:
    """Write a zero-filled starter weight file that validates."""
    doc = starter_document(vocab, n_ctx, n_embd, n_head, n_layer)
    say = write_output(output, dumps(doc), force)
    say.print(f"wrote {escape(str(output))}: vocab {escape(' '.join(map(shown, vocab)))}, n_ctx {n_ctx}, "
              f"n_embd {n_embd}, n_head {n_head}, {count(n_layer, 'block')}, all zeros. Next: edit it, then "
              f"handwired explain -w {escape(str(output))}")


@app.command("list")
def weights_list() -> None:
    """List the bundled models, one a line: its name and its path (never wrapped, so a pipe can split them)."""
    console = stdout()
    for name, path in bundled_models().items():
        console.print(Text.assemble((name, "bold"), f"  {path}"), soft_wrap=True)
