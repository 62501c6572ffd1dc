"""What views are drawn from: a labelled matrix, a step of the forward pass, a prediction — data, no drawing.

:mod:`handwired.views.steps` builds them from a trace, other views from their
own numbers; :mod:`handwired.views.matrices` draws them.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Matrix:
    title: str
    hook: str  # where the values live in the trace's record
    values: np.ndarray  # [rows, cols]
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    row_axis: str  # what a row is, in words
    col_axis: str
    corner: str = ""  # the header cell above the row labels, short
    future: np.ndarray | None = None  # [rows, cols] bool: the key comes after the query
    future_text: str | None = None  # what a future cell shows; None: its value, greyed
    show_tiny: bool = False  # print values below 0.0005 as 5.6e-8 rather than ≈0 (when their size is the lesson)
    # [rows][cols] cell texts, e.g. as written; None: the values formatted
    texts: tuple[tuple[str, ...], ...] | None = None


@dataclass(frozen=True)
class Prediction:
    position: str  # "2:b"
    token: str  # the predicted next token: the first best on a tie, as argmax picks
    probability: float
    tied: bool
    lead: float = float("inf")  # the predicted token's logit minus the best other token's: its logit gap


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    formula: str
    shape: str
    note: str
    matrices: tuple[Matrix, ...]
    side_by_side: bool = False  # draw the matrices in a row rather than one under another
    predictions: tuple[Prediction, ...] = ()
