"""diff's view: the weights two files disagree on, and the contexts whose answer that moved."""

import math

from rich.console import Group, JustifyMethod
from rich.table import Table
from rich.text import Text

from handwired.judge.workbench.compare import Answer, Diff
from handwired.views.model import model_line
from handwired.views.numbers import count, numbers
from handwired.weightfile import Model


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value


def _dash(text: str) -> str:
    return "—" if text == "nan" else text


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def summary(result: Diff) -> str:
    n = len(result.weights)
    weights = f"{count(n, 'weight')} {'differs' if n == 1 else 'differ'}" if n else "no weight differs"
    if not result.changed:
        return f"{weights}; no context's prediction or margin changed ({result.contexts:,} compared)"
    if result.puzzle:
        return (f"{weights}; {result.changed:,} of {result.contexts:,} judged contexts changed: "
                f"{result.now_right:,} fixed, {result.now_wrong:,} broken, {result.margin_only:,} margin only")
    parts = [count(result.predictions, "prediction")]
    if result.target:
        parts[0] += f": {result.now_right:,} now right, {result.now_wrong:,} now wrong"
    parts.append(f"{count(result.changed - result.predictions, 'margin')} only")
    return f"{weights}; {result.changed:,} of {result.contexts:,} contexts changed ({'; '.join(parts)})"


def diff_view(before: Model, after: Model, result: Diff) -> Group:
    parts: list = [Text.assemble(("old ", "dim"), model_line(before)),
                   Text.assemble(("new ", "dim"), model_line(after))]
    if result.weights:
        table = Table(title=f"weights that differ: {len(result.weights)}", title_justify="left")
        columns: tuple[tuple[str, JustifyMethod], ...] = (("weight", "left"), ("old", "right"), ("new", "right"),
                                                          ("new − old", "right"))
        for name, justify in columns:
            table.add_column(name, justify=justify, no_wrap=name == "weight")
        deltas = [None if c.old is None or c.new is None else c.new - c.old for c in result.weights]
        cells = numbers([[_or_nan(c.old), _or_nan(c.new), _or_nan(d)] for c, d in zip(result.weights, deltas)])
        for change, delta, (old, new, moved) in zip(result.weights, deltas, cells):  # one format for the table
            table.add_row(Text(change.label), _dash(old), _dash(new),
                          Text(_dash(moved), style="" if delta is None else ("blue" if delta > 0 else "red")))
        parts.append(table)
    judged = (("  judged by puzzle ", "dim"), result.puzzle) if result.puzzle else \
        (("  judged by the target ", "dim"), repr(result.target)) if result.target else ()
    parts.append(Text.assemble(("compared: ", "dim"), result.checked, *judged))
    if result.shown:
        title = f"contexts that changed: the {len(result.shown)} shortest of {result.changed:,}" \
            if len(result.shown) < result.changed else f"contexts that changed: all {result.changed:,}"
        parts.append(_contexts_table(result, title))
    if result.changed > len(result.shown):
        parts.append(Text(f"{result.changed - len(result.shown):,} more changed; --show N lists more", style="dim"))
    parts.append(Text(summary(result), style="bold"))
    return Group(*parts)


def _contexts_table(result: Diff, title: str) -> Table:
    """The changed contexts: the expected token, the prediction before and after, and the right token's lead (with a
    rule) or the predicted token's margin (without one), before and after."""
    judged = bool(result.target or result.puzzle)
    caption = ("right's lead: the best right token's logit minus the best wrong token's, in logits (negative when "
               "a wrong token is on top); in brackets where the context is not judged, the predicted token's lead "
               "over the next best" if judged else
               "margin: the predicted token's lead over the next best token, in logits")
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    table.add_column("context")
    if judged:
        table.add_column("expected")
    table.add_column("predicted (old → new)")
    for name in (("right's lead old", "right's lead new") if judged else ("margin old", "margin new")):
        table.add_column(name, justify="right")
    values = [[_shown_lead(answer, judged) for answer in (change.old, change.new)] for change in result.shown]
    cells = numbers([[_or_nan(_finite(value)) for value in row] for row in values])  # one format for both columns
    for change, row_values, row_cells in zip(result.shown, values, cells):
        row: list = [Text(change.context)]
        if judged:
            row.append(Text(" or ".join(change.expected)) if change.expected else Text("not judged", style="dim"))
        row.append(Text.assemble(_answer_text(change.old), " → ", _answer_text(change.new)))
        for answer, value, cell in zip((change.old, change.new), row_values, row_cells):
            if judged and answer.lead is None:  # not judged: the predicted token's margin, in brackets
                row.append(Text(f"({_dash(cell)})", style="dim"))
            else:
                row.append(Text(_dash(cell), style="red" if judged and value <= 0 else ""))
        table.add_row(*row)
    return table


def _shown_lead(answer: Answer, judged: bool) -> float:
    """The right token's lead where the rule judges the context, else the predicted token's margin."""
    return answer.lead if judged and answer.lead is not None else answer.margin


def _answer_text(answer: Answer) -> Text:
    style = {True: "green", False: "red", None: ""}[answer.right]
    mark = {True: " ✓", False: " ✗", None: ""}[answer.right]
    return Text(answer.prediction + (" (tie)" if answer.tied else "") + mark, style=style)


def diff_json(before: Model, after: Model, result: Diff) -> dict:
    def answer(a: Answer) -> dict:
        return {"prediction": a.prediction, "tied": a.tied, "margin": _finite(a.margin), "right": a.right,
                "lead": None if a.lead is None else _finite(a.lead)}

    return {
        "old": before.source,
        "new": after.source,
        "weights": [{"label": c.label, "old": c.old, "new": c.new} for c in result.weights],
        "compared": result.checked,
        "target": result.target,
        "puzzle": result.puzzle,
        "contexts": result.contexts,
        "changed": result.changed,
        "predictions_changed": result.predictions,
        "now_right": result.now_right if result.target or result.puzzle else None,
        "now_wrong": result.now_wrong if result.target or result.puzzle else None,
        "margin_only": result.margin_only if result.puzzle else None,
        "shown": [{"context": c.context, "expected": list(c.expected), "old": answer(c.old), "new": answer(c.new)}
                  for c in result.shown],
        "summary": summary(result),
    }
