"""Proof by cases against the exhaustive walk: the same verdict, counts and failures on every bundled puzzle and on
random models; a split covers its case exactly; a broken model is not proved and its counterexample is named; a
budget spent leaves the proof unfinished; and the bounds of a case hold for its contexts in 50-digit arithmetic."""

import glob
import itertools
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from exact import ExactModel
from reference import params_to_document, random_params
from test_domains import domain

from handwired.engine.arithmetic.cases import evaluate
from handwired.engine.certify import logit_bounds
from handwired.judge.checking import cases
from handwired.judge.checking.plans import domain_plan, every_string_plan
from handwired.judge.checking.report import run
from handwired.judge.game.catalogue import load_puzzle
from handwired.judge.kinds.domains import MAX_INPUTS
from handwired.judge.kinds.spec import rule_from_spec
from handwired.weightfile import load, parse
from handwired.weightfile.checker import Checker

ROOT = Path(__file__).resolve().parent.parent
REFERENCES = sorted(glob.glob(str(ROOT / "puzzles" / "solutions" / "*.json")))
COUNTS = ("checked", "passed", "failed", "proved", "unproved", "ambiguous", "out_of_domain")


def both(model, rule, dom, max_cases=None):
    """The exhaustive walk's report and the proof by cases, on the same contexts."""
    plan = domain_plan(model, dom, rule) if dom is not None else every_string_plan(model, rule)
    walked = run(model, plan)
    space = cases.space_of(dom, model.n_vocab, model.n_ctx)
    return walked, cases.prove(model, rule, space, plan.description, plan.total, max_cases=max_cases)


def assert_same(walked, proof):
    report = proof.report
    assert [getattr(report, k) for k in COUNTS] == [getattr(walked, k) for k in COUNTS]
    assert report.ok == walked.ok and proof.proved == walked.ok
    assert [f.context for f in report.failures] == [f.context for f in walked.failures]
    assert [(f.predicted, f.acceptable) for f in report.failures] == [(f.predicted, f.acceptable)
                                                                     for f in walked.failures]
    unproved = walked.first_unproved
    assert (report.first_unproved is None) == (unproved is None)


@pytest.mark.parametrize("path", REFERENCES, ids=lambda p: Path(p).stem)
def test_every_bundled_puzzle_by_cases_as_by_the_walk(path):
    model, puzzle = load(path), load_puzzle(Path(path).stem)
    if puzzle.domain is not None and puzzle.domain.inputs.count() > MAX_INPUTS:
        pytest.skip("too large to walk: proved by cases alone (test_adder)")
    walked, proof = both(model, puzzle.rule, puzzle.domain)
    assert walked.ok and walked.checked > 0
    assert_same(walked, proof)


def test_rules_that_can_say_prove_whole_cases():
    """first and previous decide a case once one position is fixed: a few cases, not every context."""
    for name in ("first", "previous"):
        model, puzzle = load(str(ROOT / "puzzles" / "solutions" / f"{name}.json")), load_puzzle(name)
        walked, proof = both(model, puzzle.rule, puzzle.domain)
        assert proof.proved and proof.proved_cases > 0 and proof.leaves < walked.checked / 10, name


SMALL = [  # (rule, domain or None, vocab, n_ctx)
    ({"kind": "first"}, None, "abc", 4),
    ({"kind": "previous"}, None, "abc", 4),
    ({"kind": "max"}, None, "abcd", 3),
    ({"kind": "sum", "plus": "+", "equals": "=", "digits": "0123456789", "width": 2},
     {"kind": "answer_so_far", "alphabet": "0123456789", "template": "#+#"}, "0123456789+=", 6),
    ({"kind": "copy", "separator": "|"}, {"kind": "answer_so_far", "alphabet": "ab", "length": [1, 2]}, "ab|", 5),
]


def small(spec, seed, scale):
    rule_spec, dom_spec, vocab, n_ctx = spec
    params = random_params(np.random.default_rng(seed), n_vocab=len(vocab), n_ctx=n_ctx, n_embd=8, n_layer=1 + seed % 2,
                           n_hidden=6, layer_norm=seed % 3 != 0)
    for name in ("wte", "wpe"):
        params[name] = params[name] * scale
    model, problems = parse(params_to_document(params, 2, vocab, n_ctx))
    assert problems == []
    if dom_spec is None:
        return model, rule_from_spec(rule_spec, tuple(vocab), Checker()), None
    made, rule = domain(dom_spec, rule_spec, vocab, n_ctx)
    return model, rule, made


