"""The third ladder: circuits found in trained models, wired by hand (dyck).

Their rules against brute force, their references and records proved through the command line, and files built
from their hints' ideas (not copied from the references) that solve them.
"""

import itertools
import json
import math

import pytest
from test_cli import invoke
from test_records import RECORDS

from handwired.judge.catalogue import load_puzzle, solution_path
from handwired.judge.kinds import rule_from_spec
from handwired.judge.rules import DECIDED, OUT_OF_DOMAIN
from handwired.judge.verdict import submit
from handwired.weightfile import Checker, parse

LADDER = ["dyck"]


def words(text):
    return " ".join(text.split())


def judge(rule, vocab, texts):
    import numpy as np

    contexts = np.array([[vocab.index(t) for t in text] for text in texts])
    return rule.judge(contexts)


# ---------------------------------------------------------------- the rules, against brute force


def brute_balanced(text):
    """Balanced by a stack: every ) pops a (, and nothing is left."""
    stack = []
    for char in text:
        if char == "(":
            stack.append(char)
        elif char == ")":
            if not stack:
                return False
            stack.pop()
    return not stack


def test_balanced_agrees_with_a_stack_on_every_string_of_up_to_eight_brackets():
    vocab = ("^", "(", ")", "y", "n")
    rule = rule_from_spec({"kind": "balanced", "open": "(", "close": ")", "yes": "y", "no": "n"}, vocab, Checker())
    for length in range(1, 9):
        texts = ["^" + "".join(s) for s in itertools.product("()", repeat=length)]
        judgement = judge(rule, vocab, texts)
        assert (judgement.status == DECIDED).all()
        got = [vocab[row.nonzero()[0][0]] for row in judgement.acceptable]
        assert got == ["y" if brute_balanced(text) else "n" for text in texts]
    assert judge(rule, vocab, ["^())(", "^(())"]).acceptable[:, 3].tolist() == [False, True]
    assert (judge(rule, vocab, ["^(y", "^n)"]).status == OUT_OF_DOMAIN).all()


@pytest.mark.parametrize("spec, message", [
    ({"kind": "balanced", "open": "(", "close": "(", "yes": "y", "no": "n"}, "four different tokens"),
])
def test_a_bad_circuit_rule_is_one_line(spec, message):
    check = Checker()
    assert rule_from_spec(spec, ("0", "(", "y", "n", "+", "="), check) is None
    assert len(check.problems) == 1 and message in str(check.problems[0])


# ---------------------------------------------------------------- references and records, proved


@pytest.mark.parametrize("name", LADDER)
@pytest.mark.parametrize("which", ["reference", "record"])
def test_puzzles_check_proves_the_reference_and_the_record_on_the_whole_domain(name, which, handwired_home):
    path = solution_path(name) if which == "reference" else RECORDS / f"{name}.json"
    result = invoke("puzzles", "check", name, str(path))
    out = words(result.stdout)
    assert result.exit_code == 0 and f"Solved puzzle '{name}'!" in out
    size = load_puzzle(name).domain.size
    assert f"{size:,} proved (the bounds hold in real arithmetic)" in out and " 0 failed" in out
    assert "Proved on every context" in out
    expected = load_puzzle(name).par if which == "reference" else load_puzzle(name).record
    assert submit(load_puzzle(name), parse(json.loads(path.read_text()), path.name)[0]).score == expected


def test_the_domains_are_the_whole_task():
    assert load_puzzle("dyck").domain.size == sum(2**n for n in range(1, 13))


def test_the_bundled_list_fits_80_columns_with_the_third_ladder(monkeypatch, handwired_home):
    monkeypatch.setenv("COLUMNS", "80")
    out = invoke("puzzles").stdout
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80
    rows = [line.split() for line in out.splitlines()]
    assert ["9", "dyck", "8", "1", "2", "≤16", "12", "10", "·"] in rows


# ---------------------------------------------------------------- dyck's hints, built


def dyck_answer(y, kp):
    """dyck wired from its hints alone: a prefix average (f), a soft minimum of it (m), a linear read-out, with A
    and B chosen as the fourth hint says for averages in steps of 1/13 (a margin of 1 each way)."""
    a = 13 * (y + 1)
    b = 13 * (a + y + 1)
    return {"format": "handwired/1", "vocab": ["^", "(", ")", "y", "n"], "n_ctx": 13, "n_embd": 5,
            "dims": ["bal", "f", "m", "yes", "no"],
            "wte": {"(": {"bal": 1}, ")": {"bal": -1}, "y": {"yes": 1}, "n": {"no": 1}}, "wpe": {},
            "blocks": [
                {"attn": {"c_attn": {"w": {"bal": {"v0": 1}}}, "c_proj": {"w": {"z0": {"f": 1, "no": a}}}}},
                {"attn": {"c_attn": {"w": {"f": {"k0": -1, "v0": 1}}, "b": {"q0": kp * math.sqrt(5)}},
                          "c_proj": {"w": {"z0": {"m": 1, "no": -b}}, "b": {"yes": y}}}}]}


def test_dycks_hints_build_a_prefix_average_and_a_minimum_that_solve_it():
    puzzle = load_puzzle("dyck")
    assert "zero queries and keys" in puzzle.hints[1] and "lowest of those averages" in puzzle.hints[2]
    assert "steps of at least 1/13" in puzzle.hints[3]
    model, problems = parse(dyck_answer(y=3, kp=300), "dyck-hints.json")
    assert problems == []
    submission = submit(puzzle, model)
    assert submission.fits and submission.solved and submission.report.passed == 8190
    assert submission.report.margin.value >= 1
    # without the minimum (block 1 writes nothing into no), a close too many is missed: ())( reads as open
    doc = dyck_answer(y=3, kp=300)
    doc["blocks"][1]["attn"]["c_proj"]["w"]["z0"] = {"m": 1}
    broken = submit(puzzle, parse(doc, "no-minimum.json")[0])
    assert not broken.solved and broken.report.failed > 0
