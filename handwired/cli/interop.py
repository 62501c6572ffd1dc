"""export and import: hand a model to TransformerLens, take one back."""

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from handwired import interop
from handwired.cli.common import (
    WeightsArgument,
    WeightsOption,
    check_outputs,
    is_stdout,
    stdout,
    weight_spec,
    write_output,
)
from handwired.errors import HandwiredError
from handwired.views.numbers import count
from handwired.weightfile import load
from handwired.weightfile.axes import shown

export_app = typer.Typer()
import_app = typer.Typer()


@export_app.command("export")
def export_model(
    output: Annotated[Path, typer.Option("--output", "-o", help="The folder to create.")],
    file: WeightsArgument = None,
    weights: WeightsOption = None,
    to: Annotated[str, typer.Option("--to", help="The library to export for: transformer-lens.")] = "transformer-lens",
    force: Annotated[bool, typer.Option("--force", help="Replace an earlier export in the same folder.")] = False,
) -> None:
    """Write a model as a folder TransformerLens loads: config, safetensors weights, vocabulary, README."""
    if to not in interop.TARGETS:
        raise HandwiredError(f"--to {to!r}: expected one of {', '.join(interop.TARGETS)}")
    model = load(weight_spec(file, weights))
    interop.export_folder(model, output, force=force)
    stdout().print(f"wrote {escape(str(output))}/: {', '.join(interop.FILES)}. Load it in TransformerLens with the "
                   f"code in {escape(str(output / 'README.md'))}")


@import_app.command("import")
def import_model(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="A folder written by export, or a TransformerLens "
                                           "state dict saved the same way (config.json, model.safetensors).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The weight file to create.")],
    vocab: Annotated[
        str | None,
        typer.Option(help="The tokens in id order, when the folder has no vocab.json."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Read a TransformerLens folder back into a handwired/1 weight file."""
    check_outputs(folder, force, output)
    if is_stdout(output):
        text, model = interop.read_folder(folder, vocab)
        say = write_output(output, text)
    else:
        model = interop.import_folder(folder, output, force=force, vocab=vocab)
        say = stdout()
    say.print(f"wrote {escape(str(output))}: vocab {escape(' '.join(map(shown, model.vocab)))}, n_ctx {model.n_ctx}, "
              f"n_embd {model.n_embd}, n_head {model.n_head}, {count(model.n_layer, 'block')}. "
              f"Next: handwired explain -w {escape(str(output))}")
