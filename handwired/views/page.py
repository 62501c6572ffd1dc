"""The live page's data: what ``handwired watch FILE --page`` sends the browser, as one JSON document per view.

Pure, like :mod:`handwired.views.watch`, whose :class:`~handwired.views.watch.State` it reads: the explain
steps (:mod:`handwired.views.steps`, the matrices ``explain`` draws, with their formula, shape and labels), the
verdict (the report as ``check --json`` prints it, :func:`handwired.views.report.report_json`), the weights
edited since the previous version and the cells they changed, and the error of a save that does not load.

Every string in the document is escaped as the terminal escapes it (:func:`handwired.weightfile.axes.escaped`):
a token, a label or an error line from the file reaches the page with its control and bidi characters
written as escapes, and the page puts text in the DOM as text, never as markup. Numbers are sent whole (JSON
keeps a float64 exactly) beside the text the terminal prints for them; −∞, ∞ and nan, which JSON has not, as
that text.
"""

import math
import time
from importlib.resources import files

import numpy as np
from rich.text import Text

from handwired.judge.judging import Verdict
from handwired.views.figures import Matrix, Prediction, Step
from handwired.views.matrices import MatrixView
from handwired.views.model import context_json, model_line, window_note
from handwired.views.numbers import logit_gap, number, numbers, probability, value_range
from handwired.views.report import margin_line, proof_line, report_json
from handwired.views.watch import Snapshot, State, changed_cells, edited_weights
from handwired.weightfile.axes import escaped, printable

ASSETS = ("page.html", "page.css", "page.js")  # the page itself, package data beside this module
REVEAL = "tick “all rows and columns”"  # what a fold note tells a person to do to see everything


def asset(name: str) -> str:
    """The text of one of the page's files (:data:`ASSETS`)."""
    if name not in ASSETS:
        raise ValueError(f"{name!r} is not one of the page's files")
    return files("handwired.views").joinpath(name).read_text(encoding="utf-8")


def _clock(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(seconds))


