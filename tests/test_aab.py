"""The bundled aab model reproduces the published hand-wired figures.

The expected matrices are typed in from the published walkthrough of the aab
weights on ``aabaa``; nothing here is computed by handwired first.
"""

import numpy as np

from handwired.engine.batch import next_logits
from handwired.engine.generate import complete
from handwired.engine.trace import trace as run_trace
from handwired.judge.checking.plans import stream_plan
from handwired.judge.checking.report import run as run_plan
from handwired.weightfile import load

LG = 1024.0
X = [
    [1, 0, 0, 0, 0, 1, 0, 0],
    [0, 1, 0, 0, 0, 1, 0, 0],
    [0, 0, 1, 0, 0, 0, 1, 0],
    [0, 0, 0, 1, 0, 1, 0, 0],
    [0, 0, 0, 0, 1, 1, 0, 0],
]
Q = [
    [LG, 0, 0, 0, 0, 0, 0, 0],
    [LG, LG, 0, 0, 0, 0, 0, 0],
    [0, LG, LG, 0, 0, 0, 0, 0],
    [0, 0, LG, LG, 0, 0, 0, 0],
    [0, 0, 0, LG, LG, 0, 0, 0],
]
K = [[1 if i == p else 0 for i in range(8)] for p in range(5)]
V = [[0] * 7 + [v] for v in (1, 1, -1, 1, 1)]
PATTERN = [
    [1, 0, 0, 0, 0],
    [0.5, 0.5, 0, 0, 0],
    [0, 0.5, 0.5, 0, 0],
    [0, 0, 0.5, 0.5, 0],
    [0, 0, 0, 0.5, 0.5],
]
Z = [[0] * 7 + [z] for z in (1, 1, 0, 0, 1)]
ATTN_OUT = [
    [0, 0, 0, 0, 0, 0, LG, 0],
    [0, 0, 0, 0, 0, 0, LG, 0],
    [0, 0, 0, 0, 0, LG, 0, 0],
    [0, 0, 0, 0, 0, LG, 0, 0],
    [0, 0, 0, 0, 0, 0, LG, 0],
]
LOGITS = [[1, LG], [1, LG], [LG, 1], [LG + 1, 0], [1, LG]]


def test_every_intermediate_on_aabaa_matches_the_walkthrough():
    model = load("aab")
    record = run_trace(model, "aabaa").record
    np.testing.assert_array_equal(record["blocks.0.hook_resid_pre"], X)
    np.testing.assert_array_equal(record["blocks.0.attn.hook_q"][:, 0], Q)
    np.testing.assert_array_equal(record["blocks.0.attn.hook_k"][:, 0], K)
    np.testing.assert_array_equal(record["blocks.0.attn.hook_v"][:, 0], V)
    scores = record["blocks.0.attn.scores_before_mask"][0]
    np.testing.assert_allclose(scores, np.array(Q) @ np.array(K).T / np.sqrt(8))
    np.testing.assert_allclose(scores[1, 0], 362.039, atol=5e-4)
    assert np.all(np.isneginf(record["blocks.0.attn.hook_attn_scores"][0][np.triu_indices(5, 1)]))
    np.testing.assert_allclose(record["blocks.0.attn.hook_pattern"][0], PATTERN, atol=1e-12)
    np.testing.assert_allclose(record["blocks.0.attn.hook_z"][:, 0], Z, atol=1e-12)
    np.testing.assert_allclose(record["blocks.0.hook_attn_out"], ATTN_OUT, atol=1e-9)
    np.testing.assert_allclose(record["blocks.0.hook_resid_post"], np.array(X) + np.array(ATTN_OUT), atol=1e-9)
    np.testing.assert_allclose(record["logits"], LOGITS, atol=1e-9)


def test_predictions_on_aabaa_are_b_b_a_a_b_with_probability_one():
    model = load("aab")
    trace = run_trace(model, "aabaa")
    predicted = [model.vocab[i] for i in trace.probs.argmax(axis=1)]
    assert predicted == ["b", "b", "a", "a", "b"]
    np.testing.assert_allclose(trace.probs.max(axis=1), 1.0)


def test_published_test_passes_27_of_27():
    model = load("aab")
    stream = "aab" * 10
    correct = 0
    for i in range(2, len(stream) - 1):  # the published loop: prefixes of length 2..28
        window = model.encode(stream[:i])[-model.n_ctx:]
        correct += model.vocab[int(np.argmax(next_logits(model, window[None, :])[0]))] == stream[i]
    assert correct == 27
    report = run_plan(model, stream_plan(model, "aab", 29))
    assert (report.checked, report.passed, report.failed) == (27, 27, 0)


def test_completion_continues_the_pattern():
    assert complete(load("aab"), "aab", 12) == "aab" * 5
