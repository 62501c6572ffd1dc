"""Proof by cases in the product, through the command line and Python: a domain too large to walk is judged by cases
(add10), any domain whose rule can say over cases is on --by-cases (the same verdict as the walk), the verdict says
how it was proved or what is left, the budget stops it (not proved), Ctrl-C interrupts it, and an adder broken on
its longest carry chain is not proved and its counterexample is named, confirmed by the float forward pass.

The ten-digit proofs take one to two minutes of CPU each: CI runs them (stress.FULL); the default run proves a
three-digit adder built from add10's hints, and add10's first cases within a small budget."""

import json
import re
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from adders import adder, write
from stress import FULL
from test_cli import invoke, user_error

import handwired
from handwired.engine.batch import next_logits_distinct
from handwired.judge.game.catalogue import load_puzzle
from handwired.weightfile.parse import parse

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = str(ROOT / "puzzles" / "solutions" / "add10.json")


def words(text: str) -> str:
    return " ".join(text.split())


def test_an_adder_built_from_add10s_hints_is_proved_by_cases_at_three_digits(tmp_path, handwired_home):
    """tests/adders.py builds the adder from the hints (positions one-hot, keys by position, a carry step and a wrap
    step, the unembedding's d·y - d²/2): at width 10 it is the reference entry for entry (test_adder); at width 3 it
    is proved on all 4,000,000 contexts of the three-digit statement by cases, asked for with --by-cases (10^6
    inputs can still be walked)."""
    statement, weights = write(tmp_path, 3)
    result = invoke("puzzles", "check", str(statement), str(weights), "--by-cases", "--json")
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    assert verdict["solved"] and verdict["total"] == verdict["contexts"] == verdict["proved"] == 4 * 10**6
    counts = verdict["cases"]
    assert counts["cases_left"] == counts["contexts_left"] == 0 and not counts["spent"]
    assert 0 < counts["cases"] <= counts["cases_evaluated"] and counts["deepest_split"] >= 1
    assert verdict["margin"]["logits"] > 1  # a certified lower bound: Z/2 = 8 less what the steps leave


def test_a_carry_chain_broken_on_100_sums_is_not_proved_and_its_shortest_counterexample_is_named(tmp_path,
                                                                                                handwired_home):
    """The broken adder writes the last digit wrong on the 100 sums whose higher places all hold 9 + 9 (of 10^6):
    the proof by cases splits down to them and names them, shortest first, each confirmed by forward.py's float
    pass; nothing else fails."""
    statement, weights = write(tmp_path, 3, broken=True)
    result = invoke("puzzles", "check", str(statement), str(weights), "--by-cases", "--json")
    assert result.exit_code == 1, result.output
    as_json = json.loads(result.stdout)
    assert as_json["failed"] == 100 and as_json["passed"] == 4 * 10**6 - 100 and not as_json["ok"]
    assert as_json["shortest_failure"] == "990+990=089" and not as_json["solved"]
    expected = {f"99{a}+99{b}=" + f"{990 + a + 990 + b:04d}"[::-1][:3] for a in range(10) for b in range(10)}
    named = [failure["context"] for failure in as_json["failures"]]
    assert set(named) <= expected and named == sorted(named)
    model, _ = parse(adder(3, broken=True, room=0), "broken")
    contexts = np.array([[model.vocab.index(t) for t in text] for text in named])
    logits = next_logits_distinct(model, contexts)
    assert (logits.argmax(axis=1) == model.vocab.index("0")).all()  # the float pass writes 0 where 1 is right
    assert [failure["predicted"] for failure in as_json["failures"]] == ["0"] * len(named)


@pytest.mark.skipif(not FULL, reason="the whole ten-digit proof: CI (stress.FULL)")
def test_ten_digits_broken_on_their_longest_carry_chain_are_not_proved(tmp_path, handwired_home):
    statement, weights = write(tmp_path, 10, broken=True)
    as_json = json.loads(invoke("puzzles", "check", str(statement), str(weights), "--json").stdout)
    assert as_json["failed"] == 100 and as_json["passed"] == 11 * 10**20 - 100 and not as_json["solved"]
    assert as_json["shortest_failure"] == "9999999990+9999999990=0899999999"
    assert as_json["cases"]["cases_left"] == 0


def test_add10_is_judged_by_cases_and_a_spent_budget_is_not_proved(handwired_home):
    """Too large to walk, add10 is proved by cases with no flag; with two seconds allowed it stops, not proved: the
    cases left and the contexts they cover, and how to allow more; nothing is recorded."""
    result = invoke("puzzles", "check", "add10", REFERENCE, "--max-seconds", "1", "--json")
    assert result.exit_code == 1, result.output
    verdict = json.loads(result.stdout)
    counts = verdict["cases"]
    assert counts["spent"] and counts["cases_left"] > 0 and counts["contexts_left"] > 0
    assert not verdict["solved"] and not verdict["ok"] and not verdict["interrupted"] and verdict["failed"] == 0
    assert verdict["total"] == 11 * 10**20 and verdict["contexts"] + counts["contexts_left"] >= verdict["total"]
    assert "--max-seconds" in result.stderr and "stopped" in result.stderr
    progress = handwired_home / "progress.json"
    assert not progress.exists() or "add10" not in progress.read_text()
    text = words(invoke("puzzles", "check", "add10", REFERENCE, "--max-seconds", "1").stdout)
    assert re.search(r"Not proved: [\d,]+ cases? left, covering [\d,]+ contexts", text)
    assert "Not solved:" in text and "Proved on" not in text


