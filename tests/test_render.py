"""Number formatting, one way for every view: what is printed must be true."""

import math
import re

import numpy as np

from handwired.views.numbers import column, count, logits, number, table_format, value_range
from handwired.views.numbers import numbers as format_values
from handwired.views.numbers import probability as format_probability


def test_a_table_prints_every_number_in_one_format():
    assert format_values(np.array([[1024.0, 0.0, -1.0]])) == [["1024", "0", "-1"]]  # all integers: integers
    assert format_values(np.array([[0.5, 1.0, 0.0]])) == [["0.500", "1.000", "0"]]  # beside 0.500, 1 is 1.000
    # beside a value that needs scientific notation, an integer of eleven digits needs it too
    assert format_values(np.array([[-13800000000.0], [-4.36e10 - 0.5]])) == [["-1.380e+10"], ["-4.360e+10"]]
    assert column(np.array([2.0, 2 - 1e-9, np.inf]), signed=True) == ["+2.000", "+2.000", "—"]
    assert column(np.array([2.0, -1.0, 0.0]), signed=True) == ["+2", "-1", "0"]
    assert table_format(np.array([0.0, -np.inf])) == "whole"
    assert format_values(np.array([[1.0, 1e-9, 0.0]])) == [["1", "≈0", "0"]]  # ≈0 says it is not 0, beside 1 too
    assert number(63.0) == "63" and number(2.5) == "2.500" and number(-1023) == "-1023"
    assert number(62.9999) == "63.000"  # not an integer, so not printed as one
    assert number(3e6) == "3000000" and number(3.5e6 + 0.5) == "3.500e+06"


def test_margins_and_counts_say_singular_or_plural():
    assert logits(1.0) == "1 logit" and logits(63.0) == "63 logits" and logits(0.5) == "0.500 logits"
    assert count(1, "context") == "1 context" and count(3003, "context") == "3,003 contexts"
    assert count(2, "entry", "entries") == "2 entries"


def test_a_range_prints_its_ends_as_the_cells_print_them():
    values = np.array([[1.0, 0.5], [-2.0, 0.25]])
    cells = [cell for row in format_values(values) for cell in row]
    low, high = value_range(values).removeprefix("range ").split(" … ")
    assert low in cells and high in cells and (low, high) == ("-2.000", "1.000")


def test_tiny_nonzero_values_are_not_printed_as_zero():
    tiny = math.exp(-362)
    assert tiny > 0
    assert format_values(np.array([[0.5, tiny, 0.0]])) == [["0.500", "≈0", "0"]]
    assert format_values(np.array([[-np.inf, 2.0]])) == [["−∞", "2"]]


def test_probabilities_say_0_and_1_only_when_exact():
    assert format_probability(0.0) == "0"
    assert format_probability(1.0) == "1"
    assert format_probability(1e-9) == "≈0"
    assert format_probability(1 - 1e-9) == "≈1"
    assert format_probability(0.25) == "0.2500"


def test_value_range_ignores_masked_cells():
    assert value_range(np.array([[362.0390, -np.inf], [0.0, 1.5]])) == "range 0 … 362.039"
    assert value_range(np.array([[-np.inf]])) == "no finite values"


def test_show_tiny_prints_scientific_notation_where_the_size_is_the_lesson():
    tiny = math.exp(-18) / (2 * math.exp(-2) + math.exp(-18))
    assert format_values(np.array([[0.5, tiny, 0.0]]), show_tiny=True) == [["0.500", "5.6e-8", "0"]]
    assert format_values(np.array([[-1.23e-157, 1.0]]), show_tiny=True) == [["-1.2e-157", "1"]]
    assert value_range(np.array([[tiny, 0.5]]), show_tiny=True) == "range 5.6e-8 … 0.500"


def _cells(text: str, row_start: str) -> list[str]:
    """The numbers in the table rows of ``text`` whose label starts with ``row_start``."""
    cells = []
    for line in text.splitlines():
        parts = [part.strip() for part in line.strip("│ ").split("│")]
        if parts and parts[0].startswith(row_start):
            cells += parts[1:]
    return cells


def test_explain_why_prints_one_table_in_one_format(tmp_path, monkeypatch):
    """A why table of logits in the tens of billions, one of them not an integer: every non-zero cell in scientific
    notation, none in full; and the lead column of the predictions in one format."""
    import json

    from test_cli import invoke

    from handwired.weightfile import load

    doc = json.loads(open(load("aab").source).read())
    doc["constants"] = {"Lg": 13800000000}
    doc["blocks"][0]["attn"]["c_proj"]["b"] = {"a": "Lg/7"}  # 1971428571.43…
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    monkeypatch.setenv("COLUMNS", "120")
    out = invoke("explain", "aabaa", "-w", str(path), "--step", "why").stdout
    cells = [cell for row in ("token embedding", "block 0", "total") for cell in _cells(out, row)]
    assert len(cells) == 8 and "-1.380e+10" in cells and "1.971e+09" in cells
    assert all(cell == "0" or re.fullmatch(r"-?\d\.\d{3}e[+-]\d\d", cell) for cell in cells), cells
    assert "13800000000" not in out
    lines = invoke("explain", "aabaa", "-w", str(path), "--step", "prediction").stdout.splitlines()
    leads = [line.split("│")[-3].strip() for line in lines if re.match(r"│ │ \d:", line)]
    assert len(leads) == 5 and all(re.fullmatch(r"\+\d\.\d{3}e\+\d\d", lead) for lead in leads), leads
