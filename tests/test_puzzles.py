"""Puzzles: statements, fitting a file to the caps, starters, judging, scores, and every bundled puzzle."""

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import PUZZLE_FIXTURES
from reference import params_to_document, random_params
from test_records import prove_first_cases
from walkable import slow_to_prove, too_large

from handwired.errors import HandwiredError
from handwired.judge.checking.report import run
from handwired.judge.game import catalogue
from handwired.judge.game.catalogue import bundled_puzzles, load_puzzle, puzzles_dir, reference_solution, solution_path
from handwired.judge.game.puzzle import Caps, parse_statement, read_statement, starter
from handwired.judge.game.puzzle import answer as rule_answer
from handwired.judge.game.scores import Score, nonzero_parameters, read_score, score
from handwired.judge.game.verdict import fit_problems, puzzle_sample_plan, submit
from handwired.judge.kinds.rules import AMBIGUOUS, DECIDED, OUT_OF_DOMAIN
from handwired.weightfile import Checker, load, parse

# The catalogue as it must ship: name -> (level, vocab, n_ctx, n_embd cap, n_head cap, blocks cap, mlp, rule).
CATALOGUE = {
    "ab": (1, "ab", 4, 8, 1, 1, False, {"kind": "pattern", "pattern": "ab"}),
    "abc": (1, "abc", 6, 10, 1, 1, False, {"kind": "pattern", "pattern": "abc"}),
    "aab": (2, "ab", 5, 8, 1, 1, False, {"kind": "pattern", "pattern": "aab"}),
    "aaab": (2, "ab", 6, 10, 1, 1, False, {"kind": "pattern", "pattern": "aaab"}),
    "first": (2, "abc", 6, 12, 1, 1, False, {"kind": "first"}),
    "previous": (3, "abc", 6, 12, 1, 1, False, {"kind": "previous"}),
    "max": (3, "abcd", 6, 8, 1, 1, False, {"kind": "max"}),
    "majority": (3, "ab", 7, 4, 1, 1, False, {"kind": "majority"}),
    "xor": (4, "ab", 5, 12, 1, 1, True, {"kind": "same_last_two", "same": "a", "different": "b"}),
    "induction": (5, "abcd", 8, 24, 2, 2, False, {"kind": "induction"}),
}


def every_puzzle():
    """Every bundled puzzle, and the test fixtures, as (folder, name): the same proofs for both."""
    bundled = [pytest.param(puzzles_dir(), name, id=name) for name in bundled_puzzles()]
    fixtures = [pytest.param(PUZZLE_FIXTURES, path.stem, id=f"fixture-{path.stem}")
                for path in sorted(PUZZLE_FIXTURES.glob("*.json"))]
    return bundled + fixtures


@pytest.fixture
def folder(request, monkeypatch):
    monkeypatch.setattr(catalogue, "puzzles_dir", lambda: request.param)
    return request.param


def in_folder(monkeypatch, folder):
    monkeypatch.setattr(catalogue, "puzzles_dir", lambda: folder)


# ---------------------------------------------------------------- every puzzle


@pytest.mark.parametrize("folder_path,name", every_puzzle())
def test_statement_validates_and_its_examples_are_answered(monkeypatch, folder_path, name):
    in_folder(monkeypatch, folder_path)
    puzzle = load_puzzle(name)
    assert puzzle.name == name and puzzle.title and puzzle.summary and puzzle.story and puzzle.hints
    for context in puzzle.examples:
        answer = rule_answer(puzzle, context)
        assert answer.status in (DECIDED, AMBIGUOUS, OUT_OF_DOMAIN)
        assert answer.status != DECIDED or len(answer.tokens) == 1
    if folder_path != PUZZLE_FIXTURES and name in CATALOGUE:
        level, vocab, n_ctx, n_embd, n_head, n_layer, mlp, rule = CATALOGUE[name]
        assert (puzzle.level, "".join(puzzle.vocab), puzzle.n_ctx) == (level, vocab, n_ctx)
        assert puzzle.caps == Caps(n_embd, n_head, n_layer, mlp)
        assert puzzle.rule_spec == rule


