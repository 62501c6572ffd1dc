"""Checking: rules, plans, the batched evaluation, margins and shortest failures."""

import itertools

import numpy as np
import pytest
from reference import params_to_document, random_params, reference_forward

from handwired.engine.batch import next_logits, next_logits_distinct
from handwired.engine.cost import exhaustive_seconds as estimated_seconds
from handwired.engine.trace import trace as run_trace
from handwired.errors import HandwiredError
from handwired.judge.checking.contexts import (
    MAX_EXHAUSTIVE,
    MAX_EXHAUSTIVE_SECONDS,
    count_contexts,
    duration,
)
from handwired.judge.checking.plans import exhaustive_plan, pattern_rule, sample_plan, stream_plan
from handwired.judge.checking.report import run as run_plan
from handwired.judge.kinds.rules import AMBIGUOUS, DECIDED, OUT_OF_DOMAIN, FunctionRule, PatternRule
from handwired.weightfile import load, parse


def next_tokens_in_stream(pattern, context):
    """Brute force: every token that follows ``context`` somewhere in a long repetition of ``pattern``."""
    stream = pattern * (len(context) // len(pattern) + 3)
    return {stream[i + len(context)] for i in range(len(pattern)) if stream[i : i + len(context)] == context}


def all_contexts(vocab, lengths):
    for length in lengths:
        for letters in itertools.product(vocab, repeat=length):
            yield "".join(letters)


@pytest.mark.parametrize("pattern,vocab", [("aab", "ab"), ("abcab", "abc"), ("aaab", "ab"), ("ab", "abc")])
def test_pattern_rule_matches_brute_force(pattern, vocab):
    index = {t: i for i, t in enumerate(vocab)}
    rule = PatternRule(np.array([index[t] for t in pattern]), len(vocab), pattern)
    for length in range(1, 6):
        contexts = list(all_contexts(vocab, [length]))
        judgement = rule.judge(np.array([[index[t] for t in c] for c in contexts]))
        for row, context in enumerate(contexts):
            expected = next_tokens_in_stream(pattern, context)
            status = DECIDED if len(expected) == 1 else AMBIGUOUS if expected else OUT_OF_DOMAIN
            assert judgement.status[row] == status, context
            assert {vocab[i] for i in np.flatnonzero(judgement.acceptable[row])} == expected, context


def broken_aab():
    """aab with the bias on 'a' lowered: after 'ab' and 'ba' (z = 0) a and b now tie."""
    model = load("aab")
    model.params["blocks"][0]["attn"]["c_proj"]["b"][5] = 0.0
    return model


def brute_force_judge(model, pattern, context):
    """(verdict, margin) for one context, using the independent reference forward pass."""
    expected = next_tokens_in_stream(pattern, context)
    if len(expected) != 1:
        return None, None
    logits = reference_forward(model.params, [model.vocab.index(t) for t in context], model.n_head)[0][-1]
    right = model.vocab.index(next(iter(expected)))
    margin = logits[right] - max(v for i, v in enumerate(logits) if i != right)
    return margin > 0, margin


@pytest.mark.parametrize("model_factory", [lambda: load("aab"), broken_aab])
def test_exhaustive_check_agrees_with_brute_force(model_factory):
    model = model_factory()
    report = run_plan(model, exhaustive_plan(model, pattern_rule(model, "aab")), show=100)
    verdicts = {c: brute_force_judge(model, "aab", c) for c in all_contexts("ab", range(1, 6))}
    decided = {c: v for c, v in verdicts.items() if v[0] is not None}
    assert report.total == report.checked == 62
    assert report.passed == sum(v[0] for v in decided.values())
    assert report.failed == sum(not v[0] for v in decided.values())
    assert report.ambiguous + report.out_of_domain == 62 - len(decided)
    failing = [c for c in all_contexts("ab", range(1, 6)) if c in decided and not decided[c][0]]
    assert [f.context for f in report.failures] == failing  # shortest first, ties in vocab order
    passing = {c: v[1] for c, v in decided.items() if v[0]}
    assert report.margin.value == pytest.approx(min(passing.values()))
    assert report.margin.context == min(passing, key=lambda c: (passing[c], len(c), c))


def test_broken_model_reports_its_shortest_failure():
    model = broken_aab()
    report = run_plan(model, exhaustive_plan(model, pattern_rule(model, "aab")))
    assert not report.ok
    shortest = report.shortest_failure
    # 'b' alone still passes (z = -1 favours a); after 'ab' z = 0 and only the token embedding of b is left.
    assert (shortest.context, shortest.acceptable, shortest.predicted, shortest.tied) == ("ab", ("a",), "b", False)
    np.testing.assert_allclose(shortest.probs, [1 / (1 + np.e), np.e / (1 + np.e)])


def test_stream_check_agrees_with_a_per_context_loop():
    rng = np.random.default_rng(2)
    model, problems = parse(params_to_document(random_params(rng, n_vocab=3, n_ctx=4, n_layer=2), 2, "abc", 4))
    assert problems == []
    stream = ("abcab" * 20)[:60]
    failing = set()
    passed = 0
    for i in range(2, 60):
        window = stream[:i][-4:]
        logits = reference_forward(model.params, [model.vocab.index(t) for t in window], 2)[0][-1]
        right = model.vocab.index(stream[i])
        if logits[right] > max(v for j, v in enumerate(logits) if j != right):
            passed += 1
        else:
            failing.add(window)
    report = run_plan(model, stream_plan(model, "abcab", 60), show=100)
    assert report.checked == 58
    assert report.passed == passed and report.failed == 58 - passed
    assert {f.context for f in report.failures} == failing


def test_counts_and_limits():
    model = load("aab")
    assert count_contexts(model) == 62
    assert count_contexts(model, min_length=2) == 60
    with pytest.raises(HandwiredError, match=r"62 contexts, about 1 second of checking for this model, "
                                             r"more than the 50 handwired will enumerate.*e.g. sample 1000000 seed 0"):
        exhaustive_plan(model, pattern_rule(model, "aab"), limit=50)
    with pytest.raises(HandwiredError, match="min_length 6: longer than the model's context"):
        exhaustive_plan(model, pattern_rule(model, "aab"), min_length=6)
    with pytest.raises(HandwiredError, match="not in the vocabulary"):
        pattern_rule(model, "abc")


def test_sample_plan_is_reproducible_and_covers_its_lengths():
    model = load("aab")
    rule = pattern_rule(model, "aab")
    plan = sample_plan(model, rule, 5000, seed=3, min_length=2)
    contexts = [b.contexts for b in plan.batches()]
    again = [b.contexts for b in sample_plan(model, rule, 5000, seed=3, min_length=2).batches()]
    assert all(np.array_equal(a, b) for a, b in zip(contexts, again))
    assert sum(len(c) for c in contexts) == 5000
    lengths = {c.shape[1] for c in contexts}
    assert lengths == {2, 3, 4, 5}
    report = run_plan(model, plan)
    assert report.checked == 5000 and report.failed == 0


def test_function_rule_plugs_in():
    model = load("aab")

    def after(context):  # the aab rule by hand: the last two tokens decide
        if len(context) < 2:
            return []
        return {"aa": "b", "ab": "a", "ba": "a"}.get(context[-2:], "")

    report = run_plan(model, exhaustive_plan(model, FunctionRule(after, model.vocab, "last two tokens")))
    assert report.rule == "last two tokens"
    assert report.failed == 0
    assert report.passed == sum(3 * 2**length // 4 for length in range(2, 6))  # length ≥ 2, not ending in bb
    assert report.passed + report.out_of_domain == 62


def test_should_stop_interrupts_between_batches():
    model = load("aab")
    plan = stream_plan(model, "aab", 500_000)
    report = run_plan(model, plan, should_stop=lambda: True)
    assert report.interrupted and 0 < report.checked < plan.total
    assert report.passed + report.failed == report.checked
    assert not report.ok


def test_distinct_evaluation_gives_every_row_its_own_logits():
    rng = np.random.default_rng(4)
    model, _ = parse(params_to_document(random_params(rng, n_vocab=3, n_ctx=5), 2, "abc", 5))
    contexts = rng.integers(0, 3, (3000, 5))
    np.testing.assert_allclose(next_logits_distinct(model, contexts), next_logits(model, contexts),
                               rtol=1e-13, atol=1e-13)
    single = [run_trace(model, model.decode(c)).logits[-1] for c in contexts[:20]]
    np.testing.assert_allclose(next_logits(model, contexts[:20]), single, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("length,min_length", [(2, 1), (4, 2), (6, 5), (6, 2), (12, 7), (40, 3)])
def test_stream_plan_yields_every_prefix_once_with_its_next_token(length, min_length):
    model = load("aab")
    stream = ("aab" * 20)[:length]
    expected = [(stream[:i][-model.n_ctx:], stream[i]) for i in range(min_length, length)]
    plan = stream_plan(model, "aab", length, min_length)
    got = []
    for batch in plan.batches():
        for context, acceptable in zip(batch.contexts, batch.judgement.acceptable):
            got.append((model.decode(context), model.vocab[int(np.flatnonzero(acceptable)[0])]))
    assert got == expected
    assert plan.total == len(expected)
    with pytest.raises(HandwiredError, match="min_length 5: longer than the stream's last prefix"):
        stream_plan(load("aab"), "aab", 5, 5)


def test_the_refusal_estimates_the_time_from_the_model_and_the_count():
    small = parse(params_to_document(random_params(np.random.default_rng(0), n_layer=1, mlp=False,
                                                   layer_norm=False), 2, "abc", 6))[0]
    deep = parse(params_to_document(random_params(np.random.default_rng(0), n_layer=3), 2, "abc", 6))[0]
    fixed = estimated_seconds(small, 0)
    assert estimated_seconds(small, 2_000_000) - fixed == pytest.approx(
        2 * (estimated_seconds(small, 1_000_000) - fixed))  # a start, then so much per context
    assert estimated_seconds(deep, 1_000_000) - fixed > 1.5 * (estimated_seconds(small, 1_000_000) - fixed)
    expected = duration(estimated_seconds(deep, count_contexts(deep)))
    with pytest.raises(HandwiredError, match=rf"1,092 contexts, about {expected} of checking for this model, "
                                             r"more than the 1,000 handwired will enumerate"):
        exhaustive_plan(deep, pattern_rule(deep, "abc"), limit=1000)
    assert [duration(s) for s in (0.2, 1, 45, 100, 5400)] == [
        "1 second", "1 second", "45 seconds", "2 minutes", "2 hours"]


def test_the_limit_is_the_estimated_time_not_the_count():
    def attention_only(n_ctx):  # one block, n_embd 4: about the cheapest model to check
        params = random_params(np.random.default_rng(0), 4, n_ctx, 4, 1, layer_norm=False, mlp=False)
        return parse(params_to_document(params, 1, "abcd", n_ctx))[0]

    # 22,369,620 contexts, more than the count handwired once refused, but checked in well under half a minute
    cheap = attention_only(12)
    total = count_contexts(cheap)
    seconds = estimated_seconds(cheap, total)
    assert total == 22_369_620 and seconds <= MAX_EXHAUSTIVE_SECONDS
    # built, not run (the float check's estimate; a certified one counts the proof's cost too, see test_certify)
    assert exhaustive_plan(cheap, pattern_rule(cheap, "abcd"), proof=False).total == total
    with pytest.raises(HandwiredError, match=rf"= 22,369,620 contexts, about {duration(seconds)} of checking "
                                             r"for this model, more than the 2 seconds handwired will spend on one; "
                                             r"check a random sample instead, e.g. sample 1000000 seed 0"):
        exhaustive_plan(cheap, pattern_rule(cheap, "abcd"), max_seconds=2, proof=False)
    # A deeper model with as many contexts takes longer than the limit: refused by the time, not by the count
    deep = parse(params_to_document(random_params(np.random.default_rng(0), 4, 12, 8, 3), 2, "abcd", 12))[0]
    assert count_contexts(deep) == total < MAX_EXHAUSTIVE
    assert estimated_seconds(deep, total) > MAX_EXHAUSTIVE_SECONDS
    with pytest.raises(HandwiredError, match=r"more than the 30 seconds handwired will spend on one"):
        exhaustive_plan(deep, pattern_rule(deep, "abcd"))
    huge = attention_only(14)
    with pytest.raises(HandwiredError, match=r"= 357,913,940 contexts, .* more than the 100,000,000 handwired will"):
        exhaustive_plan(huge, pattern_rule(huge, "abcd"), max_seconds=float("inf"))
