"""Matrix and vector entries of a weight file: numbers, expressions over constants, dense rows or sparse labels.

:class:`EntryChecker` is the weight file's :class:`~handwired.weightfile.checker.Checker`:
besides the JSON structure it checks every entry (a finite number, or an expression
such as ``"-Lg"`` over the file's constants) and every matrix and vector, written
densely (lists) or sparsely (objects of their non-zero entries, rows and columns
named by label). It keeps each entry as written and turns it into float64.
"""

import math
from typing import Any

import numpy as np

from handwired.weightfile.axes import Axis, as_index
from handwired.weightfile.checker import Checker, describe, item, join
from handwired.weightfile.expr import ExpressionError, UnknownConstant, evaluate

LINEAR_KEYS = {"w": True, "b": False}
NORM_KEYS = {"g": True, "b": False}


class EntryChecker(Checker):
    """A Checker that also reads entries, vectors and matrices, keeping each as written."""

    def __init__(self) -> None:
        super().__init__()
        self.constants: dict[str, float] = {}
        self.failed: set[str] = set()  # constants that did not evaluate: reported once, on their own line
        self.values: dict[Any, float] = {}  # an entry as written -> its number
        self.written: dict[str, np.ndarray] = {}  # JSON path -> entries as written

    def number(self, value: Any, path: str) -> float | None:
        """One matrix entry: a finite number or an expression over the constants."""
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            self.problem(path, f"expected a number or an expression such as \"-Lg\"; found {describe(value)}")
            return None
        if isinstance(value, str):
            try:
                return evaluate(value, self.constants)
            except ExpressionError as error:
                # A use of a constant that failed to evaluate is no problem of its own: the constant's line says it.
                if not (isinstance(error, UnknownConstant) and error.name in self.failed):
                    shown = value if len(value) <= 40 else value[:30] + "…"  # one readable line, however long
                    self.problem(path, f"{shown!r}: {error}")
                return None
        try:
            number = float(value)
        except OverflowError:  # a JSON integer beyond float range
            number = math.inf
        if not math.isfinite(number):
            self.problem(path, "expected a finite number; "
                               f"found {value if len(str(value)) < 20 else 'a number too large'}")
            return None
        return number

    def vector(self, value: Any, path: str, axis: Axis | None) -> np.ndarray | None:
        """A bias or LayerNorm vector: a list, or an object of its non-zero entries by label."""
        entries = self._entries(value, path, axis, "entry")
        if entries is None:
            return None
        self.written[path] = entries
        return evaluated(entries, self.values)

    def matrix(self, value: Any, path: str, rows: Axis | None, cols: Axis | None) -> np.ndarray | None:
        """A list of rows, or an object of rows by label; each row a list or an object of entries by label."""
        if isinstance(value, list):
            if rows is not None and len(value) != len(rows):
                self.problem(path, f"{len(value)} rows, expected {len(rows)} ({rows.meaning})")
                return None
            if not value:
                self.problem(path, f"no rows, expected at least one ({rows.meaning if rows else 'rows'})")
                return None
            if cols is None and isinstance(value[0], list):  # width unknown: the first row decides
                cols = Axis("as the first row", tuple(str(i) for i in range(len(value[0]))))
            cells: list[tuple[int, int | str, Any]] = list(zip(range(len(value)), range(len(value)), value))
        elif isinstance(value, dict):
            if rows is None or cols is None:
                return None  # the labels depend on something already reported as wrong
            keyed = self._keys(value, path, rows, "row")
            if keyed is None:
                return None
            cells = [(index, key, value[key]) for index, key in keyed]
        else:
            expected = f"{len(rows)} rows" if rows else "rows"
            self.problem(path, f"expected a list of {expected} ({rows.meaning if rows else 'rows'}) "
                               f"or an object of rows by label; found {describe(value)}")
            return None
        n_rows = len(rows) if rows is not None else len(value)
        written = np.zeros((n_rows, len(cols) if cols is not None else 0), dtype=object)
        ok = True
        for index, key, entry in cells:  # (row index, the row's key in the file, the row as written)
            row = self._entries(entry, item(path, key), cols, "column")
            if row is None:
                ok = False
            elif cols is not None:
                written[index] = row
        if not ok or cols is None:
            return None
        self.written[path] = written
        return evaluated(written, self.values)

    def _entries(self, value: Any, path: str, axis: Axis | None, role: str) -> np.ndarray | None:
        """One row (role "column") or vector (role "entry") -> its entries as written, missing ones 0."""
        what = "numbers"
        if isinstance(value, list):
            if axis is not None and len(value) != len(axis):
                self.problem(path, f"{len(value)} {what}, expected {len(axis)} ({axis.meaning})")
                return None
            entries = [self.entry(entry, f"{path}[{i}]") for i, entry in enumerate(value)]
            if any(entry is None for entry in entries):
                return None
            written = np.empty(len(entries), dtype=object)
            written[:] = entries
            return written
        if isinstance(value, dict):
            if axis is None:
                return None  # the labels depend on something already reported as wrong
            keyed = self._keys(value, path, axis, role)
            if keyed is None:
                return None
            written = np.zeros(len(axis), dtype=object)
            ok = True
            for index, key in keyed:
                entry = self.entry(value[key], join(path, key))
                ok = ok and entry is not None
                written[index] = entry
            return written if ok else None
        expected = f"a list of {len(axis)} {what} ({axis.meaning})" if axis else f"a list of {what}"
        self.problem(path, f"expected {expected} or an object of entries by label; found {describe(value)}")
        return None

    def _keys(self, value: dict[str, Any], path: str, axis: Axis, role: str) -> list[tuple[int, str]] | None:
        """A sparse object's keys -> (index, key) pairs; unknown labels and entries given twice are problems."""
        keyed: list[tuple[int, str]] = []
        seen: dict[int, str] = {}
        ok = True
        for key in value:
            index = axis.find(key)
            if index is None:
                number = as_index(key)
                found = f"{role} index {key} is out of range" if number is not None else f"unknown {role} label {key!r}"
                self.problem(join(path, key), f"{found}; expected {axis.meaning}: {axis.describe()}")
                ok = False
            elif index in seen:
                self.problem(join(path, key), f"{key!r} is the same entry as {seen[index]!r}, given twice")
                ok = False
            else:
                seen[index] = key
                keyed.append((index, key))
        return keyed if ok else None

    def entry(self, value: Any, path: str) -> float | int | str | None:
        """One entry as written, once it is known to evaluate; its number is in self.values."""
        number = self.number(value, path)
        if number is None:
            return None
        if isinstance(value, str):
            self.values[value] = number
        return value

    def linear(self, value: Any, path: str, rows: Axis | None, cols: Axis | None):
        """``{w: [n_in][n_out], b: [n_out]}``; a missing b means zeros."""
        spec = self.obj(value, path, LINEAR_KEYS)
        if spec is None or "w" not in spec:
            return None
        w = self.matrix(spec["w"], join(path, "w"), rows, cols)
        if w is None:
            return None
        b_path = join(path, "b")
        if "b" not in spec:
            self.written[b_path] = np.zeros(w.shape[1], dtype=object)
            return {"w": w, "b": np.zeros(w.shape[1])}
        b = self.vector(spec["b"], b_path, cols)
        return None if b is None else {"w": w, "b": b}

    def norm(self, value: Any, path: str, dims: Axis | None):
        spec = self.obj(value, path, NORM_KEYS)
        if spec is None or "g" not in spec:
            return None
        g = self.vector(spec["g"], join(path, "g"), dims)
        b = self.vector(spec["b"], join(path, "b"), dims) if "b" in spec else None
        if g is None or ("b" in spec and b is None):
            return None
        if b is None:
            self.written[join(path, "b")] = np.zeros(len(g), dtype=object)
        return {"g": g, "b": np.zeros_like(g) if b is None else b}


def evaluated(written: np.ndarray, values: dict) -> np.ndarray:
    """Entries as written -> float64, through the numbers the checker found for them."""
    if not values or not _has_expression(written):
        return written.astype(np.float64)  # numbers only: numpy's loop, not Python's (a sparse 1024² matrix)
    flat = (values[entry] if isinstance(entry, str) else float(entry) for entry in written.ravel())
    return np.fromiter(flat, dtype=np.float64, count=written.size).reshape(written.shape)  # no list of floats



def _has_expression(written: np.ndarray) -> bool:
    # The number 0 is what a sparse matrix is mostly made of: only the other entries are looked at.
    return any(isinstance(entry, str) for entry in written[written != 0])
