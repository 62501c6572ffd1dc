"""The failure view follows the fault: a wrong MLP threshold in xor shows in puzzles check's own output."""

import json
import math
import re
from pathlib import Path

import pytest
from test_cli import invoke

ROOT = Path(__file__).resolve().parent.parent
S, T = 8, 3  # the xor reference's scale, and the wrong weight that replaces -S for unit ba's prev_a input


def gelu(x):  # GPT-2's tanh form, written out here
    return 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


@pytest.fixture
def wrong_threshold(tmp_path, monkeypatch):
    """The xor reference with unit ba's prev_a weight -3 instead of -8: after 'aa' it fires (8 - 3 = 5)."""
    monkeypatch.setenv("COLUMNS", "250")
    doc = json.loads((ROOT / "puzzles" / "solutions" / "xor.json").read_text(encoding="utf-8"))
    doc["blocks"][0]["mlp"]["c_fc"]["w"]["prev_a"]["ba"] = -T
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_wrong_mlp_threshold_shows_in_the_failure_output(wrong_threshold):
    result = invoke("puzzles", "check", "xor", str(wrong_threshold))
    assert result.exit_code == 1
    out = result.stdout
    # by hand, at 'aa' position 1: prev_a = 1 (the previous-token head), a = 1; ab = S - S = 0, ba = -T + S = 5;
    # logit a = 1 (wte) + S/2 - gelu(5), logit b = -S/2 + gelu(5): b leads by 2·gelu(5) - S - 1
    gap = 2 * gelu(5) - S - 1
    assert f"{gap:.3f}" == "1.000"
    assert ("Why the shortest failing context 'aa' fails: the right token is a, but b beats it: logit 1.000 against "
            "≈0, a gap of 1.000 logits (p(b) = 0.7311).") in out
    assert f"{1 / (1 + math.exp(-gap)):.4f}" == "0.7311"
    mlp_push = 2 * gelu(5) - S  # the MLP's share of logit b minus its share of logit a
    assert (f"The part that pushed b over a most: block 0 mlp ({mlp_push:.3f} logits); the most against it: "
            "token embedding wte (1 logit for a)") in out
    # every step of the block, the MLP's hidden values before gelu among them, unit by its label
    assert re.findall(r"─ \[(\w+)\]", out) == ["why", "qkv", "scores", "mask", "pattern", "z", "proj", "mlp",
                                               "prediction"]
    inside = [line.strip()[1:-1].strip() for line in out[out.index("blocks.0.mlp.hook_pre"):].splitlines()]
    assert inside[2].startswith("1 all-zero column hidden: ab;")
    assert [re.sub(r"\s+", " ", line) for line in inside[4:8:2] + inside[7:9]][:1] == ["┃ pos ╲ unit ┃ ba ┃"]
    assert [re.sub(r"\s+", " ", line) for line in inside[6:8]] == ["│ 0:a │ 5 │", "│ 1:a │ 5 │"]
    # the failures table and the prediction table give the logit gap beside the probabilities
    assert re.search(r"│ aa\s+│ a\s+│ b\s+│ \+1\.000 │ 0\.2689 │ 0\.7311 │", out)
    assert re.search(r"│ 1:a\s+│ b\s+│\s+0\.7311 │\s+\+1\.000 │", out)
    assert f"Every step of this context, nothing folded: handwired explain aa -w {wrong_threshold} --all\n\n" in out
    assert re.search(r"\n\nNot solved yet: 27 non-zero parameters so far \(par 27[^)]*\)\. Stuck\? "
                     r"handwired puzzles hint xor\n$", out)


def test_watch_names_the_gap_and_the_part_that_pushed(wrong_threshold):
    from rich.console import Console

    from handwired.judge.game.catalogue import load_puzzle
    from handwired.views.watch import State, judge, load_snapshot, screen

    snapshot = load_snapshot(wrong_threshold, judge=judge(load_puzzle("xor")))
    console = Console(width=250, record=True, file=open("/dev/null", "w"))
    console.print(screen(State(snapshot)))
    text = console.export_text()
    assert "the right token is a, but b beats it: logit 1.000 against ≈0, a gap of 1.000 logits" in text
    assert "The part that pushed b over a most: block 0 mlp" in text


