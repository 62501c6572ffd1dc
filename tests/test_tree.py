"""The tree evaluation of every context against the per-context forward pass and the independent reference."""

import json
import threading

import mpmath as mp
import numpy as np
import pytest
from conftest import AAB_FILE
from exact import ExactModel
from reference import params_to_document, random_params, reference_forward
from waiting import DEADLINE

from handwired.engine import tree
from handwired.engine.batch import next_logits
from handwired.engine.tree import batch_size, evaluate_tree, new_position
from handwired.judge.contexts import contexts_of, exhaustive_contexts
from handwired.judge.plans import Batch, Plan, exhaustive_plan, pattern_rule
from handwired.judge.report import run as run_plan
from handwired.weightfile import load, parse

# (n_vocab, n_ctx, n_layer, n_head, layer_norm, mlp, n_embd, chunk)
CASES = [
    (2, 6, 1, 1, False, False, 4, 1024),
    (3, 4, 2, 2, True, True, 8, 1024),
    (2, 7, 3, 4, True, True, 8, 8),  # batches smaller than a length: the depth-first walk
    (4, 4, 2, 2, False, True, 6, 16),
    (5, 3, 1, 2, True, False, 4, 5),
    (1, 6, 2, 2, True, True, 4, 1024),  # one token: a chain, one context per length
    (3, 5, 0, 1, True, False, 4, 9),  # no blocks: embeddings straight to the unembedding
]


def random_model(seed, n_vocab, n_ctx, n_layer, n_head, layer_norm, mlp, n_embd):
    rng = np.random.default_rng(seed)
    params = random_params(rng, n_vocab=n_vocab, n_ctx=n_ctx, n_embd=n_embd, n_layer=n_layer, n_hidden=2 * n_embd,
                           layer_norm=layer_norm, mlp=mlp)
    model, problems = parse(params_to_document(params, n_head, "abcde"[:n_vocab], n_ctx))
    assert problems == []
    return model


def close(actual, expected):
    # 1e-12, relative to the logits' size (random weights without LayerNorm can make them large)
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(expected)))))


@pytest.mark.parametrize("n_vocab,n_ctx,n_layer,n_head,layer_norm,mlp,n_embd,chunk", CASES)
def test_tree_gives_every_context_the_per_context_logits(n_vocab, n_ctx, n_layer, n_head, layer_norm, mlp, n_embd,
                                                         chunk):
    model = random_model(n_vocab * 10 + n_ctx, n_vocab, n_ctx, n_layer, n_head, layer_norm, mlp, n_embd)
    seen = {length: np.zeros(n_vocab**length, dtype=int) for length in range(1, n_ctx + 1)}
    for batch in evaluate_tree(model, chunk=chunk, workers=1):
        n = len(batch.logits)
        assert n <= max(chunk, n_vocab) and batch.logits.shape == (n, n_vocab)
        seen[batch.length][batch.first : batch.first + n] += 1
        contexts = contexts_of(batch.length, batch.first, n, n_vocab)
        close(batch.logits, next_logits(model, contexts))
    assert all(np.all(counts == 1) for counts in seen.values())  # every context exactly once


@pytest.mark.parametrize("n_vocab,n_ctx,n_layer,n_head,layer_norm,mlp,n_embd,chunk", CASES)
def test_tree_agrees_with_the_independent_reference(n_vocab, n_ctx, n_layer, n_head, layer_norm, mlp, n_embd, chunk):
    model = random_model(n_vocab * 10 + n_ctx, n_vocab, n_ctx, n_layer, n_head, layer_norm, mlp, n_embd)
    for batch in evaluate_tree(model, chunk=chunk, workers=1):
        for row, context in enumerate(contexts_of(batch.length, batch.first, len(batch.logits), n_vocab)[:40]):
            expected = reference_forward(model.params, context.tolist(), model.n_head)[0][-1]
            close(batch.logits[row], expected)


