"""explain --json: every intermediate of one context under its hook name, with labels, checked by the reference."""

import json
from pathlib import Path

import numpy as np
import pytest
from reference import reference_forward
from test_cli import invoke, user_error

from handwired.weightfile import load

XOR = str(Path(__file__).resolve().parent.parent / "puzzles" / "solutions" / "xor.json")


def test_every_intermediate_with_labels_and_the_reference_numbers():
    result = invoke("explain", "abab", "-w", "multihead", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    model = load("multihead")
    found = data["intermediates"]
    assert list(found)[:3] == ["hook_embed", "hook_pos_embed", "blocks.0.hook_resid_pre"]
    assert {"blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z", "logits", "probs"} <= set(found)
    logits, patterns = reference_forward(model.params, [0, 1, 0, 1], 2)
    assert np.allclose(found["logits"]["values"], logits)
    pattern = found["blocks.0.attn.hook_pattern"]
    assert pattern["shape"] == [2, 4, 4]
    assert [axis["name"] for axis in pattern["axes"]] == ["head", "query position", "key position"]
    assert pattern["axes"][1]["labels"] == ["0:a", "1:b", "2:a", "3:b"]
    assert np.allclose(pattern["values"], patterns[0])
    scores = found["blocks.0.attn.hook_attn_scores"]["values"]
    assert scores[0][0][1:] == [None, None, None]  # −∞ where the key comes after the query: null in JSON
    q = found["blocks.0.attn.hook_q"]
    assert q["shape"] == [4, 2, 2] and q["axes"][2]["labels_per_head"] == [["q0", "q1"], ["q2", "q3"]]
    resid = found["blocks.0.hook_resid_post"]
    assert resid["axes"][1] == {"name": "residual dim", "labels": list(model.dims)}
    assert found["logits"]["axes"][1] == {"name": "next token", "labels": ["a", "b"]}


def test_mlp_units_are_labelled():
    data = json.loads(invoke("explain", "abba", "-w", XOR, "--json").stdout)
    pre = data["intermediates"]["blocks.0.mlp.hook_pre"]
    assert pre["axes"][1] == {"name": "hidden unit", "labels": ["ab", "ba"]}
    # at 3:a after b: prev_a = 0 (up to e^-362), a = 1, so ab = -S = -8 and ba = S = 8
    assert pre["values"][3] == [pytest.approx(-8), pytest.approx(8)]


@pytest.mark.parametrize("flag", [["--step", "why"], ["--block", "0"], ["--all"]])
def test_json_is_every_intermediate_and_refuses_a_narrowing(flag):
    assert user_error("explain", "--json", *flag) == (
        f"error: --json prints every intermediate of the context; {flag[0]} does not apply")


def test_json_and_a_picture_are_refused_together(tmp_path):
    assert user_error("explain", "--json", "--svg", str(tmp_path / "x.svg")) == (
        "error: --json prints data for programs and --svg/--html save the view: choose one")


def test_named_head_columns_label_the_head_axes():
    named = str(Path(__file__).resolve().parent / "data" / "multihead_named.json")
    data = json.loads(invoke("explain", "abab", "-w", named, "--json").stdout)["intermediates"]
    assert data["blocks.0.attn.hook_q"]["axes"][2]["labels_per_head"] == [["q:pos", "q:one"], ["q:pos2", "q:one2"]]
    assert data["blocks.0.attn.hook_z"]["axes"][2]["labels_per_head"] == [["z:tok", "z:spare"], ["z:tok2", "z:spare2"]]
