"""The explain view as data: which steps, in which order, labelled how."""

from pathlib import Path

import numpy as np
import pytest
from reference import params_to_document, random_params, reference_forward

from handwired.engine.trace import trace as run_trace
from handwired.errors import HandwiredError
from handwired.views import steps as explain
from handwired.weightfile import load, parse


def full_model():
    rng = np.random.default_rng(8)
    params = random_params(rng, n_vocab=3, n_ctx=6, n_embd=8, n_layer=2, layer_norm=True, mlp=True)
    model, problems = parse(params_to_document(params, 2, "abc", 6))
    assert problems == []
    return model, params


def test_steps_come_in_forward_order_one_head_at_a_time():
    model, _ = full_model()
    trace = run_trace(model, "abca")
    keys = [(step.key, step.title) for step in explain.steps(model, trace, explain.expand(["all"]))]
    per_head = ["qkv", "scores", "mask", "pattern", "z"]
    block = ["ln1", *per_head, *per_head, "heads", "concat", "proj", "mlp"]
    assert [k for k, _ in keys] == ["embed", *block, *block, "logits", "probs", "prediction", "why"]
    assert keys[-9] == ("z", "Weighted sum of values · block 1, head 1 of 2")


def test_pattern_matrix_is_the_reference_pattern_with_labelled_axes():
    model, params = full_model()
    trace = run_trace(model, "abcab")
    _, patterns = reference_forward(params, [0, 1, 2, 0, 1], 2)
    steps = explain.steps(model, trace, ["pattern"], block=1, head=1)
    assert len(steps) == 1
    matrix = steps[0].matrices[0]
    np.testing.assert_allclose(matrix.values, patterns[1][1], atol=1e-12)
    assert matrix.rows == matrix.cols == ("0:a", "1:b", "2:c", "3:a", "4:b")
    assert matrix.row_axis == "query (destination) position" and matrix.col_axis == "key (source) position"
    assert matrix.future.tolist() == np.triu(np.ones((5, 5), dtype=bool), 1).tolist()


def test_embed_step_shows_token_position_and_sum_with_dims_labels():
    model = load("aab")
    step = explain.steps(model, run_trace(model, "aab"), ["embed"])[0]
    token, position, total = step.matrices
    assert token.cols == ("p0", "p1", "p2", "p3", "p4", "a", "b", "out")
    np.testing.assert_array_equal(total.values, token.values + position.values)
    assert step.formula == "x = wte[tokens] + wpe[positions]"
    assert "x [3, 8]" in step.shape


def test_expand_groups_and_rejects_unknown_steps():
    assert explain.expand(["attention"]) == ["qkv", "scores", "mask", "pattern", "z", "prediction"]
    assert explain.expand(["probs", "embed"]) == ["embed", "probs"]
    assert explain.expand([]) == list(explain.STEPS)
    with pytest.raises(HandwiredError, match="step 'qk'"):
        explain.expand(["qk"])


def test_explain_says_a_model_with_no_blocks_has_none_to_show():
    from test_cli import invoke

    record = str(Path(__file__).parent / "data" / "records" / "ab.json")  # no blocks, a final LayerNorm
    out = invoke("explain", "abab", "-w", record, "--step", "attention").stdout
    panel = out[out.index("No blocks"):out.index("Prediction at each position")]
    assert "logits = ln_f(wte[token] + wpe[position]) · wteᵀ" in panel and "shape:" not in panel
    out = " ".join(out.split())  # the panel's text wraps
    assert "This model has no blocks: no attention, projection or MLP to show." in out
    assert "Prediction at each position" in out  # the rest of the group is still there
    assert "No blocks" not in invoke("explain", "aabaa", "--step", "attention").stdout  # aab has its block
