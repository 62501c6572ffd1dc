"""diff: the weights two files disagree on, and the contexts whose answer that moves."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import numpy as np
import typer
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from handwired import render
from handwired.cli.app import EXIT_INTERRUPTED, ForceOption, HtmlOption, Output, SvgOption, app, user_errors
from handwired.weightfile import Model, load

if TYPE_CHECKING:
    from handwired import diff as diffing

SHOW = 20  # --show's default, as handwired.diff.SHOW (a test holds them equal), kept out of the imports


@app.command()
@user_errors
def diff(
    old: Annotated[str, typer.Argument(help="The weight file before the edit (or a bundled model's name).")],
    new: Annotated[str, typer.Argument(help="The weight file after the edit.")],
    show: Annotated[int, typer.Option(help="How many changed contexts to list, shortest first.")] = SHOW,
    sample: Annotated[
        Optional[int], typer.Option(help="Compare this many random contexts instead of every one.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Random seed for --sample.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable comparison.")] = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """List the weights that differ, by label, and every context whose prediction or margin changed."""
    from handwired import diff as diffing  # here, not above: the other commands start faster without it
    before, after = load(old), load(new)
    out = Output(svg, html, force, reading=(Path(before.source), Path(after.source)), as_json=as_json)
    try:
        result = diffing.compare(before, after, sample, seed, show)
    except KeyboardInterrupt:
        Console(stderr=True, highlight=False).print("interrupted: nothing compared is reported")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if as_json:
        typer.echo(json.dumps(diff_json(before, after, result), indent=2, ensure_ascii=False))
        return
    out.show(lambda everything: [diff_view(before, after, result)])


def _number(value: float | None) -> str:
    return "—" if value is None else render.format_values(np.array([[value]]))[0][0]


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def summary(result: "diffing.Diff") -> str:
    n = len(result.weights)
    weights = ("1 weight differs" if n == 1 else f"{n:,} weights differ") if n else "no weight differs"
    if not result.changed:
        return f"{weights}; no context's prediction or margin changed ({result.contexts:,} compared)"
    parts = [f"{result.predictions:,} prediction{'s' if result.predictions != 1 else ''}"]
    if result.target:
        parts[0] += f": {result.now_right:,} now right, {result.now_wrong:,} now wrong"
    parts.append(f"{result.changed - result.predictions:,} margin{'s' if result.changed - result.predictions != 1 else ''} only")
    return f"{weights}; {result.changed:,} of {result.contexts:,} contexts changed ({'; '.join(parts)})"


def diff_view(before: Model, after: Model, result: "diffing.Diff") -> Group:
    parts: list = [Text.assemble(("old ", "dim"), render.model_line(before)),
                   Text.assemble(("new ", "dim"), render.model_line(after))]
    if result.weights:
        table = Table(title=f"weights that differ: {len(result.weights)}", title_justify="left")
        for name, justify in (("weight", "left"), ("old", "right"), ("new", "right"), ("new − old", "right")):
            table.add_column(name, justify=justify, no_wrap=name == "weight")
        for change in result.weights:
            delta = None if change.old is None or change.new is None else change.new - change.old
            table.add_row(Text(change.label), _number(change.old), _number(change.new),
                          Text(_number(delta), style="" if delta is None else ("blue" if delta > 0 else "red")))
        parts.append(table)
    parts.append(Text.assemble(("compared: ", "dim"), result.checked,
                               ("  judged by the target ", "dim") if result.target else "",
                               repr(result.target) if result.target else ""))
    if result.shown:
        title = f"contexts that changed: the {len(result.shown)} shortest of {result.changed:,}" \
            if len(result.shown) < result.changed else f"contexts that changed: all {result.changed:,}"
        table = Table(title=title, title_justify="left",
                      caption="margin: the predicted token's lead over the next best token, in logits",
                      caption_justify="left")
        table.add_column("context")
        if result.target:
            table.add_column("expected")
        for name in ("predicted (old → new)", "margin old", "margin new"):
            table.add_column(name, justify="left" if name.startswith("predicted") else "right")
        for change in result.shown:
            row: list = [Text(change.context)]
            if result.target:
                row.append(Text(" or ".join(change.expected)) if change.expected else Text("not judged", style="dim"))
            row += [Text.assemble(_answer_text(change.old), " → ", _answer_text(change.new)),
                    _number(_finite(change.old.margin)), _number(_finite(change.new.margin))]
            table.add_row(*row)
        parts.append(table)
    if result.changed > len(result.shown):
        parts.append(Text(f"{result.changed - len(result.shown):,} more changed; --show N lists more", style="dim"))
    parts.append(Text(summary(result), style="bold"))
    return Group(*parts)


def _answer_text(answer: "diffing.Answer") -> Text:
    style = {True: "green", False: "red", None: ""}[answer.right]
    mark = {True: " ✓", False: " ✗", None: ""}[answer.right]
    return Text(answer.prediction + (" (tie)" if answer.tied else "") + mark, style=style)


def diff_json(before: Model, after: Model, result: "diffing.Diff") -> dict:
    def answer(a: "diffing.Answer") -> dict:
        return {"prediction": a.prediction, "tied": a.tied, "margin": _finite(a.margin), "right": a.right}

    return {
        "old": before.source,
        "new": after.source,
        "weights": [{"label": c.label, "old": c.old, "new": c.new} for c in result.weights],
        "compared": result.checked,
        "target": result.target,
        "contexts": result.contexts,
        "changed": result.changed,
        "predictions_changed": result.predictions,
        "now_right": result.now_right if result.target else None,
        "now_wrong": result.now_wrong if result.target else None,
        "shown": [{"context": c.context, "expected": list(c.expected), "old": answer(c.old), "new": answer(c.new)}
                  for c in result.shown],
        "summary": summary(result),
    }
