"""Every number a view prints, formatted one way: cells, ranges, margins, scores, logit gaps, counts.

One number alone: an exact integer prints as an integer (``63``, ``-1024``,
``0``); any other value with three decimals (``0.500``); a non-zero value too
small for three decimals as ``≈0`` (or ``5.6e-8`` where its size is the
lesson); a huge one in scientific notation. A table or a column prints all its
numbers in one of those formats (:func:`numbers`, :func:`column`): integers when
every one is an exact integer, scientific notation when any would need it, else
three decimals — so ``2`` never sits beside ``2.000``, nor ``-13800000000``
beside ``-4.360e+10``. Zero is always ``0``, and ``≈0`` may sit beside integers. A range prints its ends exactly as
its cells print them. Probabilities keep four decimals and are ``0`` or ``1``
only when exact.
"""

import math

import numpy as np
from numpy.typing import ArrayLike

TINY = 0.0005  # below this a non-zero value would print as 0.000; it prints as ≈0 instead
HUGE = 1e6  # from here on, scientific notation
WHOLE = 1e12  # integers print in full below this


def number(value: float, show_tiny: bool = False) -> str:
    """One number as every view prints it."""
    value = float(value)
    if math.isinf(value):
        return "−∞" if value < 0 else "∞"
    if math.isnan(value):
        return "nan"
    if value == 0:
        return "0"
    if value == round(value) and abs(value) < WHOLE:
        return str(int(value))
    if abs(value) < TINY:
        return scientific(value) if show_tiny else "≈0"
    if abs(value) >= HUGE:
        return f"{value:.3e}"
    return f"{value:.3f}"


def exact(value: float) -> str:
    """A number a person wrote (a constant), in full: ``1024``, ``0.1``, ``1e-10`` — never rounded."""
    value = float(value)
    return str(int(value)) if value == round(value) and abs(value) < WHOLE else repr(value)


def numbers(values: ArrayLike, show_tiny: bool = False) -> list[list[str]]:
    """A matrix's cell texts, all in the one format the whole matrix needs (see :func:`table_format`)."""
    values = np.asarray(values, dtype=float)
    style = table_format(values)
    return [[_in_format(value, style, show_tiny) for value in row] for row in values]


def column(values: np.ndarray | list[float], signed: bool = False) -> list[str]:
    """One column's texts in the one format the column needs; ``signed`` (logit gaps and leads): a ``+`` before
    positive values, and ``—`` for +∞, where there is nothing to compare with."""
    values = np.asarray(values, dtype=float)
    style = table_format(values)
    texts = []
    for value in values:
        text = _in_format(value, style)
        if signed and math.isinf(value) and value > 0:
            text = "—"
        elif signed and value > 0:
            text = "+" + text
        texts.append(text)
    return texts


def table_format(values: np.ndarray) -> str:
    """``whole``, ``scientific`` or ``decimal``: the one format for every finite non-zero number of a table.

    A value too small for three decimals prints as ``≈0`` in any of them and does not choose the format."""
    values = np.asarray(values, dtype=float)
    finite = values[np.isfinite(values) & (np.abs(values) >= TINY)]
    if np.all((finite == np.round(finite)) & (np.abs(finite) < WHOLE)):
        return "whole"
    return "scientific" if np.any(np.abs(finite) >= HUGE) else "decimal"


def _in_format(value: float, style: str, show_tiny: bool = False) -> str:
    value = float(value)
    if value == 0 or not math.isfinite(value) or style == "whole" or abs(value) < TINY:
        return number(value, show_tiny)
    return f"{value:.3e}" if style == "scientific" else f"{value:.3f}"


def scientific(value: float) -> str:
    """Two significant digits and a plain exponent: 5.6e-8, -1.2e-157."""
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def probability(p: float) -> str:
    """Four decimals, except that 0 and 1 are only printed when exact."""
    if p == 0 or p == 1:
        return str(int(p))
    if p < 0.00005:
        return "≈0"
    if p > 0.99995:
        return "≈1"
    return f"{p:.4f}"


def value_range(values: np.ndarray, show_tiny: bool = False) -> str:
    """``range -1024 … 1024``: the smallest and largest finite value, printed as the cells print them."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return "no finite values"
    style = table_format(finite)
    return f"range {_in_format(finite.min(), style, show_tiny)} … {_in_format(finite.max(), style, show_tiny)}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 context``, ``3,003 contexts``: a count of things, singular or plural."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def logits(value: float) -> str:
    """A quantity of logits (a margin, a gap): ``1 logit``, ``1023 logits``, ``0.500 logits``."""
    return f"{number(value)} logit{'' if value == 1 else 's'}"


def logit_gap(value: float) -> str:
    """A signed difference of logits: ``+1``, ``-1023``, ``0``; ``—`` when there is nothing to compare (+inf)."""
    return column([value], signed=True)[0]
