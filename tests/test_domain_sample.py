"""A puzzle's domain checked on a random sample: drawn uniformly without enumerating it, judged by the rule, and the
refusal of a domain too large to walk, which offers that sample."""

import json
import tracemalloc
from collections import Counter

import numpy as np
import pytest
from reference import params_to_document, random_params, reference_forward
from test_cli import invoke
from test_domains import ADD, ADD_RULE, domain

from handwired.engine import walk
from handwired.judge.game import progress as progressing
from handwired.judge.game.catalogue import load_puzzle, puzzles_dir
from handwired.judge.kinds.domains import Domain, TooLargeToWalk
from handwired.judge.kinds.sampling import sample_contexts


def texts(batches, vocab):
    return ["".join(vocab[i] for i in row) for batch in batches for row in batch]


@pytest.mark.parametrize("spec,rule_spec,vocab,n_ctx", [
    ({"kind": "strings", "start": "^", "alphabet": "abc", "length": [1, 3]}, {"kind": "first"}, "^abc", 4),
    ({"kind": "strings", "alphabet": "abcd", "length": [1, 3], "distinct": True}, {"kind": "first"}, "abcd", 3),
    ({"kind": "strings", "alphabet": "ab", "template": "#c#c#"}, {"kind": "first"}, "abc", 5),
    ({"kind": "answer_so_far", "alphabet": "abcd", "length": [1, 3], "distinct": True},
     {"kind": "sort", "separator": "|"}, "abcd|", 7),
    ({"kind": "answer_so_far", "alphabet": "abc", "length": [1, 3]}, {"kind": "reverse", "separator": "|"}, "abc|", 7),
    ({"kind": "answer_so_far", "alphabet": "0123", "template": "#+#"}, ADD_RULE | {"width": 2}, ADD, 6),
])
def test_a_sample_is_uniform_over_the_domains_contexts(spec, rule_spec, vocab, n_ctx):
    """Every context drawn is one of the enumerated domain's, and each comes up about equally often: within five
    standard deviations of sample / size, with a fixed seed."""
    made, _ = domain(spec, rule_spec, vocab, n_ctx)
    every = texts(made.contexts, vocab)
    assert len(every) == len(set(every)) == made.size
    draws = 200 * made.size
    counts = Counter(texts(sample_contexts(made, draws, 7), vocab))
    assert sum(counts.values()) == draws
    assert set(counts) == set(every)  # nothing outside the domain; nothing in it left out at this size
    p = 1 / made.size
    spread = 5 * (draws * p * (1 - p)) ** 0.5
    assert all(abs(count - draws * p) <= spread for count in counts.values()), counts.most_common(3)


def test_the_same_seed_draws_the_same_contexts_and_another_seed_others():
    made, _ = domain({"kind": "answer_so_far", "alphabet": "0123456789", "template": "##+##"}, ADD_RULE, ADD, 9)
    first, again, other = (texts(sample_contexts(made, 500, seed), ADD) for seed in (3, 3, 4))
    assert first == again and first != other


def huge() -> Domain:
    made, _ = domain({"kind": "answer_so_far", "alphabet": "0123456789", "template": "####+####"},
                     ADD_RULE | {"width": 5}, ADD, 15)
    return made


def test_a_domain_too_large_to_walk_is_read_and_sampled_in_small_memory():
    made = huge()  # 100,000,000 inputs: read, never enumerated
    assert made.inputs.count() == 10**8
    for walking in (lambda: made.size, lambda: made.contexts):
        with pytest.raises(TooLargeToWalk, match="100,000,000 inputs, more than the 1,000,000 a check walks"):
            walking()
    tracemalloc.start()
    drawn = texts(sample_contexts(made, 2000, 0), ADD)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(drawn) == 2000 and peak < 20 * 2**20  # a few batches of 2,000 rows, not 100 million inputs
    for context in drawn[:50]:  # each one of the domain's, by its path down the trie
        assert made.holds([ADD.index(t) for t in context])