@pytest.mark.parametrize("spec", SMALL, ids=lambda s: s[0]["kind"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_models_by_cases_as_by_the_walk(spec, seed):
    """Random models fail somewhere: the same failures, shortest first, and the same counts."""
    for scale in (1.0, 0.05):  # small embeddings: cases nearly alike, often bounded together
        model, rule, dom = small(spec, seed, scale)
        walked, proof = both(model, rule, dom)
        assert_same(walked, proof)


def test_a_broken_model_is_not_proved_and_its_counterexample_is_named():
    model = load(str(ROOT / "puzzles" / "solutions" / "first.json"))
    puzzle = load_puzzle("first")
    model.params["wpe"][model.n_ctx - 1] += 5000 * model.params["wte"][1]  # length n_ctx: 'b' pushed up
    walked, proof = both(model, puzzle.rule, None)
    assert not walked.ok and walked.failed > 0
    assert not proof.proved and proof.report.failed == walked.failed
    assert proof.report.failures[0].context == walked.failures[0].context
    assert len(proof.report.failures[0].context) == model.n_ctx


def test_a_spent_budget_is_not_proved_and_says_what_is_left():
    model, puzzle = load(str(ROOT / "puzzles" / "solutions" / "add.json")), load_puzzle("add")
    space = cases.space_of(puzzle.domain, model.n_vocab, model.n_ctx)
    proof = cases.prove(model, puzzle.rule, space, "add", 30000, max_cases=3)
    assert not proof.proved and not proof.report.ok and proof.left > 0
    assert proof.spent and not proof.report.interrupted  # the budget, not Ctrl-C
    assert 0 < proof.left_contexts and proof.report.checked + proof.left_contexts >= 30000 - proof.leaves
    counts = proof.report.cases
    assert (counts.left, counts.left_contexts, counts.spent) == (proof.left, proof.left_contexts, True)


def test_ctrl_c_interrupts_a_proof_by_cases():
    model, puzzle = load(str(ROOT / "puzzles" / "solutions" / "add.json")), load_puzzle("add")
    space = cases.space_of(puzzle.domain, model.n_vocab, model.n_ctx)
    asked = iter([False, False, True])
    proof = cases.prove(model, puzzle.rule, space, "add", 30000, should_stop=lambda: next(asked, True))
    assert proof.report.interrupted and not proof.spent and not proof.report.ok and proof.left > 0


def test_a_case_is_written_as_its_sets():
    vocab = tuple("0123456789+=")
    sets = np.zeros((5, 12), dtype=bool)
    sets[0, :10] = sets[1, :10] = True  # [0-9]{2}
    sets[2, 10] = True  # +
    sets[3, [1, 3]] = True  # [13]
    sets[4, 7] = True
    assert cases.case_text(vocab, sets) == "[0-9]{2}+[13]7"


def expand(sets: np.ndarray) -> set:
    return set(itertools.product(*(np.flatnonzero(row).tolist() for row in sets)))


DOMAINS = [
    ({"kind": "strings", "alphabet": "abc", "length": [1, 3]}, {"kind": "first"}, "abc|", 4),
    ({"kind": "strings", "alphabet": "abc", "length": [2, 3], "start": "|", "distinct": True}, {"kind": "first"},
     "abc|", 4),
    ({"kind": "strings", "alphabet": "ab", "template": "#|#"}, {"kind": "first"}, "abc|", 3),
    ({"kind": "answer_so_far", "alphabet": "abc", "length": [1, 2]}, {"kind": "reverse", "separator": "|"},
     "abc|", 5),
    ({"kind": "answer_so_far", "alphabet": "012", "template": "#+##"},
     {"kind": "sum", "plus": "+", "equals": "=", "digits": "0123456789", "width": 3}, "0123456789+=", 8),
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("spec", DOMAINS, ids=lambda s: s[0]["kind"] + str(len(s[0])))
def test_a_split_covers_its_case_exactly(spec, seed):
    """Split at random positions down to single contexts: each split's children are disjoint and make up their
    parent, and the single contexts are the domain's, each once."""
    dom_spec, rule_spec, vocab, n_ctx = spec
    made, _ = domain(dom_spec, rule_spec, vocab, n_ctx)
    assert made is not None
    space, rng = cases.space_of(made, len(vocab), n_ctx), np.random.default_rng(seed)
    found: list = []
    proof = cases.Proof(None)  # type: ignore[arg-type]
    for group in space.groups():
        todo = [space.first(group)[0]]
        slots = space.slots(group)
        while todo:
            case = todo.pop()
            counts = case[slots].sum(axis=1)
            if (counts == 1).all():
                found.extend(tuple(row) for row in cases._contexts(space, group, case[None]).tolist())
                continue
            at = np.array([rng.choice([s for s, c in zip(slots, counts) if c > 1])])
            children, _ = cases._split(case[None], case[None], np.zeros(1, dtype=np.intp), counts[None], slots, at,
                                       proof)
            parts = [expand(child) for child in children]
            assert sum(len(p) for p in parts) == len(set().union(*parts)) == len(expand(case))
            assert set().union(*parts) == expand(case)
            todo.extend(children)
    every = [tuple(row) for batch in made.contexts for row in batch.tolist()]
    assert sorted(found) == sorted(every) and len(set(found)) == len(found)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_bounds_of_a_case_hold_for_its_contexts_in_50_digits(seed):
    rng = np.random.default_rng(seed)
    vocab, n_ctx = "abcd", 4
    params = random_params(rng, n_vocab=4, n_ctx=n_ctx, n_embd=8, n_layer=1, n_hidden=6, layer_norm=seed != 1)
    params["wte"] = params["wte"] * 0.001  # tokens alike: a case's scores vary little, its bounds are finite
    model, problems = parse(params_to_document(params, 2, vocab, n_ctx))
    assert problems == [] and model is not None
    exact, bounded = ExactModel(model.params, model.n_head), 0
    for length in range(1, n_ctx + 1):
        sets = rng.random((6, length, 4)) < 0.5
        sets[np.arange(6)[:, None], np.arange(length), rng.integers(0, 4, (6, length))] = True  # never empty
        packed = evaluate(model, sets)
        lo, hi = logit_bounds(packed[:, :4], packed[:, 4:])
        for i, case in enumerate(sets):
            members = sorted(expand(case))
            for pick in rng.choice(len(members), size=min(3, len(members)), replace=False):
                real = exact.logits(members[pick])
                assert all(mp.mpf(float(lo[i, t])) <= real[t] <= mp.mpf(float(hi[i, t])) for t in range(4))
            bounded += bool(np.isfinite(packed[i, 4:]).all())
    assert bounded == 6 * n_ctx  # every case is bounded, none given up on


@pytest.mark.parametrize("seed", [0, 1])
def test_a_cases_attention_bounded_key_by_key_holds_in_50_digits_where_its_scores_vary_widely(seed):
    """Tokens far apart in the scores (keys up to ±40 a position), no LayerNorm: the certified walk's bound gives up
    over most of these cases (SOFTMAX_LIMIT), the key-by-key one bounds them, and its bounds hold."""
    rng = np.random.default_rng(10 + seed)
    params = random_params(rng, n_vocab=5, n_ctx=3, n_embd=4, n_layer=1, layer_norm=False, mlp=False)
    params["wte"] = params["wte"] * 10
    model, problems = parse(params_to_document(params, 1, "abcde", 3))
    assert problems == [] and model is not None
    exact, bounded = ExactModel(model.params, model.n_head), 0
    sets = rng.random((20, 3, 5)) < 0.5
    sets[np.arange(20)[:, None], np.arange(3), rng.integers(0, 5, (20, 3))] = True
    packed = evaluate(model, sets)
    lo, hi = logit_bounds(packed[:, :5], packed[:, 5:])
    for i, case in enumerate(sets):
        if not np.isfinite(packed[i, 5:]).all():
            continue
        bounded += 1
        for context in expand(case):
            real = exact.logits(context)
            assert all(mp.mpf(float(lo[i, t])) <= real[t] <= mp.mpf(float(hi[i, t])) for t in range(5))
    assert bounded >= 10
