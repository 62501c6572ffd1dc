"""Drawing a spread: per group its count, range and histogram on one shared axis, then the threshold in words."""

from rich.console import Group
from rich.table import Table
from rich.text import Text

from handwired.judge.workbench.separation import Separation
from handwired.judge.workbench.spread import LEAD, Spread
from handwired.views.model import model_line
from handwired.views.numbers import count, number, numbers
from handwired.weightfile import Model

LEVELS = "▁▂▃▄▅▆▇█"  # a bin's count relative to its group's fullest bin
EMPTY = "·"  # a bin with no context: visible without colour
BY = {"answer": "the right answer", "predicted": "the predicted token", "last-token": "the last token",
      "length": "the context's length"}


def where(spread: Spread) -> str:
    return "the last position" if spread.position == -1 else f"position {spread.position}"


def bars(counts) -> str:
    """One character per bin: its count as a bar height, relative to the fullest bin; empty bins dotted."""
    top = max(int(counts.max()), 1)
    return "".join(EMPTY if c == 0 else LEVELS[min(len(LEVELS) - 1, -(-int(c) * len(LEVELS) // top) - 1)]
                   for c in counts)


def bound(value: float) -> str:
    """An end of a threshold's interval: a tiny one in full (-5.2e-15, not ≈0), for a threshold must fall between."""
    return number(value, show_tiny=True)


def verdict(separation: Separation | None) -> str:
    """Whether the groups' values overlap, and if not the thresholds that separate them, in plain words."""
    if separation is None:
        return "One group only: nothing to separate."
    runs = separation.runs
    if separation.shared is not None:  # not separated
        low, high = separation.shared
        ends = numbers([[low, high]], show_tiny=True)[0]  # one format for both ends: never [2.000, 2]
        span = f"at {bound(low)}" if low == high else f"on [{ends[0]}, {ends[1]}]"
        return f"The groups overlap {span}: no threshold separates them."
    intervals = [f"({bound(low)}, {bound(high)})" for low, high in separation.thresholds]
    if len(runs) == len(set(runs)) and len(runs) == 2:
        return f"The groups do not overlap: any threshold in {intervals[0]} separates {runs[0]} from {runs[1]}."
    order = " < ".join(runs)
    again = sorted({key for key in runs if runs.count(key) > 1})
    both_sides = "".join(f" {key} lies on both sides of {', '.join(k for k in dict.fromkeys(runs) if k != key)}."
                         for key in again)
    return (f"The values do not overlap; along the axis they run {order}.{both_sides} "
            f"{'A threshold' if len(intervals) == 1 else 'One threshold'} in each of "
            f"{', '.join(intervals)} separates them.")


def spread_view(model: Model, spread: Spread) -> Group:
    low, high = spread.edges[0], spread.edges[-1]
    lines: list = [
        model_line(model),
        Text.assemble((spread.probe.name, "bold"), f" at {where(spread)}, over {spread.source}, grouped by ",
                      BY[spread.by]),
    ]
    table = Table()
    table.add_column(spread.by)
    table.add_column("count", justify="right")
    table.add_column("min", justify="right")
    table.add_column("max", justify="right")
    (low_text, high_text), *ends = numbers([[low, high]] + [[group.low, group.high] for group in spread.groups])
    table.add_column(f"{low_text} … {high_text}", no_wrap=True)  # the axis's ends as the cells print, one format
    for group, (low_text, high_text) in zip(spread.groups, ends):
        table.add_row(group.key, f"{group.count:,}", low_text, high_text, bars(group.histogram))
    lines.append(table)
    skipped = []
    if spread.not_judged:
        skipped.append(f"{count(spread.not_judged, 'context')} the rule does not judge (ambiguous or out of domain)")
    if spread.too_short:
        other = spread.probe.other if spread.probe.op == "/" else None  # a ratio has no value where B is 0
        skipped.append(f"{count(spread.too_short, 'context')} without {where(spread)} or that key"
                       + (f", or where {other.column} is 0 (no ratio)" if other is not None else ""))
    if skipped:
        lines.append(Text("Not in a group: " + "; ".join(skipped) + ".", style="dim"))
    axis_low, axis_high = numbers([[low, high]] + [[group.low, group.high] for group in spread.groups])[0]
    lines.append(Text(f"histogram: {len(spread.edges) - 1} bins from {axis_low} to {axis_high}, shared by "
                      f"every group; bar height ∝ the bin's count, {EMPTY} = none", style="dim"))
    lines.append(Text(spread_verdict(spread), style="bold"))
    return Group(*lines)


def spread_verdict(spread: Spread) -> str:
    """What the spread says: for a lead, whether every right token leads (its sign decides a context, not a
    threshold between the groups); for anything else, what separates the groups."""
    if spread.probe.hook != LEAD:
        return verdict(spread.separation)
    if not spread.groups:
        return "No judged context: no lead to read."
    worst = min(spread.groups, key=lambda group: group.low)
    if worst.low > 0:
        return (f"Every lead is above 0: the right token leads in every judged context (the smallest, "
                f"{bound(worst.low)}, where {BY[spread.by]} is {worst.key}).")
    return (f"Not every lead is above 0: the smallest, {bound(worst.low)}, is where {BY[spread.by]} is {worst.key}; "
            "a context whose lead is 0 or below fails.")


def spread_json(model: Model, spread: Spread) -> dict:
    separation = spread.separation
    return {
        "model": model.name,
        "weights": model.source,
        "value": spread.probe.name,
        "hook": spread.probe.hook,
        "column": spread.probe.column,
        "head": spread.probe.head,
        "position": spread.position,
        "contexts": spread.source,
        "by": spread.by,
        "total": spread.total,
        "grouped": spread.shown,
        "not_judged": spread.not_judged,
        "without_position": spread.too_short,
        "bins": spread.edges.tolist(),
        "groups": [{"group": g.key, "count": g.count, "min": g.low, "max": g.high,
                    "histogram": g.histogram.tolist()} for g in spread.groups],
        "overlap": None if separation is None or separation.shared is None else list(separation.shared),
        "order": None if separation is None else list(separation.runs),
        "thresholds": None if separation is None or not separation.separated
        else [list(pair) for pair in separation.thresholds],
        "verdict": spread_verdict(spread),
    }
