"""diff's view: the weights two files disagree on, and the contexts whose answer that moved."""

import math

from rich.console import Group, JustifyMethod
from rich.table import Table
from rich.text import Text

from handwired.judge.compare import Answer, Diff
from handwired.views.model import model_line
from handwired.views.numbers import count, number
from handwired.weightfile import Model


def _number(value: float | None) -> str:
    return "—" if value is None else number(value)


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
        for change in result.weights:
            delta = None if change.old is None or change.new is None else change.new - change.old
            table.add_row(Text(change.label), _number(change.old), _number(change.new),
                          Text(_number(delta), style="" if delta is None else ("blue" if delta > 0 else "red")))
        parts.append(table)
    judged = (("  judged by puzzle ", "dim"), result.puzzle) if result.puzzle else \
        (("  judged by the target ", "dim"), repr(result.target)) if result.target else ()
    parts.append(Text.assemble(("compared: ", "dim"), result.checked, *judged))
    if result.shown:
        title = f"contexts that changed: the {len(result.shown)} shortest of {result.changed:,}" \
            if len(result.shown) < result.changed else f"contexts that changed: all {result.changed:,}"
        table = Table(title=title, title_justify="left",
                      caption="margin: the predicted token's lead over the next best token, in logits",
                      caption_justify="left")
        table.add_column("context")
        if result.target or result.puzzle:
            table.add_column("expected")
        for name in ("predicted (old → new)", "margin old", "margin new"):
            table.add_column(name, justify="left" if name.startswith("predicted") else "right")
        for change in result.shown:
            row: list = [Text(change.context)]
            if result.target or result.puzzle:
                row.append(Text(" or ".join(change.expected)) if change.expected else Text("not judged", style="dim"))
            row += [Text.assemble(_answer_text(change.old), " → ", _answer_text(change.new)),
                    _number(_finite(change.old.margin)), _number(_finite(change.new.margin))]
            table.add_row(*row)
        parts.append(table)
    if result.changed > len(result.shown):
        parts.append(Text(f"{result.changed - len(result.shown):,} more changed; --show N lists more", style="dim"))
    parts.append(Text(summary(result), style="bold"))
    return Group(*parts)


def _answer_text(answer: Answer) -> Text:
    style = {True: "green", False: "red", None: ""}[answer.right]
    mark = {True: " ✓", False: " ✗", None: ""}[answer.right]
    return Text(answer.prediction + (" (tie)" if answer.tied else "") + mark, style=style)


def diff_json(before: Model, after: Model, result: Diff) -> dict:
    def answer(a: Answer) -> dict:
        return {"prediction": a.prediction, "tied": a.tied, "margin": _finite(a.margin), "right": a.right}

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
