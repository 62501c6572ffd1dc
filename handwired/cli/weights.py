"""weights: show, validate, create and list weight files."""

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from handwired import render
from handwired.cli.app import (EXIT_USER_ERROR, ForceOption, HtmlOption, Output, ShowAllOption, SvgOption, WeightsOption,
                               check_outputs, stdout, user_errors, weights_app)
from handwired.errors import HandwiredError
from handwired.weightfile import DEFAULT_MODEL, MAX_SIZE, bundled_models, dumps, load, starter_document, validate, write_new


@weights_app.command("show")
@user_errors
def weights_show(
    path: Annotated[Optional[str], typer.Argument(help="A weight file or bundled model; default: aab.")] = None,
    weights: WeightsOption = DEFAULT_MODEL,
    as_sparse: Annotated[
        bool, typer.Option("--sparse", help="Print the file in the sparse form instead: JSON to write back.")
    ] = False,
    show_all: ShowAllOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """Show every weight matrix, labelled."""
    model = load(path or weights)
    if as_sparse and (svg is not None or html is not None):
        raise HandwiredError("--sparse prints JSON to write back and --svg/--html save the view: choose one")
    out = Output(svg, html, force, reading=(Path(model.source),))
    if as_sparse:
        from handwired import convert  # here, as in weights_convert: other commands start faster without it

        typer.echo(dumps(convert.document(model, "sparse")), nl=False)
        return
    out.show(lambda everything: [render.weights_view(model, everything)], show_all)


@weights_app.command("convert")
@user_errors
def weights_convert(
    path: Annotated[str, typer.Argument(help="The weight file (or bundled model) to read.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The file to write (never the one read).")],
    to: Annotated[str, typer.Option("--to", help="sparse (only non-zero entries, by label) or dense (every number).")],
    force: Annotated[bool, typer.Option("--force", help="Replace an existing output file.")] = False,
) -> None:
    """Rewrite a weight file sparse or dense; constants and expressions are kept as written."""
    from handwired import convert
    if to not in convert.FORMS:
        raise HandwiredError(f"--to {to!r}: expected {' or '.join(convert.FORMS)}")
    model = load(path)
    check_outputs(Path(model.source), force, output)
    write_new(output, dumps(convert.document(model, to)), force=force)
    written, total = convert.entry_counts(model)
    stdout().print(f"wrote {escape(str(output))} ({to}): {total:,} entries, {written:,} of them non-zero")


@weights_app.command("validate")
@user_errors
def weights_validate(
    path: Annotated[str, typer.Argument(help="The weight file to check.")],
) -> None:
    """List every problem in a weight file, or say it is OK."""
    file, model, problems = validate(path)
    if problems:
        err = Console(stderr=True, highlight=False)
        for problem in problems:
            err.print(f"{escape(str(file))}: {escape(problem)}", soft_wrap=True)
        err.print(f"{len(problems)} problem{'s' if len(problems) > 1 else ''}")
        raise typer.Exit(EXIT_USER_ERROR)
    stdout().print(Text.assemble(("OK ", "bold green"), f"{file}: ", render.model_line(model)))


@weights_app.command("new")
@user_errors
def weights_new(
    output: Annotated[Path, typer.Option("--output", "-o", help="The file to create.")],
    vocab: Annotated[str, typer.Option(help="The tokens, one character each, e.g. ab.")] = "ab",
    ctx: Annotated[int, typer.Option(help="n_ctx: how many tokens the model sees.")] = 5,
    embd: Annotated[int, typer.Option(help="n_embd: residual stream width.")] = 8,
    head: Annotated[int, typer.Option(help="n_head: attention heads (must divide --embd).")] = 1,
    blocks: Annotated[int, typer.Option(help="How many blocks.")] = 1,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Write a zero-filled starter weight file that validates."""
    if len(set(vocab)) != len(vocab) or not vocab:
        raise HandwiredError(f"--vocab {vocab!r}: expected distinct characters, e.g. ab")
    for option, value, lowest in (("--ctx", ctx, 1), ("--embd", embd, 1), ("--head", head, 1), ("--blocks", blocks, 0)):
        if not lowest <= value <= MAX_SIZE:
            raise HandwiredError(f"{option} {value}: expected {lowest} to {MAX_SIZE}")
    if embd % head:
        raise HandwiredError(f"--embd {embd} is not divisible by --head {head}")
    doc = starter_document(vocab, ctx, embd, head, blocks)
    write_new(output, dumps(doc), force=force)
    stdout().print(f"wrote {escape(str(output))}: vocab {' '.join(vocab)}, n_ctx {ctx}, n_embd {embd}, n_head {head}, "
                   f"{blocks} block{'s' if blocks != 1 else ''}, all zeros. Next: edit it, then "
                   f"handwired explain --weights {escape(str(output))}")


@weights_app.command("list")
def weights_list() -> None:
    """List the bundled models."""
    console = stdout()
    for name, path in bundled_models().items():
        console.print(Text.assemble((name, "bold"), f"  {path}"))
