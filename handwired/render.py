"""Drawing with rich: matrices as labelled heat maps, explain steps as panels, reports as tables.

Colour code, everywhere: blue for positive, red for negative, the shade
growing with the magnitude relative to the largest in the same matrix (below
1 % of it, coloured text only); exact zeros dim; masked cells grey.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from handwired.explain import Matrix, Prediction, Step
from handwired.fold import column_pages, table_width, zero_lines
from handwired.run import Trace, top_token
from handwired.weightfile import Model, bundled_dir, fold_labels, locate

if TYPE_CHECKING:
    from handwired.check import Report

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


SHOW_ALL = "--all"  # what the fold line tells a person to add to see everything


class MatrixView:
    """A matrix as a heat-map table that fits the width it is given, without cutting a number.

    Rows and columns that are exactly 0 everywhere are folded away (one line
    says which) unless ``show_all``; attention matrices are never folded, as
    a query × key square reads only whole. Columns that still do not fit are
    split into pages, each repeating the row labels. ``changed`` ([rows, cols]
    bool, from ``handwired watch``) marks cells with :data:`CHANGED`, underlined,
    and keeps their rows and columns from folding.
    """

    def __init__(self, matrix: Matrix, show_all: bool = False, reveal: str = SHOW_ALL,
                 changed: np.ndarray | None = None) -> None:
        self.matrix = matrix
        values = matrix.values
        finite = np.abs(values[np.isfinite(values)])
        self.scale = float(finite.max()) if finite.size else 0.0
        self.future = matrix.future if matrix.future is not None else np.zeros(values.shape, dtype=bool)
        self.changed = changed if changed is not None else np.zeros(values.shape, dtype=bool)
        formatted = matrix.texts if matrix.texts is not None else format_values(values, matrix.show_tiny)
        self.texts = [[(CHANGED if self.changed[r, c] else "")
                       + (matrix.future_text if self.future[r, c] and matrix.future_text else text)
                       for c, text in enumerate(row)] for r, row in enumerate(formatted)]
        zero_rows, zero_cols = zero_lines(values)
        if show_all or matrix.future is not None:
            zero_rows, zero_cols = np.zeros_like(zero_rows), np.zeros_like(zero_cols)
        zero_rows, zero_cols = zero_rows & ~self.changed.any(axis=1), zero_cols & ~self.changed.any(axis=0)
        self.everything_zero = bool(values.size) and bool(zero_rows.all())
        self.rows = [] if self.everything_zero else [int(r) for r in np.flatnonzero(~zero_rows)]
        self.cols = [] if self.everything_zero else [int(c) for c in np.flatnonzero(~zero_cols)]
        self.corner = matrix.corner or f"{matrix.row_axis} ╲ {matrix.col_axis}"
        self.label_width = max([cell_len(self.corner)] + [cell_len(matrix.rows[r]) for r in self.rows])
        self.widths = [max([cell_len(matrix.cols[c])] + [cell_len(self.texts[r][c]) for r in self.rows]) for c in self.cols]
        # The hook name (where the values live in the trace) follows the title, unless it only repeats it.
        hook = f"  {matrix.hook}" if matrix.hook and matrix.hook != matrix.title else ""
        self.head = Text.assemble((matrix.title, "bold"), (hook, "dim"), "\n", ("rows: ", "dim"),
                                  matrix.row_axis, ("  columns: ", "dim"), matrix.col_axis)
        self.fold_note = self._fold_note(zero_rows, zero_cols, reveal)
        self.caption = self._caption(formatted)

    def _fold_note(self, zero_rows: np.ndarray, zero_cols: np.ndarray, reveal: str) -> Text | None:
        m = self.matrix
        if self.everything_zero:
            return Text(f"all {m.values.size} entries are 0 ({len(m.rows)} × {len(m.cols)}); {reveal} to show it",
                        style="dim")
        parts = []
        for mask, labels, kind in ((zero_rows, m.rows, "row"), (zero_cols, m.cols, "column")):
            hidden = [labels[i] for i in np.flatnonzero(mask)]
            if hidden:
                parts.append(f"{len(hidden)} all-zero {kind}{'s' if len(hidden) > 1 else ''} hidden: {fold_labels(hidden)}")
        return Text("; ".join([*parts, f"{reveal} to show them"]), style="dim") if parts else None

    def _caption(self, formatted: list[list[str]]) -> Text | None:
        if self.everything_zero:
            return None
        m = self.matrix
        notes = [value_range(m.values, m.show_tiny), "blue > 0, red < 0, shade ∝ |value|"]
        if self.changed.any():
            notes.insert(0, f"{CHANGED} changed since the previous version ({int(self.changed.sum())})")
        if any("≈0" in row for row in formatted):
            notes.append("≈0: not exactly 0, smaller than 0.0005")
        if self.future.any():
            notes.append("grey: a key after the query, masked" + (" next" if m.future_text is None else "")
                         + (f" ({m.future_text} = exactly 0)" if m.future_text == "·" else ""))
        return Text(" · ".join(notes), style="dim")

    def _texts(self) -> list[Text]:
        return [text for text in (self.head, self.fold_note, self.caption) if text is not None]

    def full_width(self) -> int:
        """The table's width with every shown column on one page (0: no table)."""
        return table_width([self.label_width, *self.widths]) if self.cols else 0

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        texts = [Measurement.get(console, options, text) for text in self._texts()]
        tables = [table_width([self.label_width, width]) for width in self.widths]  # the narrowest page: one column
        whole = [self.full_width()] if self.cols else []  # every column on one page
        widest = max([t.maximum for t in texts] + whole)
        narrowest = max([t.minimum for t in texts] + tables)
        return Measurement(narrowest, max(narrowest, widest))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.head
        if self.fold_note is not None:
            yield self.fold_note
        if self.cols:
            pages = column_pages(self.label_width, self.widths, options.max_width)
            for number, page in enumerate(pages, 1):
                if len(pages) > 1:
                    yield Text(f"columns {fold_labels([self.matrix.cols[self.cols[i]] for i in page])} "
                               f"(page {number} of {len(pages)})", style="dim")
                yield from self._table(page)
        if self.caption is not None:
            yield self.caption

    def _table(self, page: list[int]) -> list[Text]:
        """One page (indices into self.cols) as lines drawn like rich's default table, from the widths known here."""
        m = self.matrix
        columns = [self.cols[i] for i in page]
        widths = [self.label_width] + [self.widths[i] for i in page]

        def rule(left: str, line: str, middle: str, right: str) -> Text:
            return Text(left + middle.join(line * (width + 2) for width in widths) + right)

        def row(edge: str, label: tuple[str, str], cells: list[tuple[str, str]]) -> Text:
            line = Text(edge, no_wrap=True, overflow="fold")  # fold, not ellipsis: only if one column outgrows the screen
            for i, ((text, style), width) in enumerate(zip([label, *cells], widths)):
                pad = " " * (width - cell_len(text))
                line.append(" ")
                line.append(text + pad if i == 0 else pad + text, style=style)  # labels left, numbers right
                line.append(" " + edge)
            return line

        header = row("┃", (self.corner, "italic"), [(m.cols[c], "") for c in columns])
        header.stylize("bold")
        lines = [rule("┏", "━", "┳", "┓"), header, rule("┡", "━", "╇", "┩")]
        for r in self.rows:
            cells = [(self.texts[r][c], ("grey50" if self.future[r, c] else _cell_style(float(m.values[r, c]), self.scale))
                      + (" underline" if self.changed[r, c] else "")) for c in columns]
            lines.append(row("│", (m.rows[r], "bold"), cells))
        lines.append(rule("└", "─", "┴", "┘"))
        return lines


