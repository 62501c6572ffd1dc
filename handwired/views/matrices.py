"""Drawing matrices: a labelled heat map that folds, pages and never cuts a number; an explain step as a panel.

Colour code, everywhere: blue for positive, red for negative, the shade
growing with the magnitude relative to the largest in the same matrix (below
1 % of it, coloured text only); exact zeros dim; masked cells grey.
"""

import math
from collections.abc import Sequence

import numpy as np
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from handwired.engine.trace import Trace
from handwired.views.display import html_fragment
from handwired.views.figures import Matrix, Prediction, Step
from handwired.views.model import mask_note, model_line, window_note
from handwired.views.numbers import column, numbers, probability, value_range
from handwired.views.paging import column_pages, table_width, zero_lines
from handwired.weightfile import Model, fold_labels
from handwired.weightfile.axes import shown

POSITIVE = ("#163d63", "#1d5689", "#2670b3", "#2f8ade")
NEGATIVE = ("#5c1a1a", "#832222", "#ab2b2b", "#d33535")
CHANGED = "•"  # before a value that changed since the previous save (handwired watch); visible without colour
MASKED = ("[", "]")  # around the value of a cell the mask will hide (a key after the query), visible without colour
SHOW_ALL = "--all"  # what the fold line tells a person to add to see everything


def _cell_style(value: float, scale: float) -> str:
    if not math.isfinite(value) or value == 0 or scale == 0:
        return "dim"
    shades = POSITIVE if value > 0 else NEGATIVE
    if abs(value) < scale / 100:  # too faint to shade: the sign still shows in the text colour
        return "#4f8fd6" if value > 0 else "#d65c5c"
    level = min(len(shades) - 1, int(abs(value) / scale * len(shades)))
    return f"bold white on {shades[level]}"


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
        formatted = matrix.texts if matrix.texts is not None else numbers(values, matrix.show_tiny)
        self.texts = [[(CHANGED if self.changed[r, c] else "") + self._future(text, bool(self.future[r, c]))
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
        self.widths = [max([cell_len(matrix.cols[c])] + [cell_len(self.texts[r][c]) for r in self.rows])
                       for c in self.cols]
        # The hook name (where the values live in the trace) follows the title, unless it only repeats it.
        hook = f"  {matrix.hook}" if matrix.hook and matrix.hook != matrix.title else ""
        self.head = Text.assemble((matrix.title, "bold"), (hook, "dim"), "\n", ("rows: ", "dim"),
                                  matrix.row_axis, ("  columns: ", "dim"), matrix.col_axis)
        self.fold_note = self._fold_note(zero_rows, zero_cols, reveal)
        self.caption = self._caption(formatted)

    def __repr__(self) -> str:
        return f"<MatrixView {self.matrix.title!r} {list(self.matrix.values.shape)}, {self.matrix.hook}>"

    def _repr_html_(self) -> str:  # in Jupyter: the table, as the terminal shows it
        return html_fragment([self])

    def _future(self, text: str, future: bool) -> str:
        # a masked cell reads as masked without colour too (NO_COLOR, a pipe): its own text, or its value in brackets
        if not future:
            return text
        return self.matrix.future_text or f"{MASKED[0]}{text}{MASKED[1]}"

    def _fold_note(self, zero_rows: np.ndarray, zero_cols: np.ndarray, reveal: str) -> Text | None:
        m = self.matrix
        if self.everything_zero:
            return Text(f"all {m.values.size} entries are 0 ({len(m.rows)} × {len(m.cols)}); {reveal} to show it",
                        style="dim")
        parts = []
        for mask, labels, kind in ((zero_rows, m.rows, "row"), (zero_cols, m.cols, "column")):
            hidden = [labels[i] for i in np.flatnonzero(mask)]
            if hidden:
                parts.append(f"{len(hidden)} all-zero {kind}{'s' if len(hidden) > 1 else ''} hidden: "
                             f"{fold_labels(hidden)}")
        return Text("; ".join([*parts, f"{reveal} to show them"]), style="dim") if parts else None

    def _caption(self, formatted: Sequence[Sequence[str]]) -> Text | None:
        if self.everything_zero:
            return None
        m = self.matrix
        notes = [value_range(m.values, m.show_tiny), "blue > 0, red < 0, shade ∝ |value|"]
        if self.changed.any():
            notes.insert(0, f"{CHANGED} changed since the previous version ({int(self.changed.sum())})")
        if any("≈0" in row for row in formatted):
            notes.append("≈0: not exactly 0, smaller than 0.0005")
        if self.future.any():
            notes.append(("grey [value]: a key after the query, masked next" if m.future_text is None
                          else "grey: a key after the query, masked")
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
            # fold, not ellipsis: only if one column outgrows the screen
            line = Text(edge, no_wrap=True, overflow="fold")
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
            cells = [(self.texts[r][c],
                      ("grey50" if self.future[r, c] else _cell_style(float(m.values[r, c]), self.scale))
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
    shape = (("shape: ", "dim"), step.shape, "\n") if step.shape else ()
    header = Text.assemble((step.formula, "bold cyan"), "\n", *shape, (step.note, "italic"))
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


def explain_parts(model: Model, run: Trace, panels: list[Step], everything: bool = False) -> list:
    """The explain view: the model, the context, its notes, then each step's panel, folded unless ``everything``."""
    notes = [note for note in (window_note(model, run), mask_note(run)) if note]
    return [model_line(model),
            Text.assemble(("context ", "dim"), (shown(run.window), "bold"), f"  ({len(run.window)} tokens)"),
            *notes,
            *[step_panel(panel, everything) for panel in panels]]


def predictions_table(predictions: tuple[Prediction, ...]) -> Table:
    """position:token, the token it predicts next, that token's probability and its lead in logits."""
    table = Table()
    table.add_column(Text("position:token", style="italic"), style="bold", no_wrap=True, overflow="fold")
    table.add_column("predicts", no_wrap=True, overflow="fold")
    table.add_column("probability", justify="right", no_wrap=True, overflow="fold")
    table.add_column("lead (logits)", justify="right", no_wrap=True, overflow="fold")
    leads = column(np.array([p.lead for p in predictions]), signed=True)
    for p, lead in zip(predictions, leads):
        table.add_row(p.position, Text(p.token + (" (tie)" if p.tied else ""), style="yellow" if p.tied else "green"),
                      probability(p.probability), lead)
    return table