def safe(value):
    """``value`` with every string in it (keys too) escaped as the terminal escapes text from a file."""
    if isinstance(value, str):
        return escaped(value)
    if isinstance(value, dict):
        return {safe(key): safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [safe(item) for item in value]
    return value


def exact(value: float) -> float | str:
    """A value for JSON: the float itself (exact), or the text the views print when JSON cannot hold it."""
    value = float(value)
    return value if math.isfinite(value) else number(value)


def _tone(text: Text) -> str:
    """A line's colour in the terminal, as a word the page styles: bad, good, warn, or plain."""
    style = str(text.style) + " ".join(str(span.style) for span in text.spans)
    return "bad" if "red" in style else "good" if "green" in style else "warn" if "yellow" in style else "plain"


def _line(text: Text) -> dict:
    return {"text": text.plain, "tone": _tone(text)}


# ---------------------------------------------------------------- the explain steps


def matrix_json(matrix: Matrix, changed: np.ndarray | None = None) -> dict:
    """One matrix: labels, each cell's exact value and printed text, which cells are masked and which changed."""
    values = matrix.values
    texts = matrix.texts if matrix.texts is not None else numbers(values, matrix.show_tiny)
    finite = np.abs(values[np.isfinite(values)])
    folded = MatrixView(matrix, reveal=REVEAL, changed=changed)  # which rows and columns explain folds away
    return {
        "title": matrix.title, "hook": matrix.hook, "shape": list(values.shape),
        "rows": list(matrix.rows), "cols": list(matrix.cols),
        "row_axis": matrix.row_axis, "col_axis": matrix.col_axis,
        "corner": matrix.corner or f"{matrix.row_axis} ╲ {matrix.col_axis}",
        "values": [[exact(v) for v in row] for row in values],
        "texts": [list(row) for row in texts],
        "scale": float(finite.max()) if finite.size else 0.0,
        "range": value_range(values, matrix.show_tiny),
        "future": None if matrix.future is None else matrix.future.tolist(),
        "future_text": matrix.future_text,
        "changed": None if changed is None else changed.tolist(),
        "kept_rows": folded.rows, "kept_cols": folded.cols, "all_zero": folded.everything_zero,
        "fold_note": folded.fold_note.plain if folded.fold_note is not None else "",
    }


def prediction_json(prediction: Prediction) -> dict:
    return {"position": prediction.position, "token": prediction.token, "tied": prediction.tied,
            "probability": prediction.probability, "probability_text": probability(prediction.probability),
            "lead": exact(prediction.lead), "lead_text": logit_gap(prediction.lead)}


def step_json(step: Step, marks: dict[tuple[str, str], np.ndarray]) -> dict:
    return {
        "key": step.key, "title": step.title, "formula": step.formula, "shape": step.shape, "note": step.note,
        "side_by_side": step.side_by_side,
        "matrices": [matrix_json(m, marks.get((step.title, m.title))) for m in step.matrices],
        "predictions": [prediction_json(p) for p in step.predictions],
    }


# ---------------------------------------------------------------- the verdict


def verdict_json(verdict: Verdict, earlier: Verdict | None = None) -> dict:
    """The verdict: how it was judged, its lines as the terminal words them, and the report as check --json."""
    report = verdict.report
    result: dict = {"how": verdict.how, "reason": verdict.reason, "notes": [str(note) for note in verdict.notes],
                    "ok": None if report is None else report.ok, "lines": [], "report": None, "failures": [],
                    "solved": verdict.solved, "misfit": list(verdict.misfit)}
    if report is None:
        return result
    result["report"] = report_json(report)
    counts = (f"{report.passed:,} passed, {report.failed:,} failed, "
              f"{report.ambiguous + report.out_of_domain:,} not judged of {report.checked:,}")
    if earlier is not None and earlier.report is not None and (earlier.report.passed, earlier.report.failed) != (
            report.passed, report.failed):
        counts += f" (previous version: {earlier.report.passed:,} passed, {earlier.report.failed:,} failed)"
    result["counts"] = counts
    for line in (proof_line(report), None if report.margin is None else margin_line(report.margin,
                                                                                      report.near_miss())):
        if line is not None:
            result["lines"].append(_line(line))
    result["failures"] = [{"context": f.context, "expected": " or ".join(f.acceptable), "predicted": f.predicted,
                           "tied": f.tied, "gap": exact(f.gap), "gap_text": logit_gap(f.gap)}
                          for f in report.failures]
    result["more_failures"] = max(0, report.failed - len(report.failures))
    return result


# ---------------------------------------------------------------- the whole page


def error_json(failed: Snapshot, good: Snapshot | None) -> dict:
    """A save that does not load: its one-line errors, as the command line prints them, and what is shown."""
    after = (f"Showing the last version that loaded, saved {_clock(good.saved)}." if good is not None
             else "Nothing to show until it loads.")
    return {"title": f"{failed.path} does not load ({_clock(failed.saved)})",
            "lines": [printable(problem) for problem in failed.errors],
            "after": f"Still watching: save again to redraw. {after}"}


def _edits(state: State, good: Snapshot) -> dict:
    edits = edited_weights(state.before, good)
    if isinstance(edits, str):
        return {"changes": [], "not_compared": edits}
    return {"changes": [{"label": c.label, "old": None if c.old is None else exact(c.old),
                         "new": None if c.new is None else exact(c.new),
                         "old_text": "—" if c.old is None else number(c.old),
                         "new_text": "—" if c.new is None else number(c.new)} for c in edits],
            "not_compared": None}


def document(state: State, asked: str | None = None, refused: dict | None = None) -> dict:
    """Everything the page shows for ``state``, escaped (see the module). ``asked``: the context the page asked
    for, None for the default (the file's example, or a puzzle's shortest failure); ``refused``: a context it
    asked for that cannot be drawn, ``{"text": …, "lines": [its errors]}``."""
    page: dict = {"asked": asked, "error": None if state.failed is None else error_json(state.failed, state.good),
                  "refused": refused, "view": None}
    good = state.good
    if good is not None:
        model, run, verdict = good.loaded()
        marks = changed_cells(state.before, good)
        earlier = state.before.loaded()[2] if state.before is not None else None
        note = window_note(model, run)
        page["view"] = {
            "file": str(good.path), "saved": _clock(good.saved), "model": model_line(model).plain,
            "context": {**context_json(model, run), "drawn": good.drawn, "note": note.plain if note else ""},
            "verdict": verdict_json(verdict, earlier),
            "headline": [_line(line) for line in good.headline],
            "edits": _edits(state, good),
            "changed_values": int(sum(int(mask.sum()) for mask in marks.values())),
            "compared": state.before is not None,
            "steps": [step_json(step, marks) for step in good.steps],
        }
    escaped_page: dict = safe(page)
    return escaped_page


def status_line(state: State) -> str:
    """One line for the terminal the page was started from: the verdict of the latest save, or its error."""
    if state.failed is not None:
        return f"{_clock(state.failed.saved)} does not load: {printable(state.failed.errors[0])}"
    if state.good is None:
        return "nothing loaded yet"
    verdict = state.good.loaded()[2]
    report = verdict.report
    if report is None:
        return printable(f"{_clock(state.good.saved)} {verdict.how}: {verdict.reason}")
    word = "PASS" if report.ok else "FAIL"
    return printable(f"{_clock(state.good.saved)} {word} {verdict.how}: {report.passed:,} passed, "
                     f"{report.failed:,} failed, "
                     f"{report.ambiguous + report.out_of_domain:,} not judged of {report.checked:,}")
