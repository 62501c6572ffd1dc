"""Fitting a labelled matrix to a terminal: fold away all-zero rows and columns, page the rest.

Pure decisions only (which rows and columns a table shows, which columns share
a page); :mod:`handwired.render` draws them. Hand-wired matrices are mostly
zero, so folding alone usually makes a wide one fit; what still does not fit
is split into column pages rather than squeezed, so no number is ever cut.
"""

from __future__ import annotations

import re

import numpy as np

# A rich table draws one border before the first column and, for every column,
# one space of padding on each side and a border after it.
TABLE_EDGE = 1
COLUMN_CHROME = 3


def zero_lines(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows and the columns that are exactly 0 everywhere (−∞ and nan are not 0)."""
    zero = values == 0  # [rows, cols]
    return zero.all(axis=1), zero.all(axis=0)  # [rows], [cols]


def fold_labels(labels: tuple[str, ...] | list[str]) -> str:
    """``q0, q1, q2, k0`` -> ``q0…q2, k0``: runs of one prefix with consecutive numbers folded."""
    parts: list[str] = []
    run: list[tuple[str, str | None, int]] = []  # (label, prefix, number); prefix None: not numbered

    def flush() -> None:
        parts.extend([f"{run[0][0]}…{run[-1][0]}"] if len(run) > 2 else [label for label, _, _ in run])
        run.clear()

    for label in labels:
        match = _NUMBERED.fullmatch(label)
        if match and run and run[-1][1] == match[1] and run[-1][2] + 1 == int(match[2]):
            run.append((label, match[1], int(match[2])))
            continue
        flush()
        run.append((label, match[1], int(match[2])) if match else (label, None, 0))
    flush()
    return ", ".join(parts)


_NUMBERED = re.compile(r"(.*?)(\d+)")


def table_width(widths: list[int]) -> int:
    """The printed width of a table whose columns' contents are ``widths`` wide."""
    return TABLE_EDGE + sum(width + COLUMN_CHROME for width in widths)


def column_pages(label_width: int, widths: list[int], max_width: int) -> list[list[int]]:
    """Column indices in pages, in order: each page, its row labels first, fits ``max_width``.

    As few pages as fit, and of even widths (rather than full pages and a
    last one with a single column). A column wider than any page gets a page
    of its own (the table is then wider than the terminal, but nothing is cut).
    """
    fewest = _fill(label_width, widths, max_width)
    narrowest = table_width([label_width, max(widths, default=0)])
    for limit in range(min(narrowest, max_width), max_width):  # the narrowest limit that needs no more pages
        pages = _fill(label_width, widths, limit)
        if len(pages) == len(fewest):
            return pages
    return fewest


def _fill(label_width: int, widths: list[int], max_width: int) -> list[list[int]]:
    """Pages filled in order, each with as many columns as fit."""
    pages: list[list[int]] = []
    page: list[int] = []
    used = table_width([label_width])
    for index, width in enumerate(widths):
        if page and used + width + COLUMN_CHROME > max_width:
            pages.append(page)
            page, used = [], table_width([label_width])
        page.append(index)
        used += width + COLUMN_CHROME
    if page:
        pages.append(page)
    return pages
