"""A hand-wired ten-digit adder (least significant first) proved by cases on all 10^20 sums at all eleven digits;
the least-first sum rule against brute force; and the count of a case whose answer so far is constrained against
enumeration."""

import itertools
from pathlib import Path

import numpy as np
import pytest
from test_domains import domain

from handwired.engine.batch import next_logits_distinct
from handwired.judge.checking import cases
from handwired.judge.checking.report import leads
from handwired.judge.game.puzzle import read_statement
from handwired.judge.kinds.case_rules import sum_count
from handwired.judge.kinds.sampling import sample_contexts
from handwired.weightfile import load

ROOT = Path(__file__).resolve().parent.parent
DIGITS = "0123456789"
LEAST = {"kind": "sum", "plus": "+", "equals": "=", "digits": DIGITS, "width": 3, "order": "least_first"}


def test_least_first_answers_by_brute_force():
    made, rule = domain({"kind": "answer_so_far", "alphabet": DIGITS, "template": "##+#"}, LEAST, DIGITS + "+=", 8)
    assert made is not None
    texts = {"".join((DIGITS + "+=")[t] for t in row) for batch in made.contexts for row in batch.tolist()}
    expected = {f"{a:02d}+{b}=" + f"{a + b:03d}"[::-1][:j] for a in range(100) for b in range(10) for j in range(3)}
    assert texts == expected


@pytest.mark.parametrize("seed", range(3))
def test_a_constrained_case_is_counted_as_enumerated(seed):
    """Random digit sets and random allowed answer digits: the rule's count is the number of inputs whose answer so
    far the constraints allow, counted one by one."""
    _, rule = domain({"kind": "answer_so_far", "alphabet": DIGITS, "template": "##+##"}, LEAST, DIGITS + "+=", 9)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        inputs = np.zeros((1, 5, 12), dtype=bool)
        inputs[0, 2, 10] = True
        for p in (0, 1, 3, 4):
            inputs[0, p, rng.choice(10, size=rng.integers(1, 11), replace=False)] = True
        so_far = int(rng.integers(1, 3))
        constraints = rng.random((1, so_far, 12)) < 0.6
        count = sum_count(rule, inputs, so_far, constraints)[0]
        sets = [np.flatnonzero(inputs[0, p]).tolist() for p in (0, 1, 3, 4)]
        brute = sum(all(constraints[0, j, int(f"{10 * a + b + 10 * c + d:03d}"[::-1][j])] for j in range(so_far))
                    for a, b, c, d in itertools.product(*sets))
        assert count == brute


def adder_and_puzzle():
    return load(str(ROOT / "puzzles" / "solutions" / "add10.json")), read_statement(ROOT / "puzzles" / "add10.json")


def test_the_adder_is_right_on_a_sample_in_float64():
    model, puzzle = adder_and_puzzle()
    assert puzzle.domain is not None
    for contexts in sample_contexts(puzzle.domain, 2000, 1):
        judgement = puzzle.rule.judge(contexts)
        assert (leads(next_logits_distinct(model, contexts), judgement.acceptable) > 1).all()


def test_the_adder_is_proved_on_all_its_contexts_by_cases():
    model, puzzle = adder_and_puzzle()
    assert puzzle.domain is not None
    space = cases.space_of(puzzle.domain, model.n_vocab, model.n_ctx)
    assert cases.size(space) == 11 * 10**20
    # the whole proof takes one to two minutes of CPU: CI runs it through the command line (test_by_cases); here, and
    # there, its first cases
    proof = cases.prove(model, puzzle.rule, space, "add10", cases.size(space), max_cases=3000)
    assert not proof.proved and proof.left > 0 and proof.report.failed == 0 and proof.proved_cases > 0


def test_the_adder_built_from_the_hints_is_the_reference_entry_for_entry():
    """tests/adders.py wires the hints' ideas at any width (positions one-hot, keys by position, the two steps, the
    unembedding's scores): at ten digits it is puzzles/solutions/add10.json, every parameter equal (the three-digit
    one is proved by cases through the command line in test_by_cases)."""
    from adders import adder

    from handwired.weightfile.parse import parse

    built, problems = parse(adder(10), "built")
    reference, _ = adder_and_puzzle()
    assert problems == [] and built is not None and built.dims == reference.dims

    def flat(value, path=""):
        if isinstance(value, dict):
            for key, item in value.items():
                yield from flat(item, f"{path}/{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                yield from flat(item, f"{path}/{i}")
        else:
            yield path, value

    ours, theirs = dict(flat(built.params)), dict(flat(reference.params))
    assert ours.keys() == theirs.keys() and all(np.array_equal(ours[key], theirs[key]) for key in ours)


def test_the_hints_steps_read_the_carry_and_the_wrap_and_the_scores_pick_the_digit():
    """Hint 3: gelu(K(x - 3)) - gelu(K(x - 5)) is 2K where the column below carried (x = B - s is 9 or 10) and 0
    where it did not (-1 or 0); z = A + (B - s)/10 is at most 9 below the wrap and at least 9.9 above it, so
    gelu(W(z - 9.1)) - gelu(W(z - 9.8)) is 0.7W or 0. Hint 4: Z(y·d - d²/2) is highest at d = y, Z/2 ahead."""
    from handwired.engine.forward import gelu

    K, W, Z = 10, 100, 16
    rows = np.array(list(itertools.product(range(10), range(10), (0, 1), range(10), range(10))))  # below, in, a, b
    a_below, b_below, carry_in, a, b = rows.T
    column = a_below + b_below + carry_in
    carried = column >= 10
    x = (a_below + b_below - column % 10).astype(float)
    step = gelu(K * (x - 3)) - gelu(K * (x - 5))
    assert np.allclose(step, np.where(carried, 2 * K, 0), atol=1e-9)
    total, z = a + b + carried, a + b + x / 10
    assert (np.where(total <= 9, z <= 9, z >= 9.9)).all()
    wrap = gelu(W * (z - 9.1)) - gelu(W * (z - 9.8))
    assert np.allclose(wrap, np.where(total >= 10, 0.7 * W, 0), atol=1e-9)
    for y in range(10):
        scores = [Z * (y * d - d * d / 2) for d in range(10)]
        assert int(np.argmax(scores)) == y and sorted(scores)[-1] - sorted(scores)[-2] == Z / 2
