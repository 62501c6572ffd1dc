"""attend's inputs and view: matrices given inline or in a JSON file, and the step drawn as explain draws one.

Matrices come inline (``62``; ``60,64,68``; ``64,85;61,80``) or as a small JSON
object with ``q``, ``k`` and ``v`` (or ``x`` for self-attention). The view is a
list of explain-style :class:`~handwired.views.steps.Step` objects.
"""

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from handwired.engine.attend import Attention
from handwired.errors import HandwiredError
from handwired.views.figures import Matrix, Step
from handwired.weightfile import read_json
from handwired.weightfile.checker import describe
from handwired.weightfile.jsonfile import loads

INPUT_KEYS = ("q", "k", "v", "x")

def _short(text: str) -> str:
    """An argument quoted in a message, cut if long (one line, never a screenful)."""
    return repr(text) if len(text) <= 40 else repr(text[:37] + "…")




def parse_inline(text: str, what: str) -> np.ndarray:
    """``62`` -> [[62]]; ``60,64,68`` -> three rows of one number; ``64,85;61,80`` -> two rows of two.

    Without ``;`` each number is a row of its own (one-dimensional attention,
    as in kernel regression); a single row of several numbers ends with ``;``
    (``64,85;``). JSON lists (``[[64, 85]]``) are accepted too.
    """
    text = text.strip()
    if text.startswith("["):
        try:
            return to_matrix(loads(text), what)
        except json.JSONDecodeError as error:
            raise HandwiredError(f"{what} {_short(text)}: not a valid JSON list ({error.msg})") from None
        except RecursionError:
            raise HandwiredError(f"{what} {_short(text)}: nested too deeply; expected a list of rows") from None
    if not text:
        raise HandwiredError(f"{what}: empty; expected numbers, e.g. 60,64,68 or 64,85;61,80")
    if ";" not in text:
        return to_matrix([_number(part, what, text) for part in text.split(",")], what)
    rows = text.split(";")
    if rows[-1].strip() == "":  # a trailing ';' closes the last row
        rows = rows[:-1]
    return to_matrix([[_number(part, what, text) for part in row.split(",")] for row in rows], what)


def _number(part: str, what: str, text: str) -> float:
    try:
        value = float(part)
    except ValueError:
        shown = part.strip() or "nothing"
        raise HandwiredError(f"{what} {text!r}: {shown!r} is not a number "
                             "(',' separates numbers in a row, ';' separates rows)") from None
    if not math.isfinite(value):
        raise HandwiredError(f"{what} {text!r}: {part.strip()!r} is not a finite number")
    return value


def to_matrix(value: Any, what: str) -> np.ndarray:
    """A number, a list of numbers (one a row) or a list of rows -> [rows, cols] float64."""
    def number(item: Any, where: str) -> float:
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise HandwiredError(f"{where}: {_short(item) if isinstance(item, str) else describe(item)} "
                                 "is not a number")
        if abs(item) > sys.float_info.max or not math.isfinite(item):  # an integer beyond float64's range too
            raise HandwiredError(f"{where}: {describe(item)} is not a finite number")
        return float(item)

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return np.array([[number(value, what)]])
    if not isinstance(value, list) or not value:
        raise HandwiredError(f"{what}: expected a number, a list of numbers or a list of rows, found {value!r}"[:200])
    if all(not isinstance(item, list) for item in value):
        return np.array([[number(item, f"{what}[{i}]")] for i, item in enumerate(value)])
    rows = []
    for i, row in enumerate(value):
        if not isinstance(row, list):
            raise HandwiredError(f"{what}[{i}]: {row!r} is not a row; give every row as a list, or none")
        if not row:
            raise HandwiredError(f"{what}[{i}]: an empty row")
        if len(row) != len(value[0]):
            raise HandwiredError(f"{what}[{i}]: {len(row)} number(s), but row 0 has {len(value[0])}: "
                                 "every row must be the same length")
        rows.append([number(item, f"{what}[{i}][{j}]") for j, item in enumerate(row)])
    return np.array(rows)


