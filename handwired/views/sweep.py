"""Drawing a sweep: a table and a line plot of the smallest lead (one constant), or a heatmap (two), and the
intervals where every context passes, in words."""

from rich.console import Group
from rich.table import Table
from rich.text import Text

from handwired.judge.sweep import REFINE, Edge, Interval, Sweep
from handwired.views.model import model_line
from handwired.views.numbers import column, count

PLOT_ROWS = 9  # the line plot's height in characters
PASS, FAIL = "●", "×"  # a point that passes, one that fails: distinct without colour
FLOAT64 = "in float64: a pass is the right token's logit strictly above every other's, as check computes it"


def distinct(low: float, high: float) -> tuple[str, str]:
    """Two values with as many significant digits as it takes to tell them apart."""
    for digits in range(4, 18):
        a, b = f"{low:.{digits}g}", f"{high:.{digits}g}"
        if a != b:
            return a, b
    return repr(low), repr(high)


def value(x: float) -> str:
    return f"{x:.6g}"


def _edge(edge: Edge, side: str) -> str:
    fails, passes = distinct(edge.fails, edge.passes)
    return f"fails at {fails} {side} ({passes} passes)"


def interval_line(name: str, interval: Interval) -> str:
    low = distinct(interval.below.fails, interval.below.passes)[1] if interval.below else value(interval.low)
    high = distinct(interval.above.fails, interval.above.passes)[1] if interval.above else value(interval.high)
    ends = [_edge(e, s) for e, s in ((interval.below, "below"), (interval.above, "above")) if e is not None]
    near = f"; it {' and '.join(ends)}" if ends else ""
    return (f"Passes for {name} in [{low}, {high}]: at every one of the {count(interval.tried, 'value')} tried "
            f"there{near}.")


def summary(sweep: Sweep) -> list[Text]:
    """The verdict in words: the intervals (one constant) or the count of passing points (two)."""
    passing = sum(point.verdict.ok for point in sweep.points)
    if sweep.ranges[1:] or not passing:  # more than one constant
        return [Text(f"Every context passes at {passing:,} of the {len(sweep.points):,} values tried.",
                     style="bold green" if passing else "bold red")]
    name = sweep.ranges[0].name
    lines = [Text(interval_line(name, interval), style="bold green") for interval in sweep.intervals]
    refined = (f"to within {value(sweep.precision)} (or as near as float64 allows)" if sweep.precision
               else f"to 1/{REFINE} of a grid step")
    lines.append(Text(f"Edges found by bisection {refined}; between the values tried nothing is proven.",
                      style="dim"))
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


def line_plot(sweep: Sweep) -> Group:
    """The smallest lead against the constant: one column per value, ● passing, × failing, the zero line dotted."""
    leads = [p.verdict.worst if p.verdict.finite else None for p in sweep.points]
    shown = [x for x in leads if x is not None]
    if not shown:
        return Group(Text("No value gave finite logits: nothing to plot.", style="red"))
    top, bottom = max(max(shown), 0.0), min(min(shown), 0.0)
    span = (top - bottom) or 1.0
    row_of = lambda x: round((top - x) / span * (PLOT_ROWS - 1))  # noqa: E731
    rows = [[" "] * len(leads) for _ in range(PLOT_ROWS)]
    zero = row_of(0.0)
    rows[zero] = ["┈"] * len(leads)
    styles = [[None] * len(leads) for _ in range(PLOT_ROWS)]
    for at, (x, point) in enumerate(zip(leads, sweep.points)):
        row = zero if x is None else row_of(x)
        rows[row][at] = PASS if point.verdict.ok else FAIL
        styles[row][at] = "green" if point.verdict.ok else "red"
    top_text, bottom_text = column([top, bottom])
    width = max(len(top_text), len(bottom_text), 1)
    lines = []
    for r, (chars, marks) in enumerate(zip(rows, styles)):
        label = top_text if r == 0 else bottom_text if r == PLOT_ROWS - 1 else "0" if r == zero else ""
        text = Text(f"{label:>{width}} │", style="dim")
        for char, style in zip(chars, marks):
            text.append(char, style=style or "dim")
        lines.append(text)
    swept = sweep.ranges[0]
    axis = f"{' ' * width} └ {swept.name} from {value(swept.values[0])} to {value(swept.values[-1])}"
    lines.append(Text(axis + (", log scale" if swept.log else "") + "; up: the smallest lead", style="dim"))
    return Group(*lines)


def heatmap(sweep: Sweep) -> Group:
    """Two constants: one cell per pair, ● passing (on green, brighter for a larger lead), × failing (on red)."""
    across, down = sweep.ranges
    n = len(across.values)
    best = max([p.verdict.worst for p in sweep.points if p.verdict.ok and p.verdict.worst < float("inf")] or [1.0])
    width = max(len(value(x)) for x in down.values)
    lines = [Text(f"{down.name:>{width}}", style="bold")]
    for row in reversed(range(len(down.values))):  # the largest value at the top
        text = Text(f"{value(down.values[row]):>{width}} │", style="dim")
        for point in sweep.points[row * n:(row + 1) * n]:
            v = point.verdict
            if v.ok:
                shade = min(1.0, v.worst / best) if v.worst < float("inf") else 1.0
                text.append(f" {PASS} ", style=f"bold rgb(255,255,255) on rgb(0,{90 + int(120 * shade)},60)")
            else:
                text.append(f" {FAIL} ", style="bold rgb(255,255,255) on rgb(200,40,40)")
        lines.append(text)
    lines.append(Text(f"{' ' * width} └{'───' * n}", style="dim"))
    lines.append(Text(f"{' ' * width}   {across.name}: " + "  ".join(map(value, across.values)), style="dim"))
    scale = ", log scale" if across.log or down.log else ""
    lines.append(Text(f"{' ' * width}   {across.name} from {value(across.values[0])} to "
                      f"{value(across.values[-1])} →{scale}; {PASS} passes (brighter: a larger smallest lead), "
                      f"{FAIL} fails", style="dim"))
    return Group(*lines)


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
        return None if e is None else {"fails": e.fails, "passes": e.passes}

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
