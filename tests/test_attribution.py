"""Why this token: direct logit attribution adds up to the logits, and each share is what it claims to be."""

import copy
import json

import numpy as np
import pytest
from reference import params_to_document, random_params, reference_forward
from test_cli import invoke, user_error

from handwired.engine.attribution import attribute, movers
from handwired.engine.trace import trace as run_trace
from handwired.errors import HandwiredError
from handwired.views import steps as explain
from handwired.views.matrices import step_panel
from handwired.weightfile import load, parse


def model_of(params, n_head=2, vocab="abc", n_ctx=6):
    model, problems = parse(params_to_document(params, n_head, vocab, n_ctx))
    assert problems == []
    return model


@pytest.mark.parametrize("layer_norm, mlp", [(True, True), (False, True), (True, False)])
def test_shares_add_up_to_the_logits_of_the_forward_pass_and_of_the_reference(layer_norm, mlp):
    params = random_params(np.random.default_rng(11), n_vocab=3, n_ctx=6, n_embd=8, n_layer=2,
                           layer_norm=layer_norm, mlp=mlp)
    model = model_of(params)
    tokens = [2, 0, 1, 1, 0]
    trace = run_trace(model, "cabba")
    reference_logits, _ = reference_forward(params, tokens, 2)
    for position in range(len(tokens)):
        split = attribute(model, trace, position)
        np.testing.assert_allclose(split.total, trace.logits[position], rtol=0, atol=1e-9)
        np.testing.assert_allclose(split.total, reference_logits[position], rtol=0, atol=1e-9)
        assert split.parts[:2] == ("token embedding wte", "position embedding wpe")
        assert "block 1 head 1" in split.parts and "block 1 mlp" in split.parts if mlp else True
        assert (split.scale is not None) == layer_norm
        assert (split.parts[-1] == "final LayerNorm bias ln_f.b") == layer_norm


def test_last_block_head_share_equals_the_change_when_it_is_removed():
    # Without ln_f, the last block's heads reach the logits through c_proj and wte only: zeroing a head's
    # rows of c_proj.w changes the logits by exactly its share (an independent check by ablation).
    params = random_params(np.random.default_rng(5), n_vocab=3, n_ctx=6, n_embd=8, n_layer=2, layer_norm=False,
                           mlp=False)
    tokens, text, d_head = [0, 1, 2, 2, 1], "abccb", 4
    base, _ = reference_forward(params, tokens, 2)
    split = attribute(model_of(params), run_trace(model_of(params), text))
    for head in range(2):
        ablated = copy.deepcopy(params)
        ablated["blocks"][1]["attn"]["c_proj"]["w"][head * d_head:(head + 1) * d_head] = 0
        without, _ = reference_forward(ablated, tokens, 2)
        np.testing.assert_allclose(split.contributions[split.parts.index(f"block 1 head {head}")],
                                   base[-1] - without[-1], atol=1e-9)
    ablated = copy.deepcopy(params)
    ablated["blocks"][1]["attn"]["c_proj"]["b"][:] = 0
    without, _ = reference_forward(ablated, tokens, 2)
    np.testing.assert_allclose(split.contributions[split.parts.index("block 1 attn bias c_proj.b")],
                               base[-1] - without[-1], atol=1e-9)
    # the embeddings' shares, straight from the parameters
    wte, wpe = params["wte"], params["wpe"]
    np.testing.assert_allclose(split.contributions[0], wte @ wte[1], atol=1e-12)
    np.testing.assert_allclose(split.contributions[1], wte @ wpe[4], atol=1e-12)


def test_aab_head_moves_the_prediction_from_a_to_b():
    model = load("aab")
    split = attribute(model, run_trace(model, "aabaa"))
    assert split.position == 4
    rows = dict(zip(split.parts, split.contributions.tolist()))
    # by hand: wte[a]·wte = (1, 0); the head writes z7 = 1 through c_proj row z7 = (-Lg, Lg); the bias adds Lg to a
    assert rows == {"token embedding wte": [1, 0], "position embedding wpe": [0, 0], "block 0 head 0": [-1024, 1024],
                    "block 0 attn bias c_proj.b": [1024, 0]}
    assert movers(split) == [("block 0 head 0", (0,), (1,))]
    # unwrap the panel
    out = " ".join(line.strip("│ ") for line in invoke("explain", "--step", "why").stdout.splitlines())
    assert "Without block 0 head 0 the top token would be a: it moves the prediction from a to b." in out
    assert "total = logit" in out and "[why]" in out


def test_why_at_another_position_and_with_layer_norm_says_the_scale():
    model = load("aab")
    step = explain.steps(model, run_trace(model, "aabaa"), ["why"], position=2)[0]
    assert "position 2" in step.title
    assert step.matrices[0].values[-1].tolist() == [1024, 1]  # 2:b predicts a
    params = random_params(np.random.default_rng(2), n_vocab=3, n_ctx=6, n_embd=8, n_layer=1)
    model = model_of(params)
    step = explain.steps(model, run_trace(model, "abc"), ["why"])[0]
    assert "σ = √(var(x) + 1e-5)" in step.note and "ln_f.b" in step.formula
    with pytest.raises(HandwiredError, match="position 3: the context has positions 0…2"):
        explain.steps(model, run_trace(model, "abc"), ["why"], position=3)
    assert "--position 5: the context has positions 0…4" in user_error("explain", "--step", "why", "--position", "5")


