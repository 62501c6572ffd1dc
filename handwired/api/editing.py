"""Editing a model from Python and saving it: :func:`set_entry` (``model.set``) changes entries by label or index,
:func:`save` (``model.save``) writes the model as a ``handwired/1`` file, and :func:`diff` compares two models as
``handwired diff`` does.

A model is one model: its float64 parameters are what runs, is checked and is saved. ``model.set`` changes them and
what the views show as written; an array of ``model.params`` changed in place is the same edit, and saving finds it
too. A saved file is the loaded file with each changed entry written as its new number: the labels, the form of
each matrix (sparse or dense), the constants and every unchanged expression (``"2*Lg"``) as they were.
"""

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from handwired.api.arguments import shown
from handwired.errors import HandwiredError, bad_value
from handwired.weightfile import Model, parse
from handwired.weightfile.checker import locate
from handwired.weightfile.forms import AS_WRITTEN, document
from handwired.weightfile.writing import dumps, write_new

Index = str | int  # a row or column: its label, or its number


def entry_path(model: Model, path: object) -> str:
    """``"blocks.0.attn.c_proj.w"`` or ``"blocks[0].attn.c_proj.w"`` -> the model's key for that parameter."""
    if not isinstance(path, str):
        raise bad_value("path", shown(path), "expected a parameter's path, e.g. 'blocks.0.attn.c_proj.w'")
    key = re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", path)
    if key not in model.written.entries:
        known = ", ".join(model.written.entries)
        raise bad_value("path", repr(path), f"the model has no such parameter; it has {known}")
    return key


def _position(model: Model, key: str, axis: int, given: Index | None, name: str) -> int | slice:
    if given is None:
        return slice(None)
    labels = model.axes(key)[axis].labels
    if isinstance(given, str):
        if given not in labels:
            listed = ", ".join(labels[:12]) + (" …" if len(labels) > 12 else "")
            raise bad_value(name, repr(given), f"{key} has no such {'row' if axis == 0 else 'column'}; its labels "
                            f"are {listed}")
        return labels.index(given)
    if isinstance(given, bool) or not isinstance(given, (int, np.integer)) or not 0 <= given < len(labels):
        raise bad_value(name, repr(given), f"expected a label or a number 0…{len(labels) - 1} of {key}")
    return int(given)


def set_entry(model: Model, path: str, value: ArrayLike, row: Index | None = None, col: Index | None = None) -> None:
    """Give the parameter at ``path`` (at ``row`` and ``col``, each a label or a number; None: all of that axis)
    ``value``: a number, or an array of the part's shape. One line naming the parameter otherwise; nothing is changed
    then."""
    key = entry_path(model, path)
    array: NDArray[np.float64] = locate(model.params, key)
    if col is not None and array.ndim == 1:
        raise bad_value("col", repr(col), f"{key} is a vector: give its entry as row")
    where = tuple(_position(model, key, axis, given, name)
                  for axis, (given, name) in enumerate([(row, "row"), (col, "col")][:array.ndim]))
    shape = array[where].shape
    try:
        new = np.broadcast_to(np.asarray(value, dtype=np.float64), shape)
    except (TypeError, ValueError):
        raise bad_value("value", shown(value), f"expected a number or an array of shape {list(shape)}") from None
    if not np.isfinite(new).all():
        raise bad_value("value", shown(value), "expected finite numbers")
    array[where] = new
    written = model.written.entries[key]
    written[where] = np.vectorize(_plain, otypes=[object])(new) if new.ndim else _plain(float(new))


def _plain(number: float) -> int | float:
    """A number as a file writes it: a whole number as an int (2, not 2.0)."""
    return int(number) if float(number).is_integer() and abs(number) < 2**53 else float(number)


def edited(model: Model) -> Model:
    """The model as its file would now read: each entry whose value differs from what the file wrote (changed by
    :func:`set_entry`, or in ``model.params`` in place) written as its new number."""
    if not model.written.document:
        raise HandwiredError(f"{model.source}: was built in code, not read from a weight file: there is no file "
                             "to save it as")
    original, _ = parse(model.written.document, model.source)
    entries: dict[str, NDArray[Any]] = {}
    for key, written in model.written.entries.items():
        now = np.asarray(locate(model.params, key))
        before = np.asarray(locate(original.params, key)) if original is not None else None
        same_shape = before is not None and before.shape == now.shape
        changed = now != before if same_shape else np.ones(now.shape, bool)
        # an entry set back to its file's value is written as the file wrote it ("Lg" again, not 1024)
        copy = original.written.entries[key].copy() if same_shape and original is not None else written.copy()
        for where in map(tuple, np.argwhere(changed)):
            copy[where] = _plain(float(now[where]))
        entries[key] = copy
    return replace(model, written=replace(model.written, entries=entries))


def save(model: Model, path: "str | os.PathLike[str]", force: bool = False) -> Path:
    """Write the model as a ``handwired/1`` file at ``path`` (atomically; an existing file only with ``force``),
    each matrix in its file's form, each changed entry as its number; the path written."""
    if not isinstance(path, (str, os.PathLike)):
        raise bad_value("path", shown(path), "expected a file's path")
    for key in model.written.entries:
        if not np.isfinite(locate(model.params, key)).all():
            raise HandwiredError(f"{key}: holds a number that is not finite; a weight file holds finite numbers")
    where = Path(os.fspath(path))
    doc = document(edited(model), AS_WRITTEN, where.parent)
    write_new(where, dumps(doc), force)
    return where
