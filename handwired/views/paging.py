"""Fitting a labelled matrix to a terminal: fold away all-zero rows and columns, page the rest.

Pure decisions only (which rows and columns a table shows, which columns share
a page); :mod:`handwired.render` draws them. Hand-wired matrices are mostly
zero, so folding alone usually makes a wide one fit; what still does not fit
is split into column pages rather than squeezed, so no number is ever cut.
"""

from __future__ import annotations

import numpy as np

# A rich table draws one border before the first column and, for every column,
# one space of padding on each side and a border after it.
TABLE_EDGE = 1
COLUMN_CHROME = 3


def zero_lines(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows and the columns that are exactly 0 everywhere (−∞ and nan are not 0)."""
    zero = values == 0  # [rows, cols]
    return zero.all(axis=1), zero.all(axis=0)  # [rows], [cols]


def table_width(widths: list[int]) -> int:
    """The printed width of a table whose columns' contents are ``widths`` wide."""
    return TABLE_EDGE + sum(width + COLUMN_CHROME for width in widths)


def column_pages(label_width: int, widths: list[int], max_width: int) -> list[list[int]]:
    """Column indices in pages, in order: each page, its row labels first, fits ``max_width``.

    As few pages as fit, filled in order under the narrowest width that still
    needs no more pages, so the pages come out closer in width than full pages
    would (not always equal). A column wider than any page gets a page of its
    own (the table is then wider than the terminal, but nothing is cut).
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
