"""Drawing a model's weights: every parameter as a labelled matrix, each entry as the file wrote it."""

import json

import numpy as np
from rich.console import Group
from rich.text import Text

from handwired.views.figures import Matrix
from handwired.views.matrices import matrix_table
from handwired.views.model import model_line
from handwired.views.numbers import exact
from handwired.weightfile import Model
from handwired.weightfile.axes import escaped
from handwired.weightfile.checker import locate


def weights_view(model: Model, show_all: bool = False) -> Group:
    """Every parameter as a labelled table."""
    parts: list = [model_line(model)]
    if model.description:
        parts.append(Text(escaped(model.description), style="italic"))
    if model.written.constants:
        parts.append(Text.assemble(("constants: ", "dim"),
                                   ", ".join(f"{k} = {exact(v)}" for k, v in model.written.constants.items())))
    return Group(*parts, *[matrix_table(matrix, show_all) for matrix in weight_matrices(model)])


def weight_matrices(model: Model) -> list[Matrix]:
    """Every parameter as a labelled matrix (a vector as one row), in the weight file's order.

    Cells show each entry as the file wrote it (``Lg``, ``2*Lg``, ``0.5``); colours follow the values.
    """

    def param(path: str, title: str = "", columns: slice = slice(None), row: str = "", col_axis: str = "") -> Matrix:
        written = model.written.entries[path]
        values = locate(model.params, path)
        axes = model.axes(path)
        if written.ndim == 1:  # a vector: one row, labelled ``row``
            written, values, row_side, col_side = written[None, :], values[None, :], None, axes[0]
        else:
            row_side, col_side = axes[0], axes[1]
        rows = (row,) if row_side is None else row_side.labels
        cols = col_side.labels[columns]
        texts = tuple(tuple(_as_written(entry) for entry in line[columns]) for line in written)
        return Matrix(title or path, "", values[:, columns], rows, cols, _axis_name(row_side),
                      col_axis or _axis_name(col_side), "╲", texts=texts)

    def norm(path: str) -> Matrix:
        g, b = param(f"{path}.g", row="g"), param(f"{path}.b", row="b")
        return Matrix(path, "", np.vstack([g.values, b.values]), ("g", "b"), g.cols, "—", g.col_axis, "╲",
                      texts=(g.texts or ()) + (b.texts or ()))

    d = model.n_embd
    matrices = [param("wte"), param("wpe")]
    for i, block in enumerate(model.params["blocks"]):
        prefix = f"blocks[{i}]"
        if "ln_1" in block:
            matrices.append(norm(f"{prefix}.ln_1"))
        # c_attn is three matrices side by side; shown apart they fit a terminal and read as W_Q, W_K, W_V.
        for part, name in enumerate("QKV"):
            columns = slice(part * d, (part + 1) * d)
            where = f"columns {part * d}…{(part + 1) * d - 1}"
            axis = f"{name.lower()} dim, heads numbered across" if model.n_head > 1 else f"{name.lower()} dim"
            matrices.append(param(f"{prefix}.attn.c_attn.w", f"{prefix}.attn.c_attn.w  W_{name}, {where}", columns,
                                  col_axis=axis))
            matrices.append(param(f"{prefix}.attn.c_attn.b", f"{prefix}.attn.c_attn.b  b_{name}, {where}", columns, "b",
                                  col_axis=axis))
        matrices.append(param(f"{prefix}.attn.c_proj.w"))
        matrices.append(param(f"{prefix}.attn.c_proj.b", row="b"))
        if "ln_2" in block:
            matrices.append(norm(f"{prefix}.ln_2"))
        if "mlp" in block:
            for part in ("c_fc", "c_proj"):
                matrices.append(param(f"{prefix}.mlp.{part}.w"))
                matrices.append(param(f"{prefix}.mlp.{part}.b", row="b"))
    if "ln_f" in model.params:
        matrices.append(norm("ln_f"))
    return matrices


def _as_written(entry) -> str:
    """An entry as the file has it: an expression verbatim, a number as JSON writes it."""
    return entry if isinstance(entry, str) else json.dumps(entry)


def _axis_name(axis) -> str:
    return "—" if axis is None else axis.meaning.removeprefix("one per ")
