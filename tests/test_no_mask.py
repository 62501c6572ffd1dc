"""--no-mask: the same weights as bidirectional self-attention (an encoder), on predict and explain only."""

import json

import numpy as np
from reference import params_to_document, random_params, reference_forward
from test_cli import invoke

from handwired.engine.forward import forward
from handwired.engine.trace import trace as run_trace
from handwired.views import steps as explain
from handwired.weightfile import load, parse


def random_model():
    params = random_params(np.random.default_rng(3), n_vocab=3, n_ctx=6, n_embd=8, n_layer=2)
    model, problems = parse(params_to_document(params, 2, "abc", 6))
    assert problems == []
    return model, params


def test_forward_without_mask_matches_the_reference_bidirectional_pass():
    model, params = random_model()
    tokens = [0, 2, 1, 1, 0]
    logits, patterns = reference_forward(params, tokens, 2, causal=False)
    record = {}
    ours = forward(model.params, np.array([tokens]), 2, record=record, causal=False)[0]
    np.testing.assert_allclose(ours, logits, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(record["blocks.1.attn.hook_pattern"][0], patterns[1], atol=1e-12)
    causal_logits, _ = reference_forward(params, tokens, 2)
    assert not np.allclose(logits, causal_logits)  # the mask matters on these weights
    # and the last position's logits, with last_only, agree with the full pass
    np.testing.assert_allclose(forward(model.params, np.array([tokens]), 2, last_only=True, causal=False)[0], ours[-1],
                               rtol=1e-9, atol=1e-9)


def test_pattern_has_no_zero_above_the_diagonal_where_scores_are_finite():
    model = load("aab")
    trace = run_trace(model, "aabaa", causal=False)
    scores = trace.record["blocks.0.attn.hook_attn_scores"][0]
    pattern = trace.record["blocks.0.attn.hook_pattern"][0]
    above = np.triu(np.ones(pattern.shape, dtype=bool), 1)
    assert np.isfinite(scores[above]).all()
    assert (pattern[above] > 0).all()  # e^-362, tiny but there
    masked = run_trace(model, "aabaa").record["blocks.0.attn.hook_pattern"][0]
    assert (masked[above] == 0).all()


def test_explain_mask_step_shows_nothing_masked():
    model, _ = random_model()
    trace = run_trace(model, "abcab", causal=False)
    for step in explain.steps(model, trace, ["scores", "mask", "pattern"]):
        for matrix in step.matrices:
            assert matrix.future is None
            assert np.isfinite(matrix.values).all()
    mask = explain.steps(model, trace, ["mask"], block=0, head=0)[0]
    assert "No mask" in mask.title and "nothing is masked" in mask.note


def test_cli_says_the_mask_is_off():
    out = invoke("explain", "--no-mask", "--step", "mask").stdout
    assert "Mask off: bidirectional self-attention" in out and "No mask · block 0" in out
    assert "−∞" not in out and "grey: a key after the query" not in out
    assert "Mask off" not in invoke("explain", "--step", "mask").stdout
    assert "Mask off: bidirectional self-attention" in invoke("predict", "aab", "--no-mask").stdout
    data = json.loads(invoke("predict", "aabaa", "--no-mask", "--json").stdout)
    assert data["causal"] is False
    assert json.loads(invoke("predict", "aabaa", "--json").stdout)["causal"] is True


def test_check_has_no_mask_option():
    # a next-token check of a model that sees the tokens after a position would prove nothing
    assert "--no-mask" not in invoke("check", "--help").stdout
    assert invoke("check", "--no-mask").exit_code == 2