def test_check_json_gives_each_failures_logit_gap(wrong_threshold):
    for args in (("puzzles", "check", "xor", str(wrong_threshold)), ("check", "--puzzle", "xor", str(wrong_threshold))):
        result = invoke(*args, "--json")
        assert result.exit_code == 1
        first = json.loads(result.stdout)["failures"][0]
        assert first["context"] == "aa" and first["expected"] == ["a"] and first["predicted"] == "b"
        assert first["gap"] == pytest.approx(2 * gelu(5) - S - 1)  # worked out by hand above
        assert first["gap"] == pytest.approx(first["logits"][1] - first["logits"][0])


def test_a_tie_is_a_gap_of_zero_in_json(tmp_path):
    path = tmp_path / "m.json"
    invoke("puzzles", "start", "max", "-o", str(path))
    failures = json.loads(invoke("check", "-w", str(path), "--json").stdout)["failures"]
    assert [(f["context"], f["predicted"], f["tied"], f["gap"]) for f in failures[:2]] == [
        ("a", "a", True, 0.0), ("b", "a", True, 0.0)]


def test_a_wide_vocabulary_pages_the_failures_probabilities_at_80_columns(tmp_path, monkeypatch):
    """add has 12 tokens: p(0)…p(=) do not fit 80 columns beside the context; they come in pages under the same
    four columns, every number whole, rather than squeezed into '0…'."""
    monkeypatch.setenv("COLUMNS", "80")
    starter = tmp_path / "add.json"
    started = invoke("puzzles", "start", "add", "-o", str(starter))
    assert started.exit_code == 0, started.stderr
    out = invoke("puzzles", "check", "add", str(starter)).stdout
    failures = out[out.index("failures: the 10 shortest"):out.index("gap: the best wrong token")]
    assert "…" not in failures and max(len(line) for line in failures.splitlines()) <= 80
    headers = re.findall(r"p\((.)\)", failures)
    assert headers == list("0123456789+=")  # each token once, in vocab order, across the pages
    assert failures.count("┃ context ┃ expected ┃ predicted ┃ gap ┃") == 3
    assert failures.count("│ 00+00=  │ 0        │ 0 (tie)   │   0 │ 0.0833 │ 0.0833 │ 0.0833 │ 0.0833 │") == 3


def test_a_deep_models_failure_draws_what_a_view_may_and_says_what_is_left(tmp_path):
    # 3,000 blocks of one MLP unit: every block's steps would be 21,000 panels, tens of seconds and 48 MB of output
    import json

    from test_cli import invoke

    blocks = [{"attn": {"c_attn": {"w": {}}, "c_proj": {"w": {}}},
               "mlp": {"hidden": 1, "c_fc": {"w": {"d0": {"h0": 1}}}, "c_proj": {"w": {"h0": {"d1": 1}}}}}] * 3000
    doc = {"format": "handwired/1", "vocab": ["a", "b"], "n_ctx": 5, "n_embd": 2, "target": "aab",
           "wte": {"a": {"d0": 1}, "b": {"d1": 1}}, "wpe": {}, "blocks": blocks}
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(doc))
    result = invoke("check", str(path))
    assert result.exit_code == 1
    out = " ".join(result.stdout.split())
    assert "Why the shortest failing context" in out and "[why]" in out  # the headline and the why step
    assert "[mlp]" not in out and "[qkv]" not in out  # no block's step
    assert "The steps of its 3,000 blocks are not drawn here: 21,001 panels, about" in out
    assert len(result.stdout) < 1_000_000
    line = invoke("explain", "aaa", "-w", str(path))  # the explain view is refused before its trace
    assert line.exit_code == 2 and "to explain, more than the 30 seconds" in line.stderr
