"""Every number a view prints, formatted one way: cells, ranges, margins, scores, logit gaps, counts.

An exact integer prints as an integer (``63``, ``-1024``, ``0``), whatever it
sits beside; any other value with three decimals (``0.500``); a non-zero value
too small for three decimals as ``≈0`` (or ``5.6e-8`` where its size is the
lesson); a huge one in scientific notation. A range prints its ends exactly as
its cells print them. Probabilities keep four decimals and are ``0`` or ``1``
only when exact.
"""

import math

import numpy as np

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


def numbers(values: np.ndarray, show_tiny: bool = False) -> list[list[str]]:
    """A matrix's cell texts, each as :func:`number` prints it."""
    return [[number(value, show_tiny) for value in row] for row in np.asarray(values, dtype=float)]


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
    return f"range {number(finite.min(), show_tiny)} … {number(finite.max(), show_tiny)}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 context``, ``3,003 contexts``: a count of things, singular or plural."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def logits(value: float) -> str:
    """A quantity of logits (a margin, a gap): ``1 logit``, ``1023 logits``, ``0.500 logits``."""
    return f"{number(value)} logit{'' if value == 1 else 's'}"


def logit_gap(value: float) -> str:
    """A signed difference of logits: ``+1``, ``-1023``, ``0``; ``—`` when there is nothing to compare (+inf)."""
    if math.isinf(value) and value > 0:
        return "—"
    text = number(value)
    return "+" + text if value > 0 else text