@pytest.mark.parametrize("folder_path,name", every_puzzle())
def test_reference_solution_passes_every_context_with_margin(monkeypatch, folder_path, name):
    in_folder(monkeypatch, folder_path)
    puzzle = load_puzzle(name)
    model = reference_solution(puzzle)
    assert model is not None, f"{name} has no reference solution"
    assert fit_problems(puzzle, model) == []
    if slow_to_prove(puzzle):  # add10: its first cases here; its whole proof, and par, are test_by_cases's (in CI)
        prove_first_cases(puzzle, model)
        return
    report = submit(puzzle, model).report
    assert report.checked == report.total == puzzle.n_contexts
    assert report.failed == 0 and report.passed > 0 and report.ok
    # proved by cases, the margin is the proof's lower bound (maxk64's 0.003 for a float margin of 4.71, which
    # test_maxk finds over all 16.8 M contexts in CI); walked, the float margin itself
    assert report.margin.value >= (0 if too_large(puzzle) else 1.0), report.margin
    assert model.description, "a reference solution says how it works"
    assert any(label != f"d{i}" for i, label in enumerate(model.dims)), "a reference labels its dims"
    pattern = puzzle.rule_spec.get("pattern")
    assert model.target in (None, pattern), "a target only for a pattern puzzle, and that pattern"
    # par is data in the statement: this check of the reference is its proof
    assert puzzle.par == score(model, report), f"{name}: the statement's par is not its reference's score"


@pytest.mark.parametrize("folder_path,name", every_puzzle())
def test_starter_fits_and_fails_every_judged_context(monkeypatch, folder_path, name):
    in_folder(monkeypatch, folder_path)
    puzzle = load_puzzle(name)
    model, problems = parse(json.loads(json.dumps(starter(puzzle))), "starter")
    assert problems == []
    assert fit_problems(puzzle, model) == []
    assert (model.n_embd, model.n_head, model.n_layer) == (puzzle.caps.n_embd, puzzle.caps.n_head, puzzle.caps.n_layer)
    assert all(("mlp" in block) == puzzle.caps.mlp for block in model.params["blocks"])
    assert nonzero_parameters(model) == 0
    report = (run(model, puzzle_sample_plan(puzzle, model, 2000, 0)) if too_large(puzzle)  # judged on a sample
              else submit(puzzle, model).report)
    assert report.passed == 0 and report.failed > 0 and not report.ok
    assert score(model, report) is None


@pytest.mark.parametrize("folder_path", [puzzles_dir(), PUZZLE_FIXTURES], ids=["bundled", "fixtures"])
def test_every_statement_has_a_solution_and_every_solution_a_statement(monkeypatch, folder_path):
    in_folder(monkeypatch, folder_path)
    statements = set(bundled_puzzles())
    solutions = {path.stem for path in (folder_path / "solutions").glob("*.json")} if folder_path.is_dir() else set()
    assert {name for name in statements
            if solution_path(name) is None} == set(), "a puzzle without a reference is not shipped"
    assert solutions <= statements, "a solution without its statement"


def test_the_catalogue_runs_by_level_then_name():
    puzzles = catalogue.catalogue()
    assert [(p.level, p.name) for p in puzzles] == sorted((p.level, p.name) for p in puzzles)
    assert all(1 <= p.level <= 12 for p in puzzles)


# ---------------------------------------------------------------- statements


@pytest.fixture
def statement():
    return json.loads((PUZZLE_FIXTURES / "aab.json").read_text())


def problems_of(doc, name="aab"):
    return parse_statement(doc, Path(f"/x/{name}.json"))[1]


