"""Puzzles whose domain is too large for a check to walk (maxk64's 16.8 M strings, add10's 10^20 sums): they are
proved by cases (handwired.judge.checking.cases), and the tests that walk every bundled puzzle's domain (an ablation,
a sweep, the certified walk against the float one) leave them out, or judge them by cases or on a sample instead."""

import pytest

from handwired.judge.checking import cases
from handwired.judge.game.catalogue import load_puzzle
from handwired.judge.kinds.domains import MAX_INPUTS

# A domain of more inputs than this takes a minute or more to prove by cases (add10's 10^20 sums: ~100 s of CPU):
# the default run proves its first cases, CI (stress.FULL) the whole of it.
SLOW_TO_PROVE = 10**9


def too_large(puzzle) -> bool:
    """Whether the puzzle's domain has more inputs than a check walks."""
    return puzzle.domain is not None and puzzle.domain.inputs.count() > MAX_INPUTS


def slow_to_prove(puzzle) -> bool:
    """Whether proving the puzzle's whole domain by cases is CI's work, not the default run's."""
    return puzzle.domain is not None and puzzle.domain.inputs.count() > SLOW_TO_PROVE


def too_large_to_walk(name: str) -> bool:
    """The bundled puzzle ``name`` is too large to walk."""
    return too_large(load_puzzle(name))


def walkable(names) -> list:
    """``names`` as pytest parameters, those too large to walk marked skipped."""
    return [pytest.param(name, marks=pytest.mark.skip(reason="too large to walk: proved by cases (test_by_cases, "
                                                              "test_maxk)"))
            if too_large_to_walk(name) else name for name in names]


def by_cases(puzzle, model) -> cases.Proof:
    """The puzzle's whole domain proved by cases."""
    space = cases.space_of(puzzle.domain, model.n_vocab, model.n_ctx)
    return cases.prove(model, puzzle.rule, space, puzzle.name, cases.size(space))