# ---------------------------------------------------------------- the two-head model


def test_aaab_passes_every_phase_exhaustively_with_a_margin_of_at_least_one():
    result = invoke("check", "--exhaustive", "-w", "multihead", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["failed"] == 0 and data["passed"] > 0 and data["margin"]["logits"] >= 1
    assert invoke("check", "-w", "multihead").exit_code == 0  # the stream from the start, too


def test_aaab_heads_do_different_jobs():
    model = load("multihead")
    assert model.n_head == 2
    pattern = run_trace(model, "aaabaaab").record["blocks.0.attn.hook_pattern"]  # [head, query, key]
    for t in range(2, 8):
        np.testing.assert_allclose(pattern[0, t, [t - 1, t]], [0.5, 0.5], atol=1e-12)  # current and previous
        np.testing.assert_allclose(pattern[1, t, t - 2], 1, atol=1e-12)  # two back
    np.testing.assert_allclose(pattern[1, 1, 0], 1, atol=1e-12)  # no position two back yet: position 0


def test_explain_tells_the_multi_head_story_only_for_several_heads():
    out = invoke("explain", "-w", "multihead").stdout
    for text in ("[heads] Every head's pattern", "head 0  blocks.0.attn.hook_pattern",
                 "head 1  blocks.0.attn.hook_pattern",
                 "[concat]", "concat(z_0 … z_H)", "W_O = c_proj.w", "head 1's share", "[why]"):
        assert text in out, text
    single = invoke("explain").stdout
    assert "[heads]" not in single and "[concat]" not in single and "[why]" in single
    assert "[heads]" in invoke("explain", "--step", "heads").stdout  # asked for by name


def test_concat_shares_add_up_to_attn_out():
    model = load("multihead")
    trace = run_trace(model, "aaabaaa")
    step = explain.steps(model, trace, ["concat"])[0]
    shares = [m.values for m in step.matrices if m.title.startswith("head ")]
    bias = model.params["blocks"][0]["attn"]["c_proj"]["b"]
    np.testing.assert_allclose(sum(shares) + bias, trace.record["blocks.0.hook_attn_out"], atol=1e-9)


def test_heads_are_drawn_side_by_side_when_the_terminal_is_wide_enough():
    from rich.console import Console


    model = load("multihead")
    step = explain.steps(model, run_trace(model, "aaab"), ["heads"])[0]

    def drawn(width):
        console = Console(width=width, record=True, color_system=None)
        console.print(step_panel(step))
        return console.export_text()

    def together(text):
        return any("head 0  blocks.0" in line and "head 1  blocks.0" in line for line in text.splitlines())

    wide, narrow = drawn(120), drawn(80)
    assert together(wide) and not together(narrow)
    for text in (wide, narrow):  # whole tables either way: no cell cut short
        assert "┃ query ╲ key ┃   0:a ┃   1:a ┃   2:a ┃   3:b ┃" in text
        assert "│ 3:b         │  ≈0 │   1 │  ≈0 │   0 │" in text  # head 1: an exact 1 prints as 1


def test_a_tie_is_named_as_a_tie_never_as_its_first_token(tmp_path):
    # by hand: context 'a' at position 0; wte[a]·wte = (1, 0, 0, 0) and wpe[0]·wte = (0, 1, 1, 1), so the logits
    # tie four ways; without wte b, c and d tie; without wpe a alone leads
    doc = {"format": "handwired/1", "vocab": ["a", "b", "c", "d"], "n_ctx": 2, "n_embd": 4, "dims": list("abcd"),
           "wte": {t: {t: 1} for t in "abcd"}, "wpe": {"0": {"b": 1, "c": 1, "d": 1}}, "blocks": []}
    path = tmp_path / "tie.json"
    path.write_text(json.dumps(doc))
    model = load(str(path))
    split = attribute(model, run_trace(model, "a"))
    assert movers(split) == [("token embedding wte", (1, 2, 3), (0, 1, 2, 3)),
                             ("position embedding wpe", (0,), (0, 1, 2, 3))]
    shown = invoke("explain", "a", "-w", str(path), "--step", "why").stdout
    out = " ".join(line.strip("│ ") for line in shown.splitlines())
    assert ("Without token embedding wte the top tokens would be a tie of b, c and d: it moves the prediction from a "
            "tie of b, c and d to a tie of a, b, c and d.") in out
    assert ("Without position embedding wpe the top token would be a: it moves the prediction from a to a tie of a, "
            "b, c and d.") in out
    assert "predicts a (tie)" in out