def test_a_good_statement_has_no_problems(statement):
    puzzle, problems = parse_statement(statement, Path("/x/aab.json"))
    assert problems == [] and puzzle.n_contexts == 62
    assert puzzle.rule.description.startswith("the repeating pattern 'aab'")


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda d: d.update(format="handwired/1"),
         "format: expected 'handwired-puzzle/1'; found the string 'handwired/1'"),
        (lambda d: d.update(name="aba"), "name: expected 'aab', the file's name; found the string 'aba'"),
        (lambda d: d.pop("story"), "(top level): missing 'story'"),
        (lambda d: d.update(colour="red"), "colour: unknown key 'colour'"),
        (lambda d: d.update(level=0), "level: expected a whole number ≥ 1; found 0"),
        (lambda d: d.update(vocab=["a", "a"]), "vocab[1]: 'a' appears twice"),
        (lambda d: d["caps"].update(mlp="no"),
         "caps.mlp: expected true, false or the largest number of hidden units; found the string 'no'"),
        (lambda d: d["caps"].update(n_head=3), "caps: n_embd 8 is not divisible by n_head 3"),
        (lambda d: d["caps"].pop("n_layer"), "caps: missing 'n_layer'"),
        (lambda d: d.update(rule={"kind": "magic"}), "rule.kind: expected one of pattern"),
        (lambda d: d.update(rule={"kind": "pattern", "pattern": "abc"}),
         "rule.pattern: 'c' (position 2) is not in the vocabulary a, b"),
        (lambda d: d.update(examples=["abc"]), "examples[0]: 'c' (position 2) is not in the vocabulary a, b"),
        (lambda d: d.update(examples=["aabaab"]), "examples[0]: 6 tokens, longer than n_ctx 5"),
        (lambda d: d.update(examples=[]), "examples: expected a non-empty list of strings"),
        (lambda d: d.update(hints=["fine", ""]), "hints[1]: expected a non-empty string"),
        (lambda d: d.update(n_ctx=30), "n_ctx: 2,147,483,646 contexts, more than the 100,000,000 a check enumerates"),
    ],
)
def test_statement_problems_name_the_json_path(statement, edit, message):
    edit(statement)
    problems = problems_of(statement)
    assert any(message in problem for problem in problems), problems


def test_reading_a_bad_statement_is_one_line_with_the_file(tmp_path, statement):
    statement["level"] = "two"
    statement["hints"] = "none"
    path = tmp_path / "aab.json"
    path.write_text(json.dumps(statement))
    with pytest.raises(HandwiredError) as error:
        read_statement(path)
    assert str(error.value).startswith(f"{path}: level: expected a whole number")
    assert str(error.value).endswith("(and 1 more)")


def test_unknown_puzzle_lists_the_valid_names(fixture_puzzles):
    with pytest.raises(HandwiredError) as error:
        load_puzzle("nope")
    # by level, then name
    assert str(error.value) == "no puzzle named 'nope' (puzzles: first, aab; or give a statement's path, NAME.json)"


# ---------------------------------------------------------------- fitting a file to the puzzle


@pytest.fixture
def aab_puzzle(fixture_puzzles):
    return load_puzzle("aab")


def model_from(doc):
    model, problems = parse(doc, "mine.json")
    assert problems == []
    return model


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda d: d.update(vocab=["b", "a"]), "expects vocab a, b (in this order), the file has b, a"),
        (lambda d: (d.update(vocab=["a", "b", "c"]), d["wte"].append([0] * 8)),
         "expects vocab a, b, the file has a, b, c"),
        (lambda d: (d.update(n_ctx=4), d["wpe"].pop()), "expects n_ctx 5, the file has 4"),
    ],
)
def test_a_file_with_the_wrong_vocab_or_n_ctx_does_not_fit(aab_puzzle, aab_doc, edit, message):
    edit(aab_doc)
    submission = submit(aab_puzzle, model_from(aab_doc))
    assert not submission.fits and submission.report is None and submission.score is None
    assert str(submission.misfit_error()) == f"mine.json: does not fit puzzle 'aab': it {message}"


def test_caps_on_width_heads_blocks_and_mlp(aab_puzzle):
    rng = np.random.default_rng(0)
    params = random_params(rng, n_vocab=2, n_ctx=5, n_embd=10, n_layer=2, n_hidden=4)
    model = model_from(params_to_document(params, 2, "ab", 5))
    problems = fit_problems(aab_puzzle, model)
    assert problems == ["n_embd at most 8, the file has 10", "n_head at most 1, the file has 2",
                        "blocks at most 1, the file has 2", "no MLP, the file has one in blocks[0], blocks[1]"]
    submission = submit(aab_puzzle, model)
    assert submission.report is None  # the caps come before any numbers are computed
    error = str(submission.misfit_error())
    assert "\n" not in error and "n_embd at most 8, the file has 10; n_head at most 1" in error


