"""Drawing a model and its predictions: the model line, the next-token table, every weight matrix labelled."""

import json
from pathlib import Path

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text

from handwired.engine.logits import gaps, top_token
from handwired.engine.trace import Trace
from handwired.views.figures import Matrix
from handwired.views.matrices import matrix_table
from handwired.views.numbers import exact, logit_gap, number, probability
from handwired.weightfile import Model, bundled_dir
from handwired.weightfile.axes import shown
from handwired.weightfile.checker import locate


def model_line(model: Model) -> Text:
    plural = lambda n, word: f"{n} {word}" + ("" if n == 1 else "s")  # noqa: E731
    bundled = Path(model.source).parent == bundled_dir()
    return Text.assemble(
        ("model ", "dim"), (model.name or "(unnamed)", "bold"),
        (" (bundled)" if bundled else f" ({model.source})", "dim"),
        ("  vocab ", "dim"), " ".join(map(shown, model.vocab)), ("  n_ctx ", "dim"), str(model.n_ctx),
        ("  n_embd ", "dim"), str(model.n_embd), "  ", plural(model.n_head, "head"), ", ",
        plural(model.n_layer, "block"),
    )


def window_note(model: Model, trace: Trace) -> Text | None:
    if not trace.truncated:
        return None
    return Text(
        f"The context has {len(trace.text)} tokens; the model sees only the last n_ctx = {model.n_ctx}: "
        f"{trace.window!r}.",
        style="yellow",
    )


def mask_note(trace: Trace) -> Text | None:
    if trace.causal:
        return None
    return Text("Mask off: bidirectional self-attention, as in an encoder. Every position also sees the "
                "tokens after it, so a prediction at an earlier position may be reading its own answer.",
                style="bold yellow")


def prediction_view(model: Model, trace: Trace, every_position: bool = False) -> Group:
    parts: list = [model_line(model)]
    for note in (window_note(model, trace), mask_note(trace)):
        if note:
            parts.append(note)
    if every_position:
        parts.append(_positions_table(model, trace))
    best, tied = top_token(trace.logits[-1])
    parts.append(Text.assemble(
        (shown(trace.window), "bold"), " → ", (shown(model.vocab[best]), "bold green"),
        (f"  (tied with {', '.join(_tied_with(model, trace.logits[-1], best))}; argmax takes the first)", "yellow")
        if tied else "",
    ))
    parts.append(probability_table(model, trace.logits[-1], trace.probs[-1], best))
    return Group(*parts)


def _tied_with(model: Model, logits: np.ndarray, best: int) -> list[str]:
    return [shown(model.vocab[i]) for i in np.flatnonzero(logits == logits[best]) if i != best]


def probability_table(model: Model, logits: np.ndarray, probs: np.ndarray, best: int) -> Table:
    table = Table(title="next token", title_justify="left", caption_justify="left",
                  caption="gap: its logit minus the best other token's")
    table.add_column("token")
    table.add_column("logit", justify="right")
    table.add_column("gap", justify="right")
    table.add_column("probability", justify="right")
    table.add_column("", no_wrap=True)
    gap = gaps(logits)  # the top token's lead over the runner-up; every other token's distance below the top
    for i, token in enumerate(model.vocab):
        bar = "█" * int(round(probs[i] * 20))
        style = "bold green" if i == best else ""
        table.add_row(Text(shown(token), style=style), number(logits[i]), logit_gap(gap[i]), probability(probs[i]),
                      Text(bar, style="green" if i == best else "blue"))
    return table


def _positions_table(model: Model, trace: Trace) -> Table:
    table = Table(title="prediction at every position", title_justify="left", caption_justify="left",
                  caption="lead: the predicted token's logit minus the best other token's")
    for name, justify in (("pos", "right"), ("token", "left"), ("sees", "left"), ("predicts", "left"),
                          ("p", "right"), ("lead", "right"),
                          ("next in input", "left")):
        table.add_column(name, justify=justify)
    for i, token in enumerate(trace.window):
        best, tied = top_token(trace.logits[i])
        predicted = model.vocab[best]
        actual = trace.window[i + 1] if i + 1 < len(trace.window) else ""
        verdict = "" if not actual else (" ✓" if actual == predicted and not tied else " ✗")
        table.add_row(
            str(i), shown(token), shown(trace.window[: i + 1]), shown(predicted) + (" (tie)" if tied else ""),
            probability(trace.probs[i, best]), logit_gap(gaps(trace.logits[i])[best]),
            Text((shown(actual) if actual else "") + verdict, style="green" if verdict == " ✓" else "red"),
        )
    return table


def context_json(model: Model, trace: Trace) -> dict:
    """What every JSON answer about one context starts with: the model, its file, the text and its tokens."""
    return {"model": model.name, "weights": model.source, "vocab": list(model.vocab), "text": trace.text,
            "window": trace.window, "truncated": trace.truncated, "causal": trace.causal,
            "tokens": trace.tokens.tolist()}


def prediction_json(model: Model, trace: Trace, every_position: bool = False) -> dict:
    """The prediction for programs: tokens, window, logits, probabilities; each position's too if asked."""
    def at(i: int) -> dict:
        best, tied = top_token(trace.logits[i])
        return {
            "position": i,
            "token": trace.window[i],
            "prediction": model.vocab[best],
            "tied": tied,
            "logits": trace.logits[i].tolist(),
            "probabilities": trace.probs[i].tolist(),
        }

    last = at(len(trace.window) - 1)
    result = {
        **context_json(model, trace),
        "prediction": last["prediction"],
        "tied": last["tied"],
        "logits": last["logits"],
        "probabilities": last["probabilities"],
    }
    if every_position:
        result["positions"] = [at(i) for i in range(len(trace.window))]
    return result


def weights_view(model: Model, show_all: bool = False) -> Group:
    """Every parameter as a labelled table."""
    parts: list = [model_line(model)]
    if model.description:
        parts.append(Text(model.description, style="italic"))
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
        if written.ndim == 1:  # a vector: one row
            written, values, axes = written[None, :], values[None, :], (None, *axes)
        rows = (row,) if axes[0] is None else axes[0].labels
        cols = axes[1].labels[columns]
        texts = tuple(tuple(_as_written(entry) for entry in line[columns]) for line in written)
        return Matrix(title or path, "", values[:, columns], rows, cols, _axis_name(axes[0]),
                      col_axis or _axis_name(axes[1]), "╲", texts=texts)

    def norm(path: str) -> Matrix:
        g, b = param(f"{path}.g", row="g"), param(f"{path}.b", row="b")
        return Matrix(path, "", np.vstack([g.values, b.values]), ("g", "b"), g.cols, "—", g.col_axis, "╲",
                      texts=g.texts + b.texts)

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
