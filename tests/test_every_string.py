"""Every string of every length walked as a trie (a check over every context): its wide batches cut by slot, in
parts on threads, against the per-context forward pass and the independent reference."""

import json
import threading

import mpmath as mp
import numpy as np
import pytest
from conftest import AAB_FILE
from exact import ExactModel
from reference import params_to_document, random_params, reference_forward
from waiting import DEADLINE

from handwired import budget
from handwired.engine import certify, cost, parts
from handwired.engine import walk as walking
from handwired.engine.arithmetic import certified as proof_step
from handwired.engine.arithmetic import floats as stepping
from handwired.engine.arithmetic.floats import float_walk
from handwired.engine.batch import next_logits
from handwired.engine.parts import Part, side_by_side
from handwired.engine.walk import EveryString
from handwired.judge.checking.contexts import exhaustive_contexts
from handwired.judge.checking.plans import Batch, Plan, exhaustive_plan, pattern_rule
from handwired.judge.checking.report import run as run_plan
from handwired.weightfile import load, parse

# (n_vocab, n_ctx, n_layer, n_head, layer_norm, mlp, n_embd, chunk)
CASES = [
    (2, 6, 1, 1, False, False, 4, 1024),
    (3, 4, 2, 2, True, True, 8, 1024),
    (2, 7, 3, 4, True, True, 8, 8),  # batches smaller than a length: cut by slot, the depth-first walk
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


def strings(model, chunk=None, shares=1, walk=float_walk, min_length=1):
    """Every string's visits, as a check walks them: cut by slot, in ``shares`` parts."""
    shape = EveryString(model.n_vocab, model.n_ctx, min_length, by_slot=True)
    return side_by_side(lambda part: walk(model, part, chunk=chunk), shape, model.n_vocab, model.n_ctx, shares)


def by_context(visits):
    """{context: logits} of the judged nodes, each context once."""
    found = {}
    for visit in visits:
        for row, logits in zip(visit.prefixes[visit.judged], visit.logits[visit.judged] if visit.judged.any() else ()):
            context = tuple(int(t) for t in row)
            assert context not in found
            found[context] = logits
    return found


def everything(model):
    return [tuple(int(t) for t in row) for batch in exhaustive_contexts(model) for row in batch]


@pytest.mark.parametrize("n_vocab,n_ctx,n_layer,n_head,layer_norm,mlp,n_embd,chunk", CASES)
def test_the_walk_gives_every_context_the_per_context_logits(n_vocab, n_ctx, n_layer, n_head, layer_norm, mlp, n_embd,
                                                             chunk):
    model = random_model(n_vocab * 10 + n_ctx, n_vocab, n_ctx, n_layer, n_head, layer_norm, mlp, n_embd)
    visits = list(strings(model, chunk))
    assert all(len(visit.prefixes) <= chunk for visit in visits)
    for visit in visits:  # each batch in vocab order, one length
        rows = visit.prefixes.tolist()
        assert rows == sorted(rows)
    found = by_context(visits)
    assert sorted(found) == sorted(everything(model))  # every context exactly once
    for length in range(1, n_ctx + 1):
        contexts = np.array([c for c in found if len(c) == length])
        close(np.array([found[tuple(c)] for c in contexts.tolist()]), next_logits(model, contexts))


@pytest.mark.parametrize("n_vocab,n_ctx,n_layer,n_head,layer_norm,mlp,n_embd,chunk", CASES)
def test_the_walk_agrees_with_the_independent_reference(n_vocab, n_ctx, n_layer, n_head, layer_norm, mlp, n_embd,
                                                        chunk):
    model = random_model(n_vocab * 10 + n_ctx, n_vocab, n_ctx, n_layer, n_head, layer_norm, mlp, n_embd)
    for context, logits in list(by_context(strings(model, chunk, shares=2)).items())[::3][:200]:
        close(logits, reference_forward(model.params, list(context), model.n_head)[0][-1])


def test_wide_batches_are_cut_by_slot_and_share_their_parents_keys(monkeypatch):
    """Past a chunk, each batch holds one child of every parent: no sibling copies its parent's keys (the step's
    copy, step.inherit, runs only on the short levels, where a batch of siblings fits a chunk), and the logits are
    those of the walk that copies."""
    model = random_model(2, 3, 6, 2, 2, True, True, 8)
    copied = []
    real = stepping.inherit
    monkeypatch.setattr(stepping, "inherit", lambda kv, own, family, length, children: copied.append(length) or
                        real(kv, own, family, length, children))
    cut = list(strings(model, chunk=27))
    assert {len(visit.prefixes) for visit in cut if visit.prefixes.shape[1] > 3} == {27}
    assert set(copied) == {1, 2, 3}  # lengths 4…6 (27 parents and more) share: 3 batches of 27 under each batch
    slotted = by_context(cut)
    plain = by_context(float_walk(model, EveryString(3, 6), chunk=27))
    assert slotted.keys() == plain.keys()
    for context, logits in plain.items():
        close(slotted[context], logits)


def test_a_silent_attention_adds_its_bias_alone_and_keeps_no_keys(monkeypatch):
    """A block whose attention's c_proj.w is all zeros (a starter's, or one not wired yet) adds exactly its bias: the
    walk keeps no keys or values for it and still gives the per-context logits, in float64 and with certified bounds
    (the same mids, around the real logits)."""
    model = random_model(7, 3, 4, 3, 2, True, True, 8)
    for block in model.params["blocks"][::2]:  # blocks 0 and 2 silent; block 1 reads
        block["attn"]["c_proj"]["w"][:] = 0
    kept = []
    real = stepping.extend
    monkeypatch.setattr(stepping, "extend", lambda room, block, *args: kept.append(block) or real(room, block, *args))
    monkeypatch.setattr(proof_step, "extend", stepping.extend)
    plain = by_context(strings(model, chunk=9))
    assert kept and set(kept) == {1}  # one block of three keeps its keys, once per batch
    for length in range(1, 5):
        contexts = np.array([c for c in plain if len(c) == length])
        close(np.array([plain[tuple(c)] for c in contexts.tolist()]), next_logits(model, contexts))
    kept.clear()
    proved = by_context(strings(model, chunk=9, walk=certify.certified_walk))
    assert set(kept) == {1} and proved.keys() == plain.keys()
    exact = ExactModel(model.params, model.n_head)
    for context, packed in list(proved.items())[::7]:
        assert np.array_equal(packed[:3], plain[context])
        lo, hi = certify.logit_bounds(packed[:3], packed[3:])
        real_logits = exact.logits(context)
        assert all(mp.mpf(float(lo[t])) <= real_logits[t] <= mp.mpf(float(hi[t])) for t in range(3))


def test_min_length_skips_the_short_contexts_but_not_their_keys():
    model = random_model(3, 3, 5, 2, 2, True, True, 8)
    every = by_context(strings(model, chunk=9))
    long_only = by_context(strings(model, chunk=9, min_length=4))
    assert {len(c) for c in long_only} == {4, 5} and len(long_only) == 3**4 + 3**5
    for context, logits in long_only.items():
        np.testing.assert_array_equal(logits, every[context])


def test_parts_share_out_the_trie_and_judge_each_context_once():
    """Each part walks the prefixes of length ``top`` numbered its index modulo the parts, and what lies below them;
    the shorter nodes are walked by every part and judged by the first alone."""
    shape = EveryString(3, 4)
    judged = []
    for index in range(2):
        part = Part(shape, 3, 2, index, 2)
        for visit in walking.shape_walk(part):
            judged += [tuple(row) for row in visit.prefixes[visit.judged].tolist()]
            if visit.prefixes.shape[1] >= 2:
                tops = visit.prefixes[:, 0] * 3 + visit.prefixes[:, 1]
                assert (tops % 2 == index).all()
    assert sorted(judged) == sorted(everything(random_model(1, 3, 4, 1, 1, False, False, 4)))


def test_threads_give_the_same_logits_in_a_fixed_order():
    model = random_model(8, 3, 6, 2, 2, True, True, 8)
    alone = by_context(strings(model, chunk=27))
    for shares in (2, 3):
        order = [visit.prefixes.tolist() for visit in strings(model, chunk=27, shares=shares)]
        assert order == [visit.prefixes.tolist() for visit in strings(model, chunk=27, shares=shares)]
        shared = by_context(strings(model, chunk=27, shares=shares))
        assert shared.keys() == alone.keys()
        for context, logits in alone.items():
            np.testing.assert_allclose(shared[context], logits, rtol=1e-13, atol=1e-13)


def test_stopping_early_stops_the_threads():
    before = set(threading.enumerate())
    visits = strings(random_model(9, 2, 12, 2, 2, True, True, 8), chunk=8, shares=2)
    next(visits)
    started = set(threading.enumerate()) - before
    assert len(started) == 2  # a thread for each part
    next(visits)
    visits.close()
    for thread in started:
        thread.join(timeout=DEADLINE)  # each one ends: the deadline is a safety net against a hang
    assert not [thread for thread in started if thread.is_alive()]
    assert set(threading.enumerate()) <= before


def test_an_error_in_a_thread_reaches_the_consumer(monkeypatch):
    model = random_model(10, 2, 8, 1, 1, False, False, 4)
    calls = {"n": 0}
    real = stepping.block_step

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 12:
            raise MemoryError("no room")
        return real(*args, **kwargs)

    monkeypatch.setattr(stepping, "block_step", failing)
    with pytest.raises(MemoryError, match="no room"):
        list(strings(model, chunk=4, shares=2))


def test_threads_only_when_many_contexts_and_their_walks_fit_in_memory(monkeypatch):
    model = random_model(11, 2, 20, 2, 2, True, True, 16)
    monkeypatch.setattr(parts, "WORKERS", 4)
    assert parts.workers(model, parts.PARALLEL_FROM - 1, 20) == 1
    assert parts.workers(model, parts.PARALLEL_FROM, 20) == 4
    monkeypatch.setattr(budget, "MEMORY", 4 * cost.walk_bytes(model, 20) - 1)
    assert parts.workers(model, parts.PARALLEL_FROM, 20) == 1


def report_of(model, plan):
    report = run_plan(model, plan, show=1000)
    margin = report.margin
    return (report.checked, report.passed, report.failed, report.ambiguous, report.out_of_domain,
            [f.context for f in report.failures],
            None if margin is None else (margin.context, margin.right, margin.wrong),
            None if margin is None else margin.value)


def per_context_plan(model, rule, min_length=1):
    # the same contexts, shortest first, evaluated one by one by run_plan
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
    monkeypatch.setattr(stepping, "batch_nodes", lambda *args, **kwargs: 8)  # many batches, interleaved lengths
    monkeypatch.setattr(proof_step, "batch_size", lambda *args, **kwargs: 8)
    monkeypatch.setattr(parts, "WORKERS", workers)
    monkeypatch.setattr(parts, "PARALLEL_FROM", 1)
    model = make()
    rule = pattern_rule(model, "aab" if model.n_vocab == 2 else "abcab")
    for proof in (True, False):
        walked = report_of(model, exhaustive_plan(model, rule, min_length, proof=proof))
        expected = report_of(model, per_context_plan(model, rule, min_length))
        assert walked[:-1] == expected[:-1]
        assert walked[-1] == pytest.approx(expected[-1], rel=1e-12, abs=1e-12)


def test_an_interrupted_check_reports_what_it_checked():
    model = random_model(15, 2, 14, 1, 2, False, False, 8)
    plan = exhaustive_plan(model, pattern_rule(model, "aab"))
    calls = {"n": 0}

    def after_three():
        calls["n"] += 1
        return calls["n"] >= 3

    report = run_plan(model, plan, should_stop=after_three)
    assert report.interrupted and 0 < report.checked < plan.total
    assert report.passed + report.failed + report.ambiguous + report.out_of_domain == report.checked
