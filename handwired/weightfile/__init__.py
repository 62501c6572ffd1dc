"""The weight file: reading, checking and writing the JSON a person wires a transformer in.

The bottom layer of handwired. :func:`load` turns a file (a path, or a bundled
model's name) into a :class:`Model` — its :class:`Config`, float64 parameters
in GPT-2's layout, and what the file wrote (:class:`Written`) — or raises one
line naming the file, the JSON path, what was expected and what was found.
:mod:`.checker` is the public checker every JSON document of handwired is read
with (weight files, puzzle statements, the progress file, exported labels);
:mod:`.expr` evaluates entries such as ``"2*Lg"``; :mod:`.forms` writes a model
back dense or sparse; :mod:`.starter` makes blanks; :mod:`.writing` writes files.
Nothing here knows about the forward pass, the judge, views or a command line.

The names below load on first use (a module ``__getattr__``), so that a command
reading only JSON (``puzzles list``: the statements and the progress file) loads
none of the model, its parser or numpy.
"""

import importlib
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for type checkers and editors; at run time __getattr__ loads them
    from handwired.weightfile.axes import Axis, fold_labels
    from handwired.weightfile.checker import Checker, locate
    from handwired.weightfile.files import bundled_dir, bundled_models, load, resolve, validate
    from handwired.weightfile.jsonfile import read_json
    from handwired.weightfile.locations import bundled_folder, json_files
    from handwired.weightfile.model import Config, Model, Params, Written
    from handwired.weightfile.parse import FORMAT, parse
    from handwired.weightfile.starter import starter_document
    from handwired.weightfile.writing import dumps, write_new

HOMES = {  # name -> the module it comes from
    "Axis": "axes", "fold_labels": "axes", "Checker": "checker", "locate": "checker", "bundled_dir": "files",
    "bundled_models": "files", "load": "files", "resolve": "files", "validate": "files", "read_json": "jsonfile",
    "bundled_folder": "locations", "json_files": "locations", "Config": "model", "Model": "model",
    "Params": "model", "Written": "model", "FORMAT": "parse", "parse": "parse", "starter_document": "starter",
    "dumps": "writing", "write_new": "writing",
}
__all__ = [
    "Axis", "Checker", "Config", "FORMAT", "Model", "Params", "Written", "bundled_dir", "bundled_folder",
    "bundled_models", "dumps", "fold_labels", "json_files", "load", "locate", "parse", "read_json", "resolve",
    "starter_document", "validate", "write_new",
]


def __getattr__(name: str):
    if name in HOMES:
        value = getattr(importlib.import_module(f"{__name__}.{HOMES[name]}"), name)
        globals()[name] = value  # looked up once
        return value
    try:  # a module of the package, as `import handwired.weightfile` once made them all attributes
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


class _Package(types.ModuleType):
    """This package: a name it gives keeps its meaning when a module of the same name loads (``parse``, the
    function, is not replaced by ``handwired.weightfile.parse``, the module, as the import system would do)."""

    def __setattr__(self, name: str, value) -> None:
        if name in HOMES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