@pytest.fixture
def huge_statement(tmp_path):
    doc = json.loads((puzzles_dir() / "add.json").read_text(encoding="utf-8"))
    doc |= {"name": "wide", "n_ctx": 13, "rule": doc["rule"] | {"width": 4},
            "domain": doc["domain"] | {"template": "####+###"}, "examples": ["0000+000="]}
    for key in ("par", "record"):
        doc.pop(key)
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def random_model(tmp_path, n_ctx, n_embd=32, n_layer=2, n_hidden=64):
    params = random_params(np.random.default_rng(1), n_vocab=12, n_ctx=n_ctx, n_embd=n_embd, n_layer=n_layer,
                           n_hidden=n_hidden)
    path = tmp_path / f"model-{n_ctx}-{n_embd}.json"
    path.write_text(json.dumps(params_to_document(params, 2, ADD, n_ctx)), encoding="utf-8")
    return path, params


def test_a_domain_too_large_to_walk_is_sampled_or_proved_by_cases_and_never_walked(tmp_path, huge_statement,
                                                                                monkeypatch):
    model, _ = random_model(tmp_path, 13)
    walked = []
    real = walk.walk
    monkeypatch.setattr(walk, "walk", lambda shape, *args: walked.append(type(shape).__name__) or real(shape, *args))
    result = invoke("check", str(model), "--puzzle", str(huge_statement), "--sample", "300", "--json")
    assert result.exit_code == 1  # a random model fails: checked on the sample
    assert walked and set(walked) == {"Listed"}  # the contexts drawn are walked (certified), never the domain
    report = json.loads(result.stdout)
    assert report["contexts"] == 300 and report["checked"].startswith("300 random contexts of the domain")
    walked.clear()
    small, _ = random_model(tmp_path, 13, 8, 1, 8)  # a narrower one: its cases split down quicker
    for command in (["puzzles", "check", str(huge_statement), str(small)],):
        result = invoke(*command, "--json")  # without --sample: proved by cases, the rule (sum) saying over them
        assert result.exit_code == 1, result.output  # a random model fails: its counterexamples named
        report = json.loads(result.stdout)
        assert report["checked"].endswith("by cases") and report["cases"] is not None and report["failed"] > 0
        assert report["total"] == 10**7 * 4 and not report["ok"]  # 10^7 sums, each at its 4 digits
    assert set(walked) == {"Listed"}  # the single contexts the cases split down to, never the domain


def test_a_sampled_check_agrees_with_the_reference_forward_on_the_contexts_drawn(tmp_path):
    """A random model that fits add: each sampled context's verdict as the plain-Python forward pass and the rule
    give it, counted, against the sampled check's."""
    model, params = random_model(tmp_path, 9)
    result = invoke("check", str(model), "--puzzle", "add", "--sample", "300", "--seed", "5", "--json",
                    "--no-proof")
    report = json.loads(result.stdout)
    puzzle = load_puzzle("add")
    failed = 0
    for batch in sample_contexts(puzzle.domain, 300, 5):
        acceptable = puzzle.rule.judge(batch).acceptable
        for row, right in zip(batch, acceptable):
            last = reference_forward(params, row.tolist(), 2)[0][-1]
            best = int(np.argmax(last))
            wins = right[best] and all(last[best] > v for t, v in enumerate(last) if t != best)
            failed += not wins
    assert report["failed"] == failed and report["passed"] == 300 - failed and result.exit_code == (1 if failed else 0)
    assert 0 < failed < 300


def test_the_reference_solution_is_proved_on_the_sample_and_nothing_is_recorded(tmp_path, handwired_home):
    solution = str(puzzles_dir() / "solutions" / "add.json")
    result = invoke("check", solution, "--puzzle", "add", "--sample", "2000", "--seed", "1")
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "2,000 random contexts of the domain: every ##+##" in text and "(seed 1)" in text
    assert "Proved on the 2,000 sampled contexts" in text and "every context" not in text
    assert "solved" not in text.lower() and "par" not in text.split()
    assert progressing.load().best(load_puzzle("add").key) is None  # a sample never solves the puzzle


def test_a_file_naming_its_puzzle_is_checked_on_a_sample(tmp_path):
    starter = tmp_path / "start.json"
    assert invoke("puzzles", "start", "add", "-o", str(starter)).exit_code == 0
    result = invoke("check", str(starter), "--sample", "100", "--json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and report["contexts"] == 100 and report["failed"] == 100  # a starter ties: fails
    assert report["sampled"] is True
    assert "random contexts of the domain" in report["checked"]