def test_a_silent_attention_adds_its_bias_alone_and_keeps_no_keys():
    """A block whose attention's c_proj.w is all zeros (a starter's, or one not wired yet) adds exactly its bias: the
    tree skips its keys and values and still gives the per-context logits, in float64 and with certified bounds (the
    same mids, around the real logits)."""
    from handwired.engine import certify

    model = random_model(7, 3, 4, 3, 2, True, True, 8)
    for block in model.params["blocks"][::2]:  # blocks 0 and 2 silent; block 1 reads
        block["attn"]["c_proj"]["w"][:] = 0
    kept = []
    real = tree.new_position_block
    tree.new_position_block = lambda *args, **kw: kept.append(args[3].shape) or real(*args, **kw)
    try:
        plain = {(b.length, b.first): b.logits for b in evaluate_tree(model, workers=1)}
    finally:
        tree.new_position_block = real
    assert kept and len(kept) == len(plain)  # one block of three computed its attention, once per batch
    for (length, first), logits in plain.items():
        close(logits, next_logits(model, contexts_of(length, first, len(logits), 3)))
    exact = ExactModel(model.params, model.n_head)
    for batch in evaluate_tree(model, workers=1, evaluator=certify.TREE):
        assert np.array_equal(batch.logits[:, :3], plain[batch.length, batch.first])
        lo, hi = certify.logit_bounds(batch.logits[:, :3], batch.logits[:, 3:])
        for row, context in list(enumerate(contexts_of(batch.length, batch.first, len(lo), 3)))[::7]:
            real = exact.logits(tuple(int(t) for t in context))
            assert all(mp.mpf(float(lo[row, t])) <= real[t] <= mp.mpf(float(hi[row, t])) for t in range(3))


def test_min_length_skips_the_short_contexts_but_not_their_keys():
    model = random_model(3, 3, 5, 2, 2, True, True, 8)
    everything = {(b.length, b.first): b.logits for b in evaluate_tree(model, chunk=9, workers=1)}
    long_only = list(evaluate_tree(model, min_length=4, chunk=9, workers=1))
    assert {b.length for b in long_only} == {4, 5}
    assert sum(len(b.logits) for b in long_only) == 3**4 + 3**5
    for batch in long_only:
        np.testing.assert_array_equal(batch.logits, everything[batch.length, batch.first])


def by_length(model, batches):
    """{length: [n_vocab**length, n_vocab] logits, every context once}."""
    logits = {length: np.full((model.n_vocab**length, model.n_vocab), np.nan) for length in range(1, model.n_ctx + 1)}
    for batch in batches:
        assert np.all(np.isnan(logits[batch.length][batch.first : batch.first + len(batch.logits)]))
        logits[batch.length][batch.first : batch.first + len(batch.logits)] = batch.logits
    return logits


def test_threads_give_the_same_logits_in_a_fixed_order(monkeypatch):
    monkeypatch.setattr(tree, "PARALLEL_FROM", 1)
    model = random_model(8, 3, 6, 2, 2, True, True, 8)
    alone = by_length(model, evaluate_tree(model, chunk=27, workers=1))
    for workers in (2, 3):
        order = [(b.length, b.first) for b in evaluate_tree(model, chunk=27, workers=workers)]
        assert order == [(b.length, b.first) for b in evaluate_tree(model, chunk=27, workers=workers)]
        shared = by_length(model, evaluate_tree(model, chunk=27, workers=workers))
        for length, logits in alone.items():
            np.testing.assert_allclose(shared[length], logits, rtol=1e-13, atol=1e-13)


def test_stopping_early_stops_the_threads(monkeypatch):
    monkeypatch.setattr(tree, "PARALLEL_FROM", 1)
    before = set(threading.enumerate())
    batches = evaluate_tree(random_model(9, 2, 12, 2, 2, True, True, 8), chunk=8, workers=2)
    started: set = set()
    while not started:  # the top levels come first, from this thread; then the subtrees', from threads of their own
        next(batches)
        started = set(threading.enumerate()) - before
    next(batches)
    batches.close()
    for thread in started:
        thread.join(timeout=DEADLINE)  # each one ends: the deadline is a safety net against a hang
    assert not [thread for thread in started if thread.is_alive()]
    assert set(threading.enumerate()) <= before