@pytest.mark.skipif(not FULL, reason="the whole ten-digit proof: CI (stress.FULL)")
def test_add10s_reference_is_proved_on_all_its_contexts_through_the_command_line(handwired_home):
    text = words(invoke("puzzles", "check", "add10", REFERENCE).stdout)
    assert "Proved on all 1,100,000,000,000,000,000,000 contexts in 169,879 cases (deepest split" in text
    assert "Solved puzzle 'add10'! Ties par." in text  # par is the reference's score


def test_ctrl_c_stops_a_proof_by_cases_with_exit_130_and_records_nothing(monkeypatch, handwired_home):
    from handwired.cli import checking

    @contextmanager
    def asked_at_once(show_progress):
        yield (lambda done, total: None), (lambda: True)

    monkeypatch.setattr(checking, "progress_and_stop", asked_at_once)
    result = invoke("puzzles", "check", "add10", REFERENCE)
    assert result.exit_code == 130
    assert re.search(r"Interrupted: 0 of 1,100,000,000,000,000,000,000 contexts were checked \(11 cases left",
                     words(result.stdout))
    assert not (handwired_home / "progress.json").exists()


@pytest.mark.parametrize("name", ["max", "first", "previous"])
def test_by_cases_on_a_walkable_puzzle_gives_the_walks_verdict(name, handwired_home):
    reference = str(ROOT / "puzzles" / "solutions" / f"{name}.json")
    walked = json.loads(invoke("puzzles", "check", name, reference, "--json").stdout)
    by_cases = json.loads(invoke("puzzles", "check", name, reference, "--json", "--by-cases").stdout)
    keys = ("contexts", "passed", "failed", "proved", "unproved", "ok", "solved", "parameters")
    assert [by_cases[k] for k in keys] == [walked[k] for k in keys] and by_cases["solved"]
    assert walked["cases"] is None and by_cases["cases"]["cases_left"] == 0
    assert by_cases["margin"]["logits"] <= walked["margin"]["logits"] + 1e-9  # a lower bound of the walk's
    text = words(invoke("check", reference, "--puzzle", name, "--by-cases").stdout)
    assert f"Proved on all {walked['contexts']:,} contexts" in text and "(deepest split" in text
    assert "margin at least" in text


def test_by_cases_refusals_name_the_flags(tmp_path):
    reference = str(ROOT / "puzzles" / "solutions" / "sort.json")
    said = user_error("puzzles", "check", "sort", reference, "--by-cases")
    assert "--by-cases" in said and "cannot say" in said and "walk" in said
    said = user_error("puzzles", "check", "max", str(ROOT / "puzzles" / "solutions" / "max.json"), "--by-cases",
                      "--no-proof")
    assert "--by-cases" in said and "--no-proof" in said
    said = user_error("check", str(ROOT / "puzzles" / "solutions" / "max.json"), "--puzzle", "max", "--by-cases",
                      "--sample", "10")
    assert "--by-cases" in said and "--sample" in said
    said = user_error("check", str(ROOT / "puzzles" / "solutions" / "ab.json"), "--by-cases")
    assert "--by-cases" in said and "cannot say" in said  # a target's pattern rule


def test_python_submits_by_cases_and_speaks_its_keywords():
    verdict = handwired.puzzle("max").submit(str(ROOT / "puzzles" / "solutions" / "max.json"), by_cases=True)
    assert verdict.solved and verdict.report.cases is not None and verdict.report.cases.left == 0
    with pytest.raises(handwired.HandwiredError, match=r"by_cases=True"):
        handwired.puzzle("sort").submit(str(ROOT / "puzzles" / "solutions" / "sort.json"), by_cases=True)


def test_puzzles_show_says_add10_is_proved_by_cases(handwired_home):
    text = words(invoke("puzzles", "show", "add10").stdout.replace("│", " "))
    assert "1,100,000,000,000,000,000,000 contexts, too many to walk one by one: proved by cases" in text
    assert load_puzzle("add10").n_contexts == 11 * 10**20


def test_a_small_proved_margin_by_cases_is_not_called_a_near_miss(handwired_home):
    """max's reference leads by 3 logits at its closest (the walk), but its cases' bounds guarantee only 0.333: that
    is what the proof can say, not a near miss of the model's."""
    reference = str(ROOT / "puzzles" / "solutions" / "max.json")
    walked = words(invoke("check", reference, "--puzzle", "max").stdout)
    by_cases = words(invoke("check", reference, "--puzzle", "max", "--by-cases").stdout)
    assert "margin 3 logits" in walked and "Near miss" not in walked
    assert "margin at least 0.333 logits" in by_cases and "Near miss" not in by_cases
    assert "The proof guarantees less than 1 logit of margin there" in by_cases
