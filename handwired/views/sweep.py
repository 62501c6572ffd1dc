"""Drawing a sweep: a table and a line plot of the smallest lead (one constant), or a heatmap (two), and the
intervals where every context passes, in words."""

import math

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from handwired.judge.workbench.sweep import MAX_HALVINGS, REFINE, Edge, Interval, Sweep
from handwired.views.model import model_line
from handwired.views.numbers import column, count, exact

PLOT_ROWS = 9  # the line plot's height in characters
PASS, FAIL = "●", "×"  # a point that passes, one that fails: distinct without colour
HEAT_CELL = 3  # a heatmap cell's width in characters: " ● "
TICK = "┬"  # under a heatmap's column whose value is labelled
FLOAT64 = "in float64: a pass is the right token's logit strictly above every other's, as check computes it"


def value(x: float) -> str:
    return f"{x:.6g}"


def _edge(edge: Edge, side: str) -> str:
    return f"fails at {exact(edge.fails)} {side} ({exact(edge.passes)} passes)"


def interval_line(name: str, interval: Interval) -> str:
    """The interval in words, its ends the very values tried (never rounded: a rounded end could be a value that was
    not tried, beyond the last one that passed)."""
    ends = [_edge(e, s) for e, s in ((interval.below, "below"), (interval.above, "above")) if e is not None]
    near = f"; it {' and '.join(ends)}" if ends else ""
    bisected = sum(e.tried for e in (interval.below, interval.above) if e is not None)
    grid = interval.tried - bisected
    tried = (f"{count(interval.tried, 'value')} tried there ({grid:,} on the grid, {bisected:,} by bisection)"
             if bisected else f"{count(grid, 'grid value')} tried there")
    return f"Passes for {name} in [{exact(interval.low)}, {exact(interval.high)}]: at every one of the {tried}{near}."


def summary(sweep: Sweep) -> list[Text]:
    """The verdict in words: the intervals (one constant) or the count of passing points (two)."""
    passing = sum(point.verdict.ok for point in sweep.points)
    if sweep.ranges[1:] or not passing:  # more than one constant
        return [Text(f"Every context passes at {passing:,} of the {len(sweep.points):,} values tried.",
                     style="bold green" if passing else "bold red")]
    name = sweep.ranges[0].name
    lines = [Text(interval_line(name, interval), style="bold green") for interval in sweep.intervals]
    refined = f"to within {value(sweep.precision)}" if sweep.precision else f"to 1/{REFINE} of a grid step"
    short = [e for i in sweep.intervals for e in (i.below, i.above) if e is not None and not e.reached]
    if short:  # float64 has nothing closer, or the bisection's steps ran out
        widest = max(abs(e.passes - e.fails) for e in short)
        refined += (f" ({count(len(short), 'edge')} stopped {value(widest)} wide or less: float64 has nothing "
                    f"between its ends, or the {MAX_HALVINGS} steps an edge may take ran out)")
    edges = any(i.below or i.above for i in sweep.intervals)
    lines.append(Text(f"Edges found by bisection {refined}; between the values tried nothing is proven." if edges
                      else "Every value tried passes, so there is no edge to refine; between the values tried nothing "
                      "is proven.", style="dim"))
    return lines


def lead_texts(verdicts) -> list[Text]:
    """The smallest leads of a column, in the one format the column needs; red where a context fails."""
    texts = column([v.worst if v.finite else float("nan") for v in verdicts])
    return [Text(text if v.finite else "not finite", style="green" if v.finite and v.worst > 0 else "red")
            for v, text in zip(verdicts, texts)]


def table(sweep: Sweep) -> Table:
    """One row per value: the verdict, the contexts that fail, the smallest lead and where."""
    grid = Table()
    for r in sweep.ranges:
        grid.add_column(r.name, justify="right")
    for name in ("verdict", "failed", "smallest lead", "at"):
        grid.add_column(name, justify="left" if name in ("verdict", "at") else "right")
    for point, lead in zip(sweep.points, lead_texts([point.verdict for point in sweep.points])):
        v = point.verdict
        grid.add_row(*map(value, point.values), Text("PASS" if v.ok else "FAIL", style="green" if v.ok else "red"),
                     f"{v.failed:,}", lead, v.worst_context)
    return grid


