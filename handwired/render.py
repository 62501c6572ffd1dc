"""Drawing with rich: matrices as labelled heat maps, explain steps as panels, reports as tables.

Colour code, everywhere: blue for positive, red for negative, the shade
growing with the magnitude relative to the largest in the same matrix (below
1 % of it, coloured text only); exact zeros dim; masked cells grey.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from rich.console import Group
from rich.measure import Measurement
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from handwired.check import Report
from handwired.explain import Matrix, Step
from handwired.run import Trace, top_token
from handwired.weightfile import Model, bundled_dir

POSITIVE = ("#163d63", "#1d5689", "#2670b3", "#2f8ade")
NEGATIVE = ("#5c1a1a", "#832222", "#ab2b2b", "#d33535")
TINY = 0.0005  # below this a nonzero value would print as 0.000; it prints as ≈0 instead
CHANGED = "•"  # before a value that changed since the previous save (handwired watch); visible without colour


def format_values(values: np.ndarray, show_tiny: bool = False) -> list[list[str]]:
    """Cell texts: whole numbers as integers when the whole matrix is whole, else three decimals.

    Exact zeros print as ``0`` and nonzero values too small for three decimals
    as ``≈0``, so a learner can tell an exact 0 from e.g. exp(−362); with
    ``show_tiny`` they print in scientific notation instead (``5.6e-8``).
    """
    finite = values[np.isfinite(values)]
    whole = finite.size > 0 and bool(np.all(finite == np.round(finite))) and bool(np.all(np.abs(finite) < 1e12))

    def one(v: float) -> str:
        if math.isinf(v):
            return "−∞" if v < 0 else "∞"
        if math.isnan(v):
            return "nan"
        if v == 0:
            return "0"
        if whole:
            return f"{int(v)}"
        if abs(v) < TINY:
            return scientific(v) if show_tiny else "≈0"
        if abs(v) >= 1e6:
            return f"{v:.3e}"
        return f"{v:.3f}"

    return [[one(float(v)) for v in row] for row in values]


def scientific(v: float) -> str:
    """Two significant digits and a plain exponent: 5.6e-8, -1.2e-157."""
    mantissa, exponent = f"{v:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def format_probability(p: float) -> str:
    """Four decimals, except that 0 and 1 are only printed when exact."""
    if p == 0 or p == 1:
        return str(int(p))
    if p < 0.00005:
        return "≈0"
    if p > 0.99995:
        return "≈1"
    return f"{p:.4f}"


def value_range(values: np.ndarray, show_tiny: bool = False) -> str:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return "no finite values"
    low, high = float(finite.min()), float(finite.max())
    text = format_values(np.array([[low, high]]), show_tiny)[0]
    return f"range {text[0]} … {text[1]}"


def _cell_style(value: float, scale: float) -> str:
    if not math.isfinite(value) or value == 0 or scale == 0:
        return "dim"
    shades = POSITIVE if value > 0 else NEGATIVE
    if abs(value) < scale / 100:  # too faint to shade: the sign still shows in the text colour
        return "#4f8fd6" if value > 0 else "#d65c5c"
    level = min(len(shades) - 1, int(abs(value) / scale * len(shades)))
    return f"bold white on {shades[level]}"


def matrix_table(matrix: Matrix, changed: np.ndarray | None = None) -> Group:
    """Title, the heat-map table, and a caption stating the range and the colour code.

    ``changed`` ([rows, cols] bool) marks cells with :data:`CHANGED`, underlined.
    """
    values = matrix.values
    finite = np.abs(values[np.isfinite(values)])
    scale = float(finite.max()) if finite.size else 0.0
    texts = format_values(values, matrix.show_tiny)
    future = matrix.future if matrix.future is not None else np.zeros(values.shape, dtype=bool)
    changed = changed if changed is not None else np.zeros(values.shape, dtype=bool)
    notes = [value_range(values, matrix.show_tiny), "blue > 0, red < 0, shade ∝ |value|"]
    if changed.any():
        notes.insert(0, f"{CHANGED} changed since the previous save ({int(changed.sum())})")
    if any("≈0" in row for row in texts):
        notes.append("≈0: not exactly 0, smaller than 0.0005")
    if future.any():
        notes.append("grey: a key after the query, masked" + (" next" if matrix.future_text is None else "")
                     + (f" ({matrix.future_text} = exactly 0)" if matrix.future_text == "·" else ""))
    title = Text.assemble((matrix.title, "bold"), "  ", (matrix.hook, "dim"), "\n",
                          ("rows: ", "dim"), matrix.row_axis, ("  columns: ", "dim"), matrix.col_axis)
    table = Table(pad_edge=True)
    corner = matrix.corner or f"{matrix.row_axis} ╲ {matrix.col_axis}"
    table.add_column(Text(corner, style="italic"), style="bold", no_wrap=True)
    for col in matrix.cols:
        table.add_column(Text(col), justify="right", no_wrap=True)
    for r, label in enumerate(matrix.rows):
        cells = []
        for c, text in enumerate(texts[r]):
            if future[r, c]:
                cell = Text(matrix.future_text or text, style="grey50")
            else:
                cell = Text(text, style=_cell_style(float(values[r, c]), scale))
            if changed[r, c]:
                cell = Text.assemble((CHANGED, "bold"), cell, style="underline")
            cells.append(cell)
        table.add_row(Text(label), *cells)
    return Group(title, table, Text(" · ".join(notes), style="dim"))


class SideBySide:
    """Tables in a row when the width allows, else one under another: never squeezed or cut."""

    GAP = 3

    def __init__(self, items: list[Group]) -> None:
        self.items = items

    def _widths(self, console, options) -> list[int] | None:
        # each item's tables at their full width; titles and captions wrap to fit
        widths = [max((Measurement.get(console, options, part).maximum for part in item.renderables
                       if isinstance(part, Table)), default=20) for item in self.items]
        return widths if sum(widths) + self.GAP * (len(widths) - 1) <= options.max_width else None

    def __rich_console__(self, console, options):
        widths = self._widths(console, options)
        if widths is None:
            yield Group(*self.items)
            return
        grid = Table.grid(padding=(0, self.GAP))
        for width in widths:
            grid.add_column(width=width)  # the caption under each table wraps to the table's width
        grid.add_row(*self.items)
        yield grid

    def __rich_measure__(self, console, options) -> Measurement:
        widths = self._widths(console, options)
        if widths is None:
            return Measurement.get(console, options, Group(*self.items))
        total = sum(widths) + self.GAP * (len(widths) - 1)
        return Measurement(total, total)


def step_panel(step: Step, changed: dict[str, np.ndarray] | None = None) -> Panel:
    """One explain step; ``changed`` maps a matrix's title to its changed cells (handwired watch)."""
    header = Text.assemble((step.formula, "bold cyan"), "\n", ("shape: ", "dim"), step.shape, "\n", (step.note, "italic"))
    changed = changed or {}
    tables = [matrix_table(m, changed.get(m.title)) for m in step.matrices]
    return Panel(
        Group(header, SideBySide(tables) if step.side_by_side else Group(*tables)),
        title=Text.assemble((f"[{step.key}] ", "bold magenta"), (step.title, "bold")),
        title_align="left",
        expand=False,
    )


