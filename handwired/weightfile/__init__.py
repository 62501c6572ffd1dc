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
"""

from handwired.weightfile.axes import Axis, fold_labels
from handwired.weightfile.checker import Checker, locate
from handwired.weightfile.files import bundled_dir, bundled_folder, bundled_models, json_files, load, resolve, validate
from handwired.weightfile.jsonfile import read_json
from handwired.weightfile.model import Config, Model, Params, Written
from handwired.weightfile.parse import FORMAT, parse
from handwired.weightfile.starter import starter_document
from handwired.weightfile.writing import dumps, write_new

__all__ = [
    "Axis", "Checker", "Config", "FORMAT", "Model", "Params", "Written", "bundled_dir", "bundled_folder",
    "bundled_models", "dumps", "fold_labels", "json_files", "load", "locate", "parse", "read_json", "resolve",
    "starter_document", "validate", "write_new",
]