def read_file(path: Path) -> dict[str, np.ndarray]:
    """A JSON object with q, k and v (or x) -> the matrices it gives."""
    document = read_json(path)
    if not isinstance(document, dict):
        raise HandwiredError(f"{path}: expected an object with q, k and v (or x), found {type(document).__name__}")
    unknown = [key for key in document if key not in INPUT_KEYS]
    if unknown:
        raise HandwiredError(f"{path}: unknown key {unknown[0]!r} (valid: {', '.join(INPUT_KEYS)})")
    return {key: to_matrix(value, f"{path}: {key}") for key, value in document.items()}


def gather(given: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, k, v from what was given: all three, or x alone (self-attention: Q = K = V = X)."""
    if "x" in given:
        others = [key for key in ("q", "k", "v") if key in given]
        if others:
            raise HandwiredError(f"x means Q = K = V = X; give x alone, or q, k and v without x "
                                 f"(found x and {others[0]})")
        return given["x"], given["x"], given["x"]
    missing = [key for key in ("q", "k", "v") if key not in given]
    if missing:
        raise HandwiredError(f"missing {' and '.join(missing)}: attention needs q, k and v (or x for self-attention)")
    return given["q"], given["k"], given["v"]


# ---------------------------------------------------------------- the view


def saturation_note(attention: Attention) -> str | None:
    """What to say when softmax has saturated: the lesson about scaling scores."""
    rows = attention.saturated
    if not rows:
        return None
    lead = float(attention.leads()[rows].min())
    spread = max(float(np.ptp(attention.masked[r][np.isfinite(attention.masked[r])])) for r in rows)
    underflow = bool(np.any((attention.weights[rows] == 0) & np.isfinite(attention.masked[rows])))
    where = ", ".join(f"q{r}" for r in rows)
    # powers of ten from the scores themselves: float64 stops near 1e-308
    text = (f"Softmax saturated in row{'s' if len(rows) > 1 else ''} {where}: the best key's score leads the next "
            f"by {lead:,.0f} or more, so it takes weight ≈1 and every other key at most e^-{lead:,.0f} ≈ "
            f"1e-{lead / math.log(10):.0f} (the least, e^-{spread:,.0f} ≈ 1e-{spread / math.log(10):.0f}"
            + (", is below float64's range and printed as 0" if underflow else "")
            + "); the output just copies one value, and softmax's gradient vanishes.")
    if attention.score == "dot":
        return text + " Dividing by √d_k (the scaled-dot score) is the transformer's remedy for large dot products."
    if attention.score == "scaled-dot":
        return text + (f" Dividing by √d_k = {math.sqrt(attention.q.shape[1]):.3g} was not enough at this scale: "
                       "inputs this large would first be normalised or projected.")
    return text + " The keys are far from the query compared with the kernel's width of 1."


def view(attention: Attention, self_attention: bool = False) -> list[Step]:
    """The attention step as explain-style panels: inputs, scores, (mask), weights, output."""
    drawn = _Drawn(attention)
    steps = [drawn.inputs(self_attention), drawn.scores()]
    if attention.causal:
        steps.append(drawn.mask())
    return [*steps, drawn.weights(), drawn.output()]


class _Drawn:
    """The labels every panel of one attention step shares: queries q0…, keys k0…, dims d0…."""

    def __init__(self, attention: Attention) -> None:
        a = self.a = attention
        self.n_q, self.n_k, self.d_k, self.d_v = len(a.q), len(a.k), a.q.shape[1], a.v.shape[1]
        self.queries = tuple(f"q{i}" for i in range(self.n_q))
        self.keys = tuple(f"k{i}" for i in range(self.n_k))
        self.future = np.isinf(a.masked) if a.causal else None

    @staticmethod
    def dims(n: int) -> tuple[str, ...]:
        return tuple(f"d{i}" for i in range(n))

    def grid(self, title: str, values: np.ndarray, hook: str, **extra) -> Matrix:  # [n_q, n_k], query × key
        return Matrix(title, hook, values, self.queries, self.keys, "query", "key", "query ╲ key", future=self.future,
                      **extra)

    def inputs(self, self_attention: bool) -> Step:
        a, dims = self.a, self.dims
        if self_attention:
            rows = tuple(f"x{i}" for i in range(self.n_q))
            matrices = (Matrix("X", "x", a.q, rows, dims(self.d_k), "row of X", "dim", "╲"),)
        else:
            matrices = (Matrix("Q", "q", a.q, self.queries, dims(self.d_k), "query", "dim", "╲"),
                        Matrix("K", "k", a.k, self.keys, dims(self.d_k), "key", "dim", "╲"),
                        Matrix("V", "v", a.v, self.keys, dims(self.d_v), "key's value", "dim", "╲"))
        return Step(
            "inputs", "Self-attention: Q = K = V = X" if self_attention else "Queries, keys and values",
            "Q = K = V = X" if self_attention else "Q, K, V as given",
            f"Q [{self.n_q}, {self.d_k}], K [{self.n_k}, {self.d_k}], V [{self.n_k}, {self.d_v}]",
            "Each row of X asks (as a query), answers (as a key) and is read (as a value)." if self_attention
            else "A query is compared with every key; the value of a key is what the query reads from it.",
            matrices)

    def scores(self) -> Step:
        a = self.a
        if a.score == "gaussian":
            matrices = (self.grid("−(q − k)²/2", a.scores, "scores"),)
            formula, note = ("scores[i, j] = −Σ_d (Q[i, d] − K[j, d])² / 2",
                             "Near keys score close to 0, far keys very negative.")
        else:
            assert a.dot is not None, "the dot-product scores keep q · kᵀ"
            matrices = (self.grid("Q·Kᵀ", a.dot, "dot"),)
            formula, note = "scores = Q · Kᵀ", "How well each query matches each key: the dot product."
            if a.score == "scaled-dot":
                matrices += (self.grid("Q·Kᵀ/√d_k", a.scores, "scores"),)
                formula = f"scores = Q · Kᵀ / √d_k,  √d_k = √{self.d_k}"
                note += " Dividing by √d_k keeps the scores' spread from growing with the width."
        if a.causal:
            note += " Grey cells in [brackets]: keys after the query, masked next."
        return Step("scores", f"Scores ({a.score})", formula,
                    f"Q [{self.n_q}, {self.d_k}] × K [{self.n_k}, {self.d_k}] → [{self.n_q}, {self.n_k}]", note,
                    matrices)

    def mask(self) -> Step:
        n_q, n_k = self.n_q, self.n_k
        return Step("mask", "Causal mask", "scores + M,  M[i, j] = −∞ if key j comes after query i",
                    f"[{n_q}, {n_k}] + [{n_q}, {n_k}] → [{n_q}, {n_k}]",
                    "Query i sits at position i + n_k − n_q and may read keys at or before it; −∞ becomes exactly 0.",
                    (self.grid("scores + M", self.a.masked, "masked", future_text="−∞"),))

    def weights(self) -> Step:
        a = self.a
        masked_text = "·" if a.causal else None
        matrices = (self.grid("weights", a.weights, "weights", future_text=masked_text, show_tiny=True),)
        if a.score == "gaussian":
            kernel = self.grid("e^score, the Gaussian kernel", np.exp(a.masked), "kernel", future_text=masked_text,
                               show_tiny=True)
            matrices = (kernel, *matrices)
        note = "Each row sums to 1: how the query splits its attention over the keys."
        saturated = saturation_note(a)
        if saturated:
            note += " " + saturated
        return Step("weights", "Attention weights", "weights = softmax(scores" + (" + M" if a.causal else "") + ")",
                    f"[{self.n_q}, {self.n_k}] → [{self.n_q}, {self.n_k}], softmax along each row", note, matrices)

    def output(self) -> Step:
        return Step("output", "Output", "output = weights · V",
                    f"weights [{self.n_q}, {self.n_k}] · V [{self.n_k}, {self.d_v}] → [{self.n_q}, {self.d_v}]",
                    "Each query's output is the average of the values, weighted by its attention.",
                    (Matrix("output", "output", self.a.output, self.queries, self.dims(self.d_v), "query", "dim",
                            "╲"),))


def to_json(attention: Attention) -> dict:
    """Every intermediate, −∞ as null (JSON has no infinity)."""
    def plain(values: np.ndarray | None):
        if values is None:
            return None
        return [[None if math.isinf(v) else float(v) for v in row] for row in values]

    a = attention
    return {
        "score": a.score, "causal": a.causal, "q": plain(a.q), "k": plain(a.k), "v": plain(a.v),
        "dot": plain(a.dot), "scores": plain(a.scores), "masked": plain(a.masked), "weights": plain(a.weights),
        "output": plain(a.output), "saturated_rows": a.saturated, "note": saturation_note(a),
    }