def model_line(model: Model) -> Text:
    plural = lambda n, word: f"{n} {word}" + ("" if n == 1 else "s")  # noqa: E731
    bundled = Path(model.source).parent == bundled_dir()
    return Text.assemble(
        ("model ", "dim"), (model.name or "(unnamed)", "bold"), (" (bundled)" if bundled else f" ({model.source})", "dim"),
        ("  vocab ", "dim"), " ".join(model.vocab), ("  n_ctx ", "dim"), str(model.n_ctx),
        ("  n_embd ", "dim"), str(model.n_embd), "  ", plural(model.n_head, "head"), ", ", plural(model.n_layer, "block"),
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
    return Text("Mask off (--no-mask): bidirectional self-attention, as in an encoder. Every position also sees the "
                "tokens after it, so a prediction at an earlier position may be reading its own answer.",
                style="bold yellow")


def prediction_view(model: Model, trace: Trace, all_positions: bool) -> Group:
    parts: list = [model_line(model)]
    for note in (window_note(model, trace), mask_note(trace)):
        if note:
            parts.append(note)
    if all_positions:
        parts.append(_positions_table(model, trace))
    best, tied = top_token(trace.logits[-1])
    parts.append(Text.assemble(
        (trace.window, "bold"), " → ", (model.vocab[best], "bold green"),
        (f"  (tied with {', '.join(_tied_with(model, trace.logits[-1], best))}; argmax takes the first)", "yellow")
        if tied else "",
    ))
    parts.append(probability_table(model, trace.logits[-1], trace.probs[-1], best))
    return Group(*parts)


def _tied_with(model: Model, logits: np.ndarray, best: int) -> list[str]:
    return [model.vocab[i] for i in np.flatnonzero(logits == logits[best]) if i != best]


def probability_table(model: Model, logits: np.ndarray, probs: np.ndarray, best: int) -> Table:
    table = Table(title="next token", title_justify="left")
    table.add_column("token")
    table.add_column("logit", justify="right")
    table.add_column("probability", justify="right")
    table.add_column("", no_wrap=True)
    logit_texts = format_values(logits[None, :])[0]
    for i, token in enumerate(model.vocab):
        bar = "█" * int(round(probs[i] * 20))
        style = "bold green" if i == best else ""
        table.add_row(Text(token, style=style), logit_texts[i], format_probability(probs[i]), Text(bar, style="green" if i == best else "blue"))
    return table


def _positions_table(model: Model, trace: Trace) -> Table:
    table = Table(title="prediction at every position", title_justify="left")
    for name, justify in (("pos", "right"), ("token", "left"), ("sees", "left"), ("predicts", "left"),
                          ("p", "right"), ("next in input", "left")):
        table.add_column(name, justify=justify)
    for i, token in enumerate(trace.window):
        best, tied = top_token(trace.logits[i])
        predicted = model.vocab[best]
        actual = trace.window[i + 1] if i + 1 < len(trace.window) else ""
        verdict = "" if not actual else (" ✓" if actual == predicted and not tied else " ✗")
        table.add_row(
            str(i), token, trace.window[: i + 1], predicted + (" (tie)" if tied else ""),
            format_probability(trace.probs[i, best]), Text(actual + verdict, style="green" if verdict == " ✓" else "red"),
        )
    return table


def report_view(model: Model, report: Report, near_miss: float) -> Group:
    parts: list = [model_line(model), Text.assemble(("checked: ", "dim"), report.description),
                   Text.assemble(("judged by: ", "dim"), report.rule)]
    if report.interrupted:
        parts.append(Text(f"Interrupted: {report.checked:,} of {report.total:,} contexts were checked.", style="yellow"))
    counts = Table.grid(padding=(0, 2))
    counts.add_column(justify="right")
    counts.add_column()
    counts.add_row(f"{report.checked:,}", "contexts checked")
    counts.add_row(Text(f"{report.passed:,}", style="green"), "passed")
    counts.add_row(Text(f"{report.failed:,}", style="red" if report.failed else "green"), "failed")
    if report.ambiguous:
        counts.add_row(f"{report.ambiguous:,}", "ambiguous (the rule allows more than one next token; not judged)")
    if report.out_of_domain:
        counts.add_row(f"{report.out_of_domain:,}", "out of domain (never occurs under the rule; not judged)")
    parts.append(counts)
    if report.decided:
        accuracy = 100 * report.passed / report.decided
        style = "bold green" if report.failed == 0 else "bold red"
        parts.append(Text(f"accuracy {accuracy:.2f} % ({report.passed:,} / {report.decided:,} judged)", style=style))
    else:
        parts.append(Text("No context was judged: nothing to score.", style="yellow"))
    if report.margin is not None:
        m = report.margin
        near = report.near_miss(near_miss)
        parts.append(Text.assemble(
            ("margin ", "dim"), (format_values(np.array([[m.value]]))[0][0], "bold yellow" if near else "bold"),
            f" logits: the smallest lead of a right token over the best wrong one among passing contexts, at "
            f"{m.context!r} ({m.right} over {m.wrong})",
        ))
        if near:
            parts.append(Text(f"Near miss: a margin under {near_miss:g} logit means a small change to the weights could "
                              "flip that answer.", style="yellow"))
    if report.failures:
        parts.append(failures_table(model, report))
    return Group(*parts)


def failures_table(model: Model, report: Report) -> Group:
    shown = len(report.failures)
    if shown < report.failed:
        title = f"failures: the {shown} shortest distinct failing contexts (of {report.failed:,} failures)"
    else:
        title = f"failures: all {shown}"
    table = Table()
    table.add_column("context")
    table.add_column("expected")
    table.add_column("predicted")
    for token in model.vocab:
        table.add_column(f"p({token})", justify="right")
    for failure in report.failures:
        table.add_row(
            failure.context, " or ".join(failure.acceptable),
            Text(failure.predicted + (" (tie)" if failure.tied else ""), style="red"),
            *[format_probability(p) for p in failure.probs],
        )
    return Group(Text(title, style="bold"), table)


def weights_view(model: Model) -> Group:
    """Every parameter as a labelled table."""
    parts: list = [model_line(model)]
    if model.description:
        parts.append(Text(model.description, style="italic"))
    if model.constants:
        parts.append(Text.assemble(("constants: ", "dim"), ", ".join(f"{k} = {v:g}" for k, v in model.constants.items())))
    params = model.params
    dims = model.dims
    positions = tuple(str(i) for i in range(model.n_ctx))
    tables = [
        _param("wte", params["wte"], model.vocab, dims, "token", "residual dim"),
        _param("wpe", params["wpe"], positions, dims, "position", "residual dim"),
    ]
    d = model.n_embd
    z_labels = tuple(f"z{i}" for i in range(d))
    for b, block in enumerate(params["blocks"]):
        prefix = f"blocks[{b}]"
        if "ln_1" in block:
            tables.append(_norm(f"{prefix}.ln_1", block["ln_1"], dims))
        attn = block["attn"]
        # c_attn is three matrices side by side; shown apart they fit a terminal and read as W_Q, W_K, W_V.
        for part, name in enumerate(("Q", "K", "V")):
            columns = slice(part * d, (part + 1) * d)
            labels = tuple(f"{name.lower()}{i}" for i in range(d))
            where = f"columns {part * d}…{(part + 1) * d - 1}"
            tables.append(_param(f"{prefix}.attn.c_attn.w  W_{name}, {where}", attn["c_attn"]["w"][:, columns], dims,
                                 labels, "residual dim", f"{name.lower()} dim"))
            tables.append(_param(f"{prefix}.attn.c_attn.b  b_{name}, {where}", attn["c_attn"]["b"][None, columns], ("b",),
                                 labels, "", f"{name.lower()} dim"))
        tables.append(_param(f"{prefix}.attn.c_proj.w", attn["c_proj"]["w"], z_labels, dims, "z dim (heads concatenated)", "residual dim"))
        tables.append(_param(f"{prefix}.attn.c_proj.b", attn["c_proj"]["b"][None, :], ("b",), dims, "", "residual dim"))
        if "ln_2" in block:
            tables.append(_norm(f"{prefix}.ln_2", block["ln_2"], dims))
        if "mlp" in block:
            mlp = block["mlp"]
            hidden = tuple(f"h{i}" for i in range(mlp["c_fc"]["w"].shape[1]))
            tables.append(_param(f"{prefix}.mlp.c_fc.w", mlp["c_fc"]["w"], dims, hidden, "residual dim", "hidden unit"))
            tables.append(_param(f"{prefix}.mlp.c_fc.b", mlp["c_fc"]["b"][None, :], ("b",), hidden, "", "hidden unit"))
            tables.append(_param(f"{prefix}.mlp.c_proj.w", mlp["c_proj"]["w"], hidden, dims, "hidden unit", "residual dim"))
            tables.append(_param(f"{prefix}.mlp.c_proj.b", mlp["c_proj"]["b"][None, :], ("b",), dims, "", "residual dim"))
    if "ln_f" in params:
        tables.append(_norm("ln_f", params["ln_f"], dims))
    return Group(*parts, *tables)


def _param(name, values, rows, cols, row_axis, col_axis) -> Group:
    return matrix_table(Matrix(name, "", values, tuple(rows), tuple(cols), row_axis or "—", col_axis, "╲"))


def _norm(name: str, params: dict, dims) -> Group:
    return _param(name, np.stack([params["g"], params["b"]]), ("g", "b"), dims, "", "residual dim")
