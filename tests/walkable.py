"""Puzzles whose domain is too large for a check to walk (maxk64's 16.8 M strings): the tests that walk every bundled
puzzle judge these by cases instead (handwired.judge.checking.cases), or on a sample, or leave them to the tests that
prove them (test_maxk.py)."""

from handwired.judge.checking import cases
from handwired.judge.kinds.domains import MAX_INPUTS


def too_large(puzzle) -> bool:
    """Whether the puzzle's domain has more inputs than a check walks."""
    return puzzle.domain is not None and puzzle.domain.inputs.count() > MAX_INPUTS


def by_cases(puzzle, model) -> cases.Proof:
    """The puzzle's whole domain proved by cases."""
    space = cases.space_of(puzzle.domain, model.n_vocab, model.n_ctx)
    return cases.prove(model, puzzle.rule, space, puzzle.name, cases.size(space))
