"""Hand a model to TransformerLens and take one back.

:func:`export_folder` writes a folder TransformerLens loads in a few lines
(config.json, model.safetensors, vocab.json, handwired.json, README.md);
:func:`import_folder` reads such a folder, or a TransformerLens state dict saved
the same way, into a ``handwired/1`` weight file. The numbers pass through
unchanged both ways; constants and expressions in the weight file do not survive.
Both need only numpy and the ``safetensors`` package (``handwired[export]``).
"""

from pathlib import Path

from handwired.errors import HandwiredError
from handwired.interop.folder import FILES, check_output_folder, export_files, read_folder, write_folder
from handwired.interop.readme import TESTED
from handwired.weightfile import Model
from handwired.weightfile.writing import check_writable, write_new

TARGETS = ("transformer-lens",)


def export_folder(model: Model, folder: Path, force: bool = False) -> dict[str, bytes]:
    """Write the model's TransformerLens folder; return the files written."""
    check_output_folder(folder, force)
    files = export_files(model, folder)
    write_folder(folder, files, force)
    return files


def import_folder(folder: Path, output: Path, force: bool = False, vocab: str | None = None) -> Model:
    """Read a TransformerLens folder into a new weight file; return the model it holds."""
    if output.resolve().is_relative_to(folder.resolve()):
        raise HandwiredError(f"{output}: inside the folder being read ({folder}); write the weight file elsewhere")
    check_writable(output, force)
    text, model = read_folder(folder, vocab, output.parent)
    write_new(output, text, force=force)
    return model


__all__ = ["FILES", "TARGETS", "TESTED", "check_output_folder", "export_folder", "import_folder",
           "export_files", "read_folder", "write_folder"]