class Paged:
    """A plot of one column per value: a label before each row, then each row's cells, all ``cell`` characters wide.
    Too wide for the terminal, its columns go on pages one under the other, each with its row labels and its own
    ``footer(start, stop)`` (the axis of values start…stop-1), rather than wrapping or being cut."""

    def __init__(self, labels: list[Text], cells: list[list[Text]], cell: int, footer) -> None:
        self.labels, self.cells, self.cell, self.footer = labels, cells, cell, footer
        self.label_width = max(label.cell_len for label in labels)
        self.n = len(cells[0]) if cells else 0

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = self.label_width + self.cell * self.n
        return Measurement(min(width, self.label_width + self.cell), width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        per_page = max(1, (options.max_width - self.label_width) // self.cell)
        for start in range(0, self.n, per_page):
            stop = min(self.n, start + per_page)
            for label, row in zip(self.labels, self.cells):
                yield Text.assemble(label, *row[start:stop], no_wrap=True, overflow="ignore")
            yield from self.footer(start, stop)


def _axis_note(values, start: int, stop: int) -> str:
    """The values a page shows: all of them, or which ones when the plot is on several pages."""
    n = len(values)
    return f"from {value(values[start])} to {value(values[stop - 1])}" + (
        "" if (start, stop) == (0, n) else f" (values {start + 1}–{stop} of {n})")


def line_plot(sweep: Sweep) -> Group | Paged:
    """The smallest lead against the constant: one column per value, ● passing, × failing, the zero line dotted."""
    leads = [p.verdict.worst if p.verdict.finite else None for p in sweep.points]
    shown = [x for x in leads if x is not None]
    if not shown:
        return Group(Text("No value gave finite logits: nothing to plot.", style="red"))
    sized = [x for x in shown if math.isfinite(x)]  # a lead of ±inf (logits ±1e308 apart) sits on an edge row
    top, bottom = max(max(sized, default=0.0), 0.0), min(min(sized, default=0.0), 0.0)
    scale = max(top, -bottom) or 1.0  # leads in units of the largest: top - bottom may be beyond float64
    span = (top / scale - bottom / scale) or 1.0
    row_of = lambda x: round((top / scale - min(max(x, bottom), top) / scale) / span * (PLOT_ROWS - 1))  # noqa: E731
    rows = [[" "] * len(leads) for _ in range(PLOT_ROWS)]
    zero = row_of(0.0)
    rows[zero] = ["┈"] * len(leads)
    styles: list[list[str | None]] = [[None] * len(leads) for _ in range(PLOT_ROWS)]
    for at, (x, point) in enumerate(zip(leads, sweep.points)):
        row = zero if x is None else row_of(x)
        rows[row][at] = PASS if point.verdict.ok else FAIL
        styles[row][at] = "green" if point.verdict.ok else "red"
    top_text, bottom_text = column([top, bottom])
    width = max(len(top_text), len(bottom_text), 1)
    labels = [Text(f"{top_text if r == 0 else bottom_text if r == PLOT_ROWS - 1 else '0' if r == zero else '':>{width}}"
                   " │", style="dim") for r in range(PLOT_ROWS)]
    cells = [[Text(char, style=style or "dim") for char, style in zip(chars, marks)]
             for chars, marks in zip(rows, styles)]
    swept = sweep.ranges[0]

    def axis(start: int, stop: int) -> list[Text]:
        return [Text(f"{' ' * width} └ {swept.name} {_axis_note(swept.values, start, stop)}"
                     + (", log scale" if swept.log else "") + "; up: the smallest lead", style="dim")]

    return Paged(labels, cells, 1, axis)


def value_axis(texts: list[str], cell: int) -> tuple[str, str]:
    """The axis under a row of cells ``cell`` characters wide, one per value: (the line with a tick under each cell
    labelled, the labels, each centred on its tick, within the cells' width). Every value is labelled when the labels
    fit with a space between two, else every second, third, … and the last."""
    span = cell * len(texts)

    def placed(at: int) -> tuple[int, int]:  # the columns [begin, end) of value at's label
        size = len(texts[at])
        begin = min(max(0, at * cell + cell // 2 - (size - 1) // 2), max(0, span - size))
        return begin, begin + size

    for stride in range(1, len(texts) + 1):
        chosen = list(range(0, len(texts), stride))
        if chosen[-1] != len(texts) - 1:  # the last value too, in place of the one before it if they would touch
            chosen = chosen[:-1] if placed(chosen[-1])[1] >= placed(len(texts) - 1)[0] else chosen
            chosen.append(len(texts) - 1)
        if all(placed(a)[1] < placed(b)[0] for a, b in zip(chosen, chosen[1:])):
            break
    ticks, labels = ["─"] * span, [" "] * max(span, placed(chosen[-1])[1])
    for at in chosen:
        begin, end = placed(at)
        ticks[at * cell + cell // 2] = TICK
        labels[begin:end] = texts[at]
    return "".join(ticks), "".join(labels).rstrip()


def heatmap(sweep: Sweep) -> Group:
    """Two constants: one cell per pair, ● passing (on green, brighter for a larger lead), × failing (on red)."""
    across, down = sweep.ranges
    n = len(across.values)
    best = max([p.verdict.worst for p in sweep.points if p.verdict.ok and p.verdict.worst < float("inf")] or [1.0])
    width = max(len(value(x)) for x in down.values)
    labels, cells = [], []
    for row in reversed(range(len(down.values))):  # the largest value at the top
        labels.append(Text(f"{value(down.values[row]):>{width}} │", style="dim"))
        cells.append([])
        for point in sweep.points[row * n:(row + 1) * n]:
            v = point.verdict
            if v.ok:
                shade = min(1.0, v.worst / best) if v.worst < float("inf") else 1.0
                cells[-1].append(Text(f" {PASS} ", style=f"bold rgb(255,255,255) on rgb(0,{90 + int(120 * shade)},60)"))
            else:
                cells[-1].append(Text(f" {FAIL} ", style="bold rgb(255,255,255) on rgb(200,40,40)"))
    scale = ", log scale" if across.log else ""

    def axis(start: int, stop: int) -> list[Text]:
        ticks, labels = value_axis([value(x) for x in across.values[start:stop]], HEAT_CELL)
        name = f"{across.name:>{width + 1}} " if len(across.name) <= width + 1 else " " * (width + 2)  # else below
        some = ticks.count(TICK)
        labelled = "" if some == stop - start else f"; {TICK} marks the {some} of these {stop - start} values labelled"
        return [Text(f"{' ' * width} └{ticks}", style="dim"), Text(name + labels, style="dim"),
                Text(f"{' ' * width}   {across.name} {_axis_note(across.values, start, stop)} →{scale}{labelled}; "
                     f"{PASS} passes (brighter: a larger smallest lead), {FAIL} fails", style="dim")]

    return Group(Text.assemble((f"{down.name:>{width}}", "bold"), (" ↑, log scale" if down.log else "", "dim")),
                 Paged(labels, cells, HEAT_CELL, axis))


def sweep_view(model, sweep: Sweep) -> Group:
    names = " and ".join(r.name for r in sweep.ranges)
    parts: list = [model_line(model),
                   Text.assemble(("sweep of ", "dim"), (names, "bold"),
                                 (f" over {sweep.source} ({count(sweep.judged, 'context')} judged at each value), "
                                  f"{FLOAT64}", "dim"))]
    if len(sweep.ranges) == 1:
        parts += [table(sweep), line_plot(sweep)]
    else:
        parts.append(heatmap(sweep))
    return Group(*parts, *summary(sweep))


def sweep_json(model, sweep: Sweep) -> dict:
    def edge(e: Edge | None):
        return None if e is None else {"fails": e.fails, "passes": e.passes, "reached_precision": e.reached}

    return {
        "model": model.name,
        "weights": model.source,
        "contexts": sweep.source,
        "judged": sweep.judged,
        "arithmetic": "float64",
        "constants": [{"name": r.name, "values": r.values.tolist(), "log": r.log} for r in sweep.ranges],
        "points": [{"values": dict(zip((r.name for r in sweep.ranges), p.values)), "passes": p.verdict.ok,
                    "failed": p.verdict.failed, "finite": p.verdict.finite,
                    "smallest_lead": p.verdict.worst if p.verdict.finite else None,
                    "at": p.verdict.worst_context or None} for p in sweep.points],
        "intervals": [{"low": i.low, "high": i.high, "tried": i.tried, "below": edge(i.below),
                       "above": edge(i.above)} for i in sweep.intervals],
        "precision": sweep.precision,
    }
