"""Rewriting a weight file's matrices dense or sparse, every entry kept as it was written.

A model remembers each entry as written (``"2*Lg"``, not 2048) and the labels
of each matrix's rows and columns, so the same file can be written back in
either form: dense lists, or objects holding only the non-zero entries by
label. Nothing is evaluated on the way, so constants and expressions survive a
round trip.
"""

import copy
from pathlib import Path
from typing import Any

import numpy as np

from handwired.weightfile.axes import Axis
from handwired.weightfile.checker import locate
from handwired.weightfile.model import Model
from handwired.weightfile.puzzlekey import moved

FORMS = ("sparse", "dense")


AS_WRITTEN = "as written"  # each matrix and vector in the form its file wrote it in


def document(model: Model, form: str, folder: Path | None = None) -> dict[str, Any]:
    """The model's file with every matrix and vector written in ``form`` (or :data:`AS_WRITTEN`: each as its file
    wrote it, a left-out bias sparse); ``folder``: where it will be written, so that a statement named by its path in
    the ``puzzle`` key is still found from there."""
    if form not in (*FORMS, AS_WRITTEN):
        raise ValueError(form)
    doc = copy.deepcopy(model.written.document)
    if folder is not None and model.puzzle is not None:
        doc["puzzle"] = moved(model.puzzle, Path(model.source).parent, folder)
        if doc["puzzle"] is None:  # the statement is not beside the copy: it names none
            del doc["puzzle"]
    for path, written in model.written.entries.items():
        parent, key = _locate(doc, path)
        if form == "sparse" or (form == AS_WRITTEN and not isinstance(parent.get(key), list)):
            value = sparse(written, model.axes(path))
            if key == "b" and not value:
                parent.pop(key, None)  # an all-zero bias is the default
                continue
        else:
            if key == "b" and key not in parent and not _nonzero(written).any():
                continue  # a bias the file left out stays out
            value = written.tolist()
        parent[key] = value
    if form == "sparse":
        _name_hidden_widths(doc, model)
    return doc


def sparse(written: np.ndarray, axes: tuple[Axis, ...]) -> dict[str, Any]:
    """A matrix -> ``{row label: {column label: entry}}``; a vector -> ``{label: entry}``; zeros left out."""
    keep = _nonzero(written)
    if written.ndim == 1:
        (axis,) = axes
        return {axis.labels[i]: _plain(written[i]) for i in np.flatnonzero(keep)}
    rows, cols = axes
    return {
        rows.labels[r]: {cols.labels[c]: _plain(written[r, c]) for c in np.flatnonzero(keep[r])}
        for r in np.flatnonzero(keep.any(axis=1))
    }


def entry_counts(model: Model) -> tuple[int, int]:
    """(entries the sparse form writes out, entries in all) over every matrix and vector."""
    kept = sum(int(_nonzero(written).sum()) for written in model.written.entries.values())
    return kept, sum(written.size for written in model.written.entries.values())


def _nonzero(written: np.ndarray) -> np.ndarray:
    # An expression is kept even when it comes to 0: it is something the person wrote.
    return np.vectorize(lambda entry: isinstance(entry, str) or entry != 0, otypes=[bool])(written)


def _plain(entry: Any) -> Any:
    """numpy scalars -> JSON's numbers; a whole float stays as written (1.0 is 1.0)."""
    return entry.item() if isinstance(entry, np.generic) else entry


def _name_hidden_widths(doc: dict[str, Any], model: Model) -> None:
    """A sparse MLP cannot show its width, so it says how many hidden units it has (unless it names them)."""
    for i, block in enumerate(doc.get("blocks", [])):
        mlp = block.get("mlp")
        if mlp is None or "hidden" in mlp:
            continue
        width = len(model.axes(f"blocks[{i}].mlp.c_fc.w")[1])
        block["mlp"] = {"hidden": width, **mlp}


def _locate(doc: dict[str, Any], path: str) -> tuple[dict[str, Any], str]:
    """``"blocks[0].attn.c_attn.w"`` -> (the ``c_attn`` object, ``"w"``)."""
    parent, _, key = path.rpartition(".")
    return locate(doc, parent), key