def test_an_error_in_a_thread_reaches_the_consumer(monkeypatch):
    monkeypatch.setattr(tree, "PARALLEL_FROM", 1)
    model = random_model(10, 2, 8, 1, 1, False, False, 4)
    calls = {"n": 0}
    real = new_position

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 12:
            raise MemoryError("no room")
        return real(*args, **kwargs)

    monkeypatch.setattr(tree, "new_position", failing)
    with pytest.raises(MemoryError, match="no room"):
        list(evaluate_tree(model, chunk=4, workers=2))


def test_batch_size_keeps_the_path_within_its_memory():
    model = random_model(11, 2, 20, 2, 2, True, True, 16)
    size = batch_size(model, chunk=1 << 20, memory=64 * 2**20)
    kept = sum(length + 2 for length in range(1, 20)) * 16 * 8 * 2 * 2 * size  # bytes of keys and values
    assert size & (size - 1) == 0 and kept <= 64 * 2**20 < 2 * kept
    assert batch_size(model, chunk=100) == 64  # a power of n_vocab, at most the chunk
    assert batch_size(random_model(12, 3, 4, 1, 1, False, False, 4), chunk=1) == 3  # at least one family


def report_of(model, plan):
    report = run_plan(model, plan, show=1000)
    margin = report.margin
    return (report.checked, report.passed, report.failed, report.ambiguous, report.out_of_domain,
            [f.context for f in report.failures],
            None if margin is None else (margin.context, margin.right, margin.wrong),
            None if margin is None else margin.value)


def per_context_plan(model, rule, min_length=1):
    # today's exhaustive plan: the same contexts, shortest first, evaluated one by one by run_plan
    plan = exhaustive_plan(model, rule, min_length)
    batches = lambda: (Batch(c, rule.judge(c)) for c in exhaustive_contexts(model, min_length))  # noqa: E731
    return Plan(plan.description, plan.rule, plan.total, batches)


def lg3_aab():
    """aab with Lg = 3: right everywhere, with small margins and many exact ties between them."""
    doc = json.loads(AAB_FILE.read_text(encoding="utf-8"))
    doc["constants"]["Lg"] = 3
    model, problems = parse(doc)
    assert problems == []
    return model


@pytest.mark.parametrize("make", [
    lambda: load("aab"),
    lg3_aab,
    lambda: random_model(13, 2, 9, 2, 2, True, True, 8),
    lambda: random_model(14, 3, 5, 2, 4, False, True, 8),
])
@pytest.mark.parametrize("min_length", [1, 3])
@pytest.mark.parametrize("workers", [1, 2])
def test_exhaustive_check_reports_what_the_per_context_check_reports(make, min_length, workers, monkeypatch):
    monkeypatch.setattr(tree, "CHUNK", 8)  # many batches, interleaved lengths
    monkeypatch.setattr(tree, "WORKERS", workers)
    monkeypatch.setattr(tree, "PARALLEL_FROM", 1)
    model = make()
    rule = pattern_rule(model, "aab" if model.n_vocab == 2 else "abcab")
    tree_report = report_of(model, exhaustive_plan(model, rule, min_length))
    expected = report_of(model, per_context_plan(model, rule, min_length))
    assert tree_report[:-1] == expected[:-1]
    assert tree_report[-1] == pytest.approx(expected[-1], rel=1e-12, abs=1e-12)


def test_an_interrupted_tree_check_reports_what_it_checked():
    model = random_model(15, 2, 14, 1, 2, False, False, 8)
    plan = exhaustive_plan(model, pattern_rule(model, "aab"))
    calls = {"n": 0}

    def after_three():
        calls["n"] += 1
        return calls["n"] >= 3

    report = run_plan(model, plan, should_stop=after_three)
    assert report.interrupted and 0 < report.checked < plan.total
    assert report.passed + report.failed + report.ambiguous + report.out_of_domain == report.checked
