"""handwired attend: the worked examples of the kernel-regression note, by hand and through the CLI."""

import json
import math

import numpy as np
import pytest
from test_cli import invoke, user_error

from handwired.engine.attend import attend as attention_step
from handwired.errors import HandwiredError
from handwired.views import attend

Q2 = "64,85;61,80"
K2 = "68,91;60,87;64,88"
V2 = "126,180;110,172;115,170"


def test_gaussian_kernel_regression_one_dimension():
    # by hand: scores -(62-60)²/2 = -2, -(62-64)²/2 = -2, -(62-68)²/2 = -18
    result = attention_step(np.array([[62.0]]), np.array([[60.0], [64.0], [68.0]]),
                            np.array([[110.0], [115.0], [126.0]]), "gaussian")
    np.testing.assert_array_equal(result.scores, [[-2, -2, -18]])
    total = 2 * math.exp(-2) + math.exp(-18)
    np.testing.assert_allclose(result.weights, [[math.exp(-2) / total, math.exp(-2) / total, math.exp(-18) / total]],
                               rtol=1e-12)
    assert result.weights[0, 2] == pytest.approx(5.6e-8, rel=0.01)
    assert result.output[0, 0] == pytest.approx(112.5, abs=1e-5)
    assert result.saturated == []


def test_gaussian_example_through_the_cli_prints_the_tiny_weight():
    out = invoke("attend", "--q", "62", "--k", "60,64,68", "--v", "110,115,126", "--score", "gaussian").stdout
    assert "5.6e-8" in out and "1.5e-8" in out  # the weight and the kernel value GS(62, 68), not ≈0
    assert "0.500" in out and "112.500" in out
    assert "≈0" not in out and "saturated" not in out


def test_two_dimensional_dot_products_and_scaled_output():
    q, k, v = (attend.parse_inline(text, name) for text, name in ((Q2, "--q"), (K2, "--k"), (V2, "--v")))
    result = attention_step(q, k, v)
    # the note's numbers, by hand: 64·68 + 85·91 = 12087 …
    assert result.dot.tolist() == [[12087, 11235, 11576], [11428, 10620, 10944]]
    np.testing.assert_allclose(result.scores, result.dot / math.sqrt(2))
    assert result.output.tolist() == [[126, 180], [126, 180]]
    assert result.saturated == [0, 1]
    # the smallest weight, e^-((12087 - 11235)/√2), is tiny but not zero
    assert result.weights[0, 1] == pytest.approx(math.exp(-(12087 - 11235) / math.sqrt(2)), rel=1e-9)


def test_saturation_is_said_on_screen_and_in_json():
    result = invoke("attend", "--q", Q2, "--k", K2, "--v", V2, "--score", "dot")
    assert "12087" in result.stdout and "10944" in result.stdout
    assert "Softmax saturated in rows q0, q1" in result.stdout
    assert "e^-852" in result.stdout
    note = json.loads(invoke("attend", "--q", Q2, "--k", K2, "--v", V2, "--score", "dot", "--json").stdout)["note"]
    assert "leads the next by 484 or more" in note  # 11428 - 10944
    assert "e^-852 ≈ 1e-370, is below float64's range and printed as 0" in note  # 12087 - 11235 underflows
    data = json.loads(invoke("attend", "--q", Q2, "--k", K2, "--v", V2, "--json").stdout)
    assert data["score"] == "scaled-dot" and data["saturated_rows"] == [0, 1]
    assert data["dot"][0] == [12087, 11235, 11576]
    assert data["output"] == [[126, 180], [126, 180]]
    assert "saturated" in data["note"]


def test_self_attention_shorthand_equals_q_k_v_given_separately():
    x = "67,91;60,87;64,84"
    by_x = json.loads(invoke("attend", "--x", x, "--json").stdout)
    by_qkv = json.loads(invoke("attend", "--q", x, "--k", x, "--v", x, "--json").stdout)
    assert by_x == by_qkv
    # X·Xᵀ by hand: 67² + 91² = 12770, 67·60 + 91·87 = 11937, 64² + 84² = 11152
    assert by_x["dot"][0][:2] == [12770, 11937] and by_x["dot"][2][2] == 11152
    # every row's largest score is its dot product with x0 (the longest row): saturated, all copy x0
    assert by_x["output"] == [[67, 91]] * 3 and by_x["saturated_rows"] == [0, 1, 2]
    assert "Self-attention: Q = K = V = X" in invoke("attend", "--x", x).stdout


