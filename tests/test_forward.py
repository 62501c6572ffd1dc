"""The forward pass against an independent computation, on random weights."""

import numpy as np
import pytest
from reference import params_to_document, random_params, reference_forward

from handwired.engine.forward import causal_mask, forward, qkv_table, softmax
from handwired.weightfile import parse

CASES = [
    # (n_head, layer_norm, mlp, n_layer)
    (1, False, False, 1),
    (2, False, False, 1),
    (4, True, False, 2),
    (2, False, True, 2),
    (4, True, True, 2),
    (8, True, True, 3),
]


@pytest.mark.parametrize("n_head,layer_norm,mlp,n_layer", CASES)
def test_forward_matches_independent_reference(n_head, layer_norm, mlp, n_layer):
    rng = np.random.default_rng(n_head * 100 + layer_norm * 10 + mlp + n_layer)
    params = random_params(rng, n_layer=n_layer, layer_norm=layer_norm, mlp=mlp)
    for n_seq in (1, 3, 6):
        tokens = rng.integers(0, 3, n_seq)
        record = {}
        logits = forward(params, tokens[None, :], n_head, record=record)[0]
        expected_logits, expected_patterns = reference_forward(params, tokens.tolist(), n_head)
        np.testing.assert_allclose(logits, expected_logits, rtol=1e-10, atol=1e-10)
        for b in range(n_layer):
            np.testing.assert_allclose(record[f"blocks.{b}.attn.hook_pattern"][0], expected_patterns[b], atol=1e-12)


