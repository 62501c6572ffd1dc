"""Number formatting, one way for every view: what is printed must be true."""

import math

import numpy as np

from handwired.views.numbers import count, logits, number, value_range
from handwired.views.numbers import numbers as format_values
from handwired.views.numbers import probability as format_probability


def test_exact_integers_print_as_integers_everywhere_and_others_with_three_decimals():
    assert format_values(np.array([[1024.0, 0.0, -1.0]])) == [["1024", "0", "-1"]]
    assert format_values(np.array([[0.5, 1.0, 0.0]])) == [["0.500", "1", "0"]]  # 1.000 is 1, beside 0.500 too
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
    assert low in cells and high in cells and (low, high) == ("-2", "1")


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