def test_a_wide_spread_is_not_saturation_while_two_keys_share_the_best_score():
    # scores 0, 0, -40.5: the third weight is e^-40.5 / 2, but the first two still split the weight evenly
    data = json.loads(invoke("attend", "--q", "0", "--k", "0,0,9", "--v", "1,2,3", "--score", "gaussian",
                             "--json").stdout)
    assert data["saturated_rows"] == [] and data["note"] is None
    assert data["weights"][0][0] == pytest.approx(0.5)


def test_causal_mask_zeroes_future_keys_and_says_so():
    data = json.loads(invoke("attend", "--x", "1;2;3", "--causal", "--json").stdout)
    assert data["masked"][0][1] is None and data["masked"][1][2] is None  # −∞
    assert data["weights"][0] == [1, 0, 0]
    np.testing.assert_allclose(np.array(data["weights"]).sum(axis=1), 1)
    out = invoke("attend", "--x", "1;2;3", "--causal").stdout
    assert "[mask]" in out and "−∞" in out
    assert "[mask]" not in invoke("attend", "--x", "1;2;3").stdout


def test_json_file_input(tmp_path):
    path = tmp_path / "attn.json"
    path.write_text(json.dumps({"q": [62], "k": [60, 64, 68], "v": [110, 115, 126]}))
    data = json.loads(invoke("attend", str(path), "--score", "gaussian", "--json").stdout)
    assert data["output"][0][0] == pytest.approx(112.5, abs=1e-5)
    path.write_text(json.dumps({"x": [[1, 0], [0, 1]]}))
    assert json.loads(invoke("attend", str(path), "--json").stdout)["q"] == [[1, 0], [0, 1]]


def test_inline_forms():
    assert attend.parse_inline("62", "--q").tolist() == [[62]]
    assert attend.parse_inline("60,64,68", "--k").tolist() == [[60], [64], [68]]
    assert attend.parse_inline("64,85;", "--q").tolist() == [[64, 85]]
    assert attend.parse_inline("[[64, 85]]", "--q").tolist() == [[64, 85]]
    assert attend.parse_inline(" -1.5e2 ; 3 ", "--q").tolist() == [[-150], [3]]


@pytest.mark.parametrize("args, message", [
    (["--q", "1,2;3", "--k", "1", "--v", "1"], "--q[1]: 1 number(s), but row 0 has 2"),
    (["--q", "1,2", "--k", "1,2;3,4", "--v", "1;2"], "q has 1 number(s) per row and k has 2"),
    (["--q", "1", "--k", "1;2", "--v", "1"], "k has 2 row(s) and v has 1"),
    (["--q", "1,x", "--k", "1", "--v", "1"], "'x' is not a number"),
    (["--q", "1", "--k", "1"], "missing v"),
    (["--q", "1", "--x", "1"], "give x alone"),
    (["--q", "1;;2", "--k", "1", "--v", "1"], "'nothing' is not a number"),
    (["--q", "nan", "--k", "1", "--v", "1"], "not a finite number"),
    (["--q", "1", "--k", "1", "--v", "1", "--score", "cosine"], "--score 'cosine': expected one of scaled-dot"),
    (["--q", "1;2", "--k", "1", "--v", "1", "--causal"], "a causal mask needs at least as many keys as queries"),
    (["--q", "", "--k", "1", "--v", "1"], "--q: empty"),
    ([], "nothing to attend"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    assert message in user_error("attend", *args)


def test_bad_files(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('{"q": [1], "k": [1], "v": [1], "w": 2}')
    assert "unknown key 'w' (valid: q, k, v, x)" in user_error("attend", str(path))
    path.write_text('{"q": [1], "k": [1], "v": ["a"]}')
    assert "v[0]: 'a' is not a number" in user_error("attend", str(path))
    path.write_text('{"q": [1], ')
    assert "not valid JSON" in user_error("attend", str(path))
    assert "not both" in user_error("attend", str(path), "--q", "1")
    assert "cannot read" in user_error("attend", str(tmp_path / "missing.json"))


def test_core_rejects_unknown_score():
    with pytest.raises(HandwiredError):
        attention_step(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)), "cosine")


def test_saves_svg_and_html_and_never_overwrites(tmp_path):
    svg, html = tmp_path / "a.svg", tmp_path / "a.html"
    args = ["attend", "--q", "62", "--k", "60,64,68", "--v", "110,115,126", "--score", "gaussian"]
    assert invoke(*args, "--svg", str(svg), "--html", str(html)).exit_code == 0
    assert svg.read_text().startswith("<svg") and "5.6e-8" in html.read_text()
    assert "already exists; use --force" in user_error(*args, "--svg", str(svg))
    source = tmp_path / "in.json"
    source.write_text('{"x": [1, 2]}')
    assert "that is the file being read" in user_error("attend", str(source), "--html", str(source), "--force")
    assert source.read_text() == '{"x": [1, 2]}'