@pytest.mark.parametrize("n_head,layer_norm,mlp,n_layer", CASES)
def test_batched_and_last_only_agree_with_one_context_at_a_time(n_head, layer_norm, mlp, n_layer):
    rng = np.random.default_rng(7)
    params = random_params(rng, n_layer=n_layer, layer_norm=layer_norm, mlp=mlp)
    contexts = rng.integers(0, 3, (50, 5))
    batched = forward(params, contexts, n_head)
    last = forward(params, contexts, n_head, last_only=True)
    for i, context in enumerate(contexts):
        single = forward(params, context[None, :], n_head)[0]
        np.testing.assert_allclose(batched[i], single, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(last[i], single[-1], rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(last.argmax(axis=1), batched[:, -1].argmax(axis=1))


@pytest.mark.parametrize("n_head,layer_norm,mlp,n_layer", CASES)
def test_block0_lookup_table_gives_the_same_logits(n_head, layer_norm, mlp, n_layer):
    rng = np.random.default_rng(9)
    params = random_params(rng, n_layer=n_layer, layer_norm=layer_norm, mlp=mlp)
    contexts = rng.integers(0, 3, (40, 6))
    table = qkv_table(params)
    for last_only in (False, True):
        np.testing.assert_allclose(
            forward(params, contexts, n_head, last_only=last_only, table=table),
            forward(params, contexts, n_head, last_only=last_only),
            rtol=1e-13, atol=1e-13,
        )


def test_hooks_have_transformerlens_names_and_shapes():
    rng = np.random.default_rng(1)
    params = random_params(rng, n_layer=2, n_embd=8, layer_norm=True, mlp=True, n_hidden=12)
    record = {}
    forward(params, rng.integers(0, 3, (2, 5)), 4, record=record)
    expected = {
        "hook_embed": (2, 5, 8),
        "hook_pos_embed": (2, 5, 8),
        "blocks.0.hook_resid_pre": (2, 5, 8),
        "blocks.0.ln1.hook_normalized": (2, 5, 8),
        "blocks.0.ln1.hook_out": (2, 5, 8),
        "blocks.0.attn.hook_q": (2, 5, 4, 2),
        "blocks.0.attn.hook_k": (2, 5, 4, 2),
        "blocks.0.attn.hook_v": (2, 5, 4, 2),
        "blocks.0.attn.hook_attn_scores": (2, 4, 5, 5),
        "blocks.0.attn.hook_pattern": (2, 4, 5, 5),
        "blocks.0.attn.hook_z": (2, 5, 4, 2),
        "blocks.0.hook_attn_out": (2, 5, 8),
        "blocks.0.hook_resid_mid": (2, 5, 8),
        "blocks.0.ln2.hook_normalized": (2, 5, 8),
        "blocks.0.ln2.hook_out": (2, 5, 8),
        "blocks.0.mlp.hook_pre": (2, 5, 12),
        "blocks.0.mlp.hook_post": (2, 5, 12),
        "blocks.0.hook_mlp_out": (2, 5, 8),
        "blocks.1.hook_resid_post": (2, 5, 8),
        "ln_final.hook_normalized": (2, 5, 8),
        "ln_final.hook_out": (2, 5, 8),
        "logits": (2, 5, 3),
        "probs": (2, 5, 3),
    }
    for name, shape in expected.items():
        assert record[name].shape == shape, name
    # the residual stream is the sum of what was written into it
    np.testing.assert_allclose(
        record["blocks.0.hook_resid_post"],
        record["blocks.0.hook_resid_pre"] + record["blocks.0.hook_attn_out"] + record["blocks.0.hook_mlp_out"],
    )


def test_masked_weights_are_exactly_zero_and_rows_sum_to_one():
    rng = np.random.default_rng(3)
    params = random_params(rng, n_layer=1)
    # Scale the query weights so the scores are huge: a naive softmax would overflow.
    params["blocks"][0]["attn"]["c_attn"]["w"][:, :8] *= 1e6
    record = {}
    forward(params, rng.integers(0, 3, (1, 6)), 2, record=record)
    pattern = record["blocks.0.attn.hook_pattern"][0]
    assert np.all(np.isfinite(pattern))
    future = np.triu(np.ones((6, 6), dtype=bool), k=1)
    assert np.all(pattern[:, future] == 0.0)
    np.testing.assert_allclose(pattern.sum(axis=-1), 1.0)
    assert np.all(np.isneginf(record["blocks.0.attn.hook_attn_scores"][0][:, future]))


def test_softmax_is_stable_and_causal_mask_aligns_queries_to_the_end():
    probs = softmax(np.array([[1000.0, 1001.0, -np.inf]]))
    np.testing.assert_allclose(probs, [[1 / (1 + np.e), np.e / (1 + np.e), 0.0]])
    assert probs[0, 2] == 0.0
    mask = causal_mask(2, 4)  # the last two of four positions
    assert mask.tolist() == [[0, 0, 0, -np.inf], [0, 0, 0, 0]]


def test_model_without_blocks_is_embedding_times_unembedding():
    rng = np.random.default_rng(5)
    params = {"wte": rng.normal(size=(3, 4)), "wpe": rng.normal(size=(4, 4)), "blocks": []}
    tokens = np.array([[2, 0, 1]])
    expected = (params["wte"][[2, 0, 1]] + params["wpe"][:3]) @ params["wte"].T
    np.testing.assert_allclose(forward(params, tokens, 1)[0], expected)
    np.testing.assert_allclose(forward(params, tokens, 1, last_only=True)[0], expected[-1])


def test_loaded_document_runs_like_the_raw_parameters():
    rng = np.random.default_rng(11)
    params = random_params(rng, n_layer=2)
    model, problems = parse(params_to_document(params, 2, "xyz", 6))
    assert problems == []
    tokens = np.array([[0, 2, 1, 1]])
    np.testing.assert_array_equal(forward(model.params, tokens, 2), forward(params, tokens, 2))


def test_a_layernorm_records_transformerlens_two_hooks():
    """hook_normalized is (x − mean) / √(var + eps), before the gain and bias (TransformerLens's meaning);
    hook_out is after them, what the next layer reads."""
    rng = np.random.default_rng(5)
    params = random_params(rng, n_layer=1, n_embd=8, layer_norm=True, mlp=True, n_hidden=6)
    record = {}
    forward(params, rng.integers(0, 3, (2, 4)), 2, record=record)
    x = record["blocks.0.hook_resid_pre"]
    by_hand = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(record["blocks.0.ln1.hook_normalized"], by_hand, rtol=1e-12, atol=1e-12)
    ln_1 = params["blocks"][0]["ln_1"]
    np.testing.assert_allclose(record["blocks.0.ln1.hook_out"], by_hand * ln_1["g"] + ln_1["b"], rtol=1e-12,
                               atol=1e-12)
    assert not np.allclose(record["blocks.0.ln1.hook_out"], record["blocks.0.ln1.hook_normalized"])


def test_a_hook_that_returns_a_value_replaces_it_downstream():
    """A hook handing back an array changes what the rest of the pass computes; returning None changes nothing."""
    rng = np.random.default_rng(6)
    params = random_params(rng, n_layer=2, n_embd=8, layer_norm=True, mlp=True, n_hidden=6)
    tokens = rng.integers(0, 3, (2, 5))
    plain = forward(params, tokens, 2)
    assert np.array_equal(forward(params, tokens, 2, hook=lambda name, value: None), plain)

    def zero_mlp(name, value):
        return np.zeros_like(value) if name == "blocks.1.hook_mlp_out" else None

    record = {}
    forward(params, tokens, 2, record=record)
    resid = record["blocks.1.hook_resid_mid"]  # without the last MLP's output, the final LayerNorm and wte
    ln_f = params["ln_f"]
    centred = resid - resid.mean(axis=-1, keepdims=True)
    expected = (ln_f["g"] * centred / np.sqrt(resid.var(axis=-1, keepdims=True) + 1e-5) + ln_f["b"]) @ params["wte"].T
    np.testing.assert_allclose(forward(params, tokens, 2, hook=zero_mlp), expected, rtol=1e-12, atol=1e-12)