def test_smaller_than_the_caps_fits(fixture_puzzles):
    puzzle = load_puzzle("first")  # caps 6 wide, 2 heads, 2 blocks; the reference uses 3, 1, 1
    model = reference_solution(puzzle)
    assert (model.n_embd, model.n_head, model.n_layer) == (3, 1, 1)
    assert fit_problems(puzzle, model) == []


def test_layernorm_is_always_allowed(aab_puzzle, aab_doc):
    aab_doc["ln_f"] = {"g": [1] * 8}
    assert fit_problems(aab_puzzle, model_from(aab_doc)) == []


# ---------------------------------------------------------------- judging and scores


def test_judging_counts_agree_with_the_rule(aab_puzzle):
    report = submit(aab_puzzle, load("aab")).report
    assert (report.passed, report.failed, report.ambiguous, report.out_of_domain) == (13, 0, 1, 48)


def test_a_broken_file_fails_at_its_shortest_context(aab_puzzle, aab_doc):
    aab_doc["blocks"][0]["attn"]["c_proj"]["b"] = [0] * 8  # a and b tie wherever z = 0
    report = submit(aab_puzzle, model_from(aab_doc)).report
    # 'ab': z = (+1 - 1) / 2 = 0, so only the last token's own b (1) counts and b beats the right a (0)
    assert not report.ok and report.shortest_failure.context == "ab"
    assert report.shortest_failure.predicted == "b"
    assert score(model_from(aab_doc), report) is None


def test_answers_of_examples(aab_puzzle):
    assert rule_answer(aab_puzzle, "aab").text() == "a"
    assert rule_answer(aab_puzzle, "a").text() == "ambiguous: a or b (not judged)"
    assert rule_answer(aab_puzzle, "bb").text() == "out of domain (not judged)"


def test_nonzero_parameters_counted_by_hand(aab_doc):
    # aab: wte 2, wpe 5, c_attn.w 5 q-rows (9 Lg) + 5 k + 2 v = 16, c_proj.w 2, c_proj.b 1: 26
    assert nonzero_parameters(load("aab")) == 2 + 5 + 16 + 2 + 1
    aab_doc["ln_f"] = {"g": [1] * 8}
    assert nonzero_parameters(model_from(aab_doc)) == 26 + 8


def test_score_order_fewest_parameters_then_width_blocks_heads_and_never_the_margin():
    base = Score(20, 8, 1, 1, 5.0)
    assert Score(19, 12, 2, 2, 0.5).better_than(base)
    assert Score(20, 7, 2, 2, 0.5).better_than(base)
    assert Score(20, 8, 2, 0, 0.5).better_than(base)  # fewer blocks before fewer heads
    assert Score(20, 8, 1, 0, 0.5).better_than(base)
    wider_margin = Score(20, 8, 1, 1, 50.0)  # ten times the margin, the same sizes: a tie, either way round
    assert not wider_margin.better_than(base) and not base.better_than(wider_margin)
    assert wider_margin.ties(base) and wider_margin.against(base) == base.against(wider_margin) == "tie"
    assert Score(21, 1, 1, 1, 99.0).against(base) == "worse" and base.against(None) is None
    assert not base.better_than(base) and base.better_than(None) and not base.ties(None)
    check = Checker()
    assert read_score(check, base.to_json(), "best") == base and check.problems == []
    assert read_score(check, {**base.to_json(), "margin": "big"}, "best") is None
    assert read_score(check, {**base.to_json(), "margin": int("1" + "0" * 400)}, "best") is None
    assert check.problems == ["best.margin: expected a finite number of logits; found the string 'big'",
                              "best.margin: expected a finite number of logits; found a number of more than 20 digits"]