def matrix_table(matrix: Matrix, show_all: bool = False, reveal: str = SHOW_ALL,
                 changed: np.ndarray | None = None) -> MatrixView:
    """Title, the fold line, the heat-map table in pages, and a caption stating the range and the colour code."""
    return MatrixView(matrix, show_all, reveal, changed)


class SideBySide:
    """Tables in a row when the width allows, else one under another: never squeezed or cut."""

    GAP = 3

    def __init__(self, items: list[MatrixView]) -> None:
        self.items = items

    def _widths(self, console, options) -> list[int] | None:
        # each item's table on one page at its full width; titles and captions wrap to fit
        widths = [item.full_width() or 20 for item in self.items]
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


def step_panel(step: Step, show_all: bool = False, reveal: str = SHOW_ALL,
               changed: dict[str, np.ndarray] | None = None) -> Panel:
    """One explain step; ``changed`` maps a matrix's title to its changed cells (handwired watch)."""
    header = Text.assemble((step.formula, "bold cyan"), "\n", ("shape: ", "dim"), step.shape, "\n", (step.note, "italic"))
    changed = changed or {}
    views = [matrix_table(m, show_all, reveal, changed.get(m.title)) for m in step.matrices]
    parts: list = [header, *([SideBySide(views)] if step.side_by_side else views)]
    if step.predictions:
        parts.append(predictions_table(step.predictions))
    return Panel(
        Group(*parts),
        title=Text.assemble((f"[{step.key}] ", "bold magenta"), (step.title, "bold")),
        title_align="left",
        expand=False,
    )


def predictions_table(predictions: tuple[Prediction, ...]) -> Table:
    """position:token, the token it predicts next, and that token's probability."""
    table = Table()
    table.add_column(Text("position:token", style="italic"), style="bold", no_wrap=True, overflow="fold")
    table.add_column("predicts", no_wrap=True, overflow="fold")
    table.add_column("probability", justify="right", no_wrap=True, overflow="fold")
    for p in predictions:
        table.add_row(p.position, Text(p.token + (" (tie)" if p.tied else ""), style="yellow" if p.tied else "green"),
                      format_probability(p.probability))
    return table


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


def weights_view(model: Model, show_all: bool = False) -> Group:
    """Every parameter as a labelled table."""
    parts: list = [model_line(model)]
    if model.description:
        parts.append(Text(model.description, style="italic"))
    if model.constants:
        parts.append(Text.assemble(("constants: ", "dim"), ", ".join(f"{k} = {v:g}" for k, v in model.constants.items())))
    return Group(*parts, *[matrix_table(matrix, show_all) for matrix in weight_matrices(model)])


def weight_matrices(model: Model) -> list[Matrix]:
    """Every parameter as a labelled matrix (a vector as one row), in the weight file's order.

    Cells show each entry as the file wrote it (``Lg``, ``2*Lg``, ``0.5``); colours follow the values.
    """

    def param(path: str, title: str = "", columns: slice = slice(None), row: str = "", col_axis: str = "") -> Matrix:
        written = model.written[path]
        values = locate(model.params, path)
        axes = model.axes[path]
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
