"""export and import: hand a model to TransformerLens, take one back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from handwired.cli.app import app, check_outputs, stdout, user_errors
from handwired.errors import HandwiredError
from handwired.weightfile import load


@app.command("export")
@user_errors
def export_model(
    model_spec: Annotated[str, typer.Argument(metavar="MODEL", help="A weight file, or the name of a bundled model.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The folder to create.")],
    to: Annotated[str, typer.Option("--to", help="The library to export for: transformer-lens.")] = "transformer-lens",
    force: Annotated[bool, typer.Option("--force", help="Replace an earlier export in the same folder.")] = False,
) -> None:
    """Write MODEL as a folder TransformerLens loads: config, safetensors weights, vocabulary, README."""
    from handwired import interop  # only here: it brings tempfile and shutil, which other commands' start-up skips

    if to not in interop.TARGETS:
        raise HandwiredError(f"--to {to!r}: expected one of {', '.join(interop.TARGETS)}")
    model = load(model_spec)
    interop.export_folder(model, output, force=force)
    stdout().print(f"wrote {escape(str(output))}/: {', '.join(interop.FILES)}. Load it in TransformerLens with the "
                   f"code in {escape(str(output / 'README.md'))}")


@app.command("import")
@user_errors
def import_model(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="A folder written by export, or a TransformerLens "
                                           "state dict saved the same way (config.json, model.safetensors).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The weight file to create.")],
    vocab: Annotated[Optional[str], typer.Option(help="The tokens in id order, when the folder has no vocab.json.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Read a TransformerLens folder back into a handwired/1 weight file."""
    from handwired import interop
    check_outputs(folder, force, output)
    model = interop.import_folder(folder, output, force=force, vocab=vocab)
    stdout().print(f"wrote {escape(str(output))}: vocab {' '.join(model.vocab)}, n_ctx {model.n_ctx}, "
                   f"n_embd {model.n_embd}, n_head {model.n_head}, {model.n_layer} block{'s' if model.n_layer != 1 else ''}. "
                   f"Next: handwired explain --weights {escape(str(output))}")
