"""The model's weights under TransformerLens's names, and the cache's per-head stacks, against independent
computations: the fused GPT-2 layout split by hand, and the stream put back together from its parts."""

import numpy as np
import pytest
from reference import params_to_document, random_params

import handwired
from handwired import HandwiredError


@pytest.fixture(scope="module")
def wide():
    """Two blocks, two heads, LayerNorm and MLPs."""
    params = random_params(np.random.default_rng(31), n_vocab=3, n_ctx=5, n_embd=8, n_layer=2, n_hidden=6)
    return handwired.load(params_to_document(params, 2, "xyz", 5)), params


def test_the_weights_have_transformer_lens_shapes_and_entries(wide):
    model, params = wide
    n_embd, d_head = 8, 4
    assert model.W_Q.shape == model.W_K.shape == model.W_V.shape == (2, 2, 8, 4)
    assert model.W_O.shape == (2, 2, 4, 8) and model.b_O.shape == (2, 8) and model.b_Q.shape == (2, 2, 4)
    assert model.W_in.shape == (2, 8, 6) and model.W_out.shape == (2, 6, 8) and model.b_in.shape == (2, 6)
    for layer in range(2):
        attn = params["blocks"][layer]["attn"]
        w, b = np.asarray(attn["c_attn"]["w"]), attn["c_attn"]["b"]
        for head in range(2):
            for j, name in enumerate("QKV"):
                for row in range(n_embd):
                    for col in range(d_head):  # entry by entry, from GPT-2's fused columns q | k | v
                        found = getattr(model, f"W_{name}")[layer, head, row, col]
                        assert found == w[row][j * n_embd + head * d_head + col]
                assert list(getattr(model, f"b_{name}")[layer, head]) == list(
                    b[j * n_embd + head * d_head:j * n_embd + (head + 1) * d_head])
            proj = np.asarray(params["blocks"][layer]["attn"]["c_proj"]["w"])
            assert np.array_equal(model.W_O[layer, head], proj[head * d_head:(head + 1) * d_head])
    assert np.array_equal(model.W_E, params["wte"]) and np.array_equal(model.W_U, np.asarray(params["wte"]).T)
    assert np.array_equal(model.W_pos, params["wpe"]) and not model.b_U.any()


def test_ov_and_qk_are_the_products_of_their_factors(wide):
    model, _ = wide
    for layer in range(2):
        for head in range(2):
            ov = model.W_V[layer, head] @ model.W_O[layer, head]
            qk = model.W_Q[layer, head] @ model.W_K[layer, head].T
            assert np.allclose(model.W_OV[layer, head], ov, rtol=0, atol=1e-12)
            assert np.allclose(model.QK[layer, head].AB, qk, rtol=0, atol=1e-12)
            assert np.allclose(model.OV[layer][head].AB, ov, rtol=0, atol=1e-12)
    assert model.OV.shape == (2, 2, 8, 8) and model.QK.T.shape == (2, 2, 8, 8)
    with pytest.raises(HandwiredError, match="index"):
        model.OV[2]


def test_the_weights_are_read_from_the_model_and_cannot_be_written_through(wide):
    model, _ = wide
    w_q = model.W_Q
    with pytest.raises(ValueError, match="read-only"):
        w_q[0, 0, 0, 0] = 5.0
    attention_only = handwired.load("aab")
    with pytest.raises(HandwiredError, match="has no MLP"):
        _ = attention_only.W_in


def test_the_head_results_and_full_decomposition_add_up_to_the_stream(wide):
    model, _ = wide
    tokens = np.array([[0, 1, 2, 1, 0], [2, 2, 1, 0, 1]])
    _, cache = model.run_with_cache(tokens, use_attn_result=True)
    for layer in range(2):
        heads = cache["result", layer]  # [batch, pos, head, n_embd]
        assert heads.shape == (2, 5, 2, 8)
        expected = cache["attn_out", layer] - model.b_O[layer]
        assert np.allclose(heads.sum(axis=2), expected, rtol=0, atol=1e-12)
    stack, labels = cache.stack_head_results(1, return_labels=True, incl_remainder=True)
    assert labels == ["L0H0", "L0H1", "remainder"]
    assert np.allclose(stack.sum(axis=0), cache["resid_pre", 1], rtol=0, atol=1e-12)
    for layer in range(3):
        for mlp_input in ([False, True] if layer < 2 else [False]):
            for expand in (True, False):
                parts, labels = cache.get_full_resid_decomposition(layer, mlp_input, expand, return_labels=True)
                stream = (cache["resid_mid" if mlp_input else "resid_pre", layer] if layer < 2
                          else cache["resid_post", 1])
                assert len(labels) == len(parts) and labels[-3:] == ["embed", "pos_embed", "bias"]
                assert np.allclose(parts.sum(axis=0), stream, rtol=0, atol=1e-12), (layer, mlp_input, expand)
    neurons, labels = cache.stack_neuron_results(return_labels=True)
    assert labels[:2] == ["L0N0", "L0N1"] and len(labels) == 12 and neurons.shape == (12, 2, 5, 8)


def test_logit_attrs_add_up_to_the_logit_difference_the_final_layernorm_scale_gives(wide):
    model, _ = wide
    tokens = np.array([[0, 1, 2, 1, 0]])
    logits, cache = model.run_with_cache(tokens)
    stack = cache.get_full_resid_decomposition()
    attrs = cache.logit_attrs(stack, "x", incorrect_tokens="y")  # [component, batch, pos]
    x = cache["resid_post", 1]  # ln_f's scale, without its gain or bias, as TransformerLens (which folds them)
    scaled = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    expected = scaled @ (model.W_U[:, 0] - model.W_U[:, 1])
    assert attrs.shape == (len(stack), 1, 5)
    assert np.allclose(attrs.sum(axis=0), expected, rtol=0, atol=1e-9)
    per_context = cache.logit_attrs(stack, [2])  # a token per context, over every position
    assert np.allclose(per_context, cache.logit_attrs(stack, "z"), rtol=0, atol=0)


def test_to_str_tokens_is_each_token_as_its_text(wide):
    model, _ = wide
    assert model.to_str_tokens("xyz") == ["x", "y", "z"] and model.to_str_tokens([2, 0]) == ["z", "x"]
    assert model.to_str_tokens(["xy", "zz"]) == [["x", "y"], ["z", "z"]]
    with pytest.raises(HandwiredError, match="2 contexts"):
        model.to_str_tokens(np.array([[0], [1]]))
    with pytest.raises(HandwiredError, match="a batch of its own"):
        model(["xy", "xyz"])
