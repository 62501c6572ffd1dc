"""Number formatting in tables: what is printed must be true."""

import math

import numpy as np

from handwired.render import format_probability, format_values, value_range


def test_whole_matrices_print_as_integers_and_others_with_three_decimals():
    assert format_values(np.array([[1024.0, 0.0, -1.0]])) == [["1024", "0", "-1"]]
    assert format_values(np.array([[0.5, 1.0, 0.0]])) == [["0.500", "1.000", "0"]]


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
    assert format_values(np.array([[-1.23e-157, 1.0]]), show_tiny=True) == [["-1.2e-157", "1.000"]]
    assert value_range(np.array([[tiny, 0.5]]), show_tiny=True) == "range 5.6e-8 … 0.500"
