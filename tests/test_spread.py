"""spread: one value over every judged context, grouped, with the threshold that separates the groups."""

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from reference import reference_forward
from test_cli import invoke, user_error

from handwired.weightfile import load

ROOT = Path(__file__).resolve().parent.parent
XOR = str(ROOT / "puzzles" / "solutions" / "xor.json")
S = 8  # the xor reference's scale


def spread_json(*args):
    result = invoke("spread", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def every_context(n_vocab, n_ctx):
    for length in range(1, n_ctx + 1):
        yield from itertools.product(range(n_vocab), repeat=length)


def test_the_dim_xors_mlp_moves_the_logits_through_separates_the_answers():
    data = spread_json("blocks.0.hook_mlp_out:b", "--puzzle", "xor", "-w", XOR)
    # by hand: the MLP writes -S/2 = -4 into b when the last two tokens are equal (answer a), and
    # -S/2 + gelu(S) ≈ 4 when they differ (answer b); one-token contexts are not judged
    groups = {g["group"]: g for g in data["groups"]}
    assert (groups["a"]["count"], groups["b"]["count"], data["not_judged"]) == (30, 30, 2)
    assert groups["a"]["min"] == groups["a"]["max"] == pytest.approx(-4)
    assert groups["b"]["min"] == pytest.approx(4) and groups["b"]["max"] == pytest.approx(4)
    assert data["overlap"] is None and data["order"] == ["a", "b"]
    assert data["thresholds"] == [[pytest.approx(-4), pytest.approx(4)]]
    out = invoke("spread", "blocks.0.hook_mlp_out:b", "--puzzle", "xor", "-w", XOR).stdout
    assert "The groups do not overlap: any threshold in (-4, 4) separates a from b." in out
    assert "blocks.0.hook_mlp_out:b at the last position, over every context of puzzle xor, grouped by the right " \
           "answer" in " ".join(out.split())


def test_with_attention_zeroed_the_same_dim_overlaps(write_json):
    doc = json.loads(Path(XOR).read_text(encoding="utf-8"))
    doc["blocks"][0]["attn"]["c_proj"]["w"] = {}  # nothing reaches prev_a: the MLP sees the last token only
    path = write_json(doc)
    data = spread_json("blocks.0.hook_mlp_out:b", "--puzzle", "xor", "-w", str(path))
    # 'aa' (answer a) and 'ba' (answer b) both fire unit ba: 4; 'bb' (a) and 'ab' (b) fire nothing: -4
    assert data["overlap"] == [pytest.approx(-4), pytest.approx(4)] and data["thresholds"] is None
    out = invoke("spread", "blocks.0.hook_mlp_out:b", "--puzzle", "xor", "-w", str(path)).stdout
    assert "The groups overlap on [-4, 4]: no threshold separates them." in out


def test_one_unit_of_a_bump_puts_one_group_on_both_sides_of_the_other(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    data = spread_json("blocks.0.mlp.hook_pre:ab", "--puzzle", "xor", "-w", XOR)
    # unit ab = S·prev_a − S·a: 0 when the last two are equal, +8 after a then b, −8 after b then a
    assert data["order"] == ["b", "a", "b"]
    (low_a, low_b), (high_a, high_b) = data["thresholds"]
    assert (low_a, high_b) == (pytest.approx(-8), pytest.approx(8)) and low_b == pytest.approx(0, abs=1e-9)
    histogram = {g["group"]: g["histogram"] for g in data["groups"]}
    assert histogram["b"][0] == 15 and histogram["b"][-1] == 15 and sum(histogram["b"]) == 30
    assert histogram["a"] == [0] * 12 + [30] + [0] * 11  # 0 sits in the middle bin of 24 across [-8, 8]
    out = invoke("spread", "blocks.0.mlp.hook_pre:ab", "--puzzle", "xor", "-w", XOR).stdout
    assert "│ a      │    30 │   0 │  ≈0 │ ············█··········· │" in out
    assert "│ b      │    30 │  -8 │   8 │ █······················█ │" in out
    # a's largest value is not 0: at the last b of 'aaabb' the previous-token head leaks e^(-1024/√8) of its
    # attention to each other position, three of them a's, so ab = S·prev_a − S·a is 3·S·e^(-1024/√8) above 0;
    # a threshold's bound says so in full
    leak = 3 * S * math.exp(-1024 / math.sqrt(8))
    assert f"{leak:.1e}" == "1.4e-156"
    assert ("The values do not overlap; along the axis they run b < a < b. b lies on both sides of a. One threshold "
            f"in each of (-8, 0), ({leak:.1e}, 8) separates them.") in out
    assert data["thresholds"][1][0] == pytest.approx(leak, rel=1e-6)


def test_logits_by_answer_match_a_brute_force_reference():
    model = load(XOR)
    data = spread_json("logits:b", "--puzzle", "xor", "-w", XOR)
    by_answer: dict[str, list[float]] = {"a": [], "b": []}
    for ids in every_context(2, 5):
        if len(ids) < 2:
            continue
        answer = "a" if ids[-1] == ids[-2] else "b"
        logits, _ = reference_forward(model.params, list(ids), 1)
        by_answer[answer].append(logits[-1][1])
    for group in data["groups"]:
        values = by_answer[group["group"]]
        assert group["count"] == len(values)
        assert (group["min"], group["max"]) == (pytest.approx(min(values)), pytest.approx(max(values)))


def test_a_pattern_key_at_a_position_matches_the_reference_patterns():
    model = load("aab")
    # the bundled aab has the target aab: its answers; key -2 is the one before the query, at position 2
    data = spread_json("blocks.0.attn.hook_pattern:-2", "--position", "2", "--by", "last-token")
    expected: dict[str, list[float]] = {"a": [], "b": []}
    short = 0
    for ids in every_context(2, 5):
        if len(ids) < 3:
            short += 1
            continue
        _, patterns = reference_forward(model.params, list(ids), 1)
        expected["ab"[ids[-1]]].append(patterns[0][0][2][1])
    assert data["without_position"] == short == 6
    for group in data["groups"]:
        values = expected[group["group"]]
        assert group["count"] == len(values)
        assert (group["min"], group["max"]) == (pytest.approx(min(values)), pytest.approx(max(values)))


def test_every_context_groups_by_prediction_and_saves_a_picture(tmp_path):
    out = invoke("spread", "blocks.0.hook_resid_post:out", "--every", "--svg", str(tmp_path / "s.svg"))
    assert out.exit_code == 0
    assert "over every context, grouped by the predicted token" in " ".join(out.stdout.split())
    assert (tmp_path / "s.svg").read_text(encoding="utf-8").startswith("<svg")


@pytest.mark.parametrize("args,message", [
    (["nowhere:a"], "error: 'nowhere:a': the model records no 'nowhere'; it records hook_embed, hook_pos_embed, "
                    "blocks.0.hook_resid_pre, blocks.0.attn.hook_q, blocks.0.attn.hook_k, blocks.0.attn.hook_v, "
                    "blocks.0.attn.scores_before_mask, blocks.0.attn.hook_attn_scores, blocks.0.attn.hook_pattern, "
                    "blocks.0.attn.hook_z, blocks.0.hook_attn_out, blocks.0.hook_resid_post, logits, probs"),
    (["blocks.0.hook_resid_post:zz"], "error: 'blocks.0.hook_resid_post:zz': blocks.0.hook_resid_post has "
                                      "no column 'zz'; its columns are p0, p1, p2, p3, p4, a, b, out"),
    (["blocks.0.hook_resid_post"], "error: 'blocks.0.hook_resid_post': expected HOOK:COLUMN, e.g. "
                                   "blocks.0.mlp.hook_pre:h0 or blocks.0.hook_resid_post:tok"),
    (["blocks.0.hook_resid_post:a", "--every", "--by", "answer"],
     "error: --by answer needs the right answers: give a puzzle, or a file with a target"),
    (["blocks.0.hook_resid_post:a", "--by", "colour"],
     "error: --by 'colour': expected one of answer, predicted, last-token, length"),
    (["blocks.0.attn.hook_pattern:x"], "error: blocks.0.attn.hook_pattern:x: a column of blocks.0.attn.hook_pattern "
                                       "is a key position, e.g. 0 (the first), -1 (the query itself) or -2 "
                                       "(the one before)"),
    (["blocks.0.attn.hook_pattern:0", "-w", "multihead"],
     "error: blocks.0.attn.hook_pattern has a pattern per head: choose one with --head (0…1)"),
    (["blocks.0.hook_resid_post:a", "--head", "0"],
     "error: --head 0: blocks.0.hook_resid_post has no heads to choose from; a head is for attn.hook_pattern, "
     "attn.hook_attn_scores, attn.scores_before_mask"),
    (["blocks.0.hook_resid_post:a", "--position", "5"],
     "error: --position 5: a context has positions 0…4 (or -1 for the last)"),
    (["blocks.0.attn.hook_pattern:0", "--head", "3"], "error: --head 3: the model has one head, 0"),
    (["blocks.0.attn.hook_pattern:0", "--head", "2", "-w", "multihead"], "error: --head 2: the model has heads 0…1"),
    (["blocks.0.attn.hook_pattern:9"], "error: blocks.0.attn.hook_pattern:9: a key position is within -5…4"),
])
def test_bad_input_is_one_line_and_exit_code_2(args, message):
    assert user_error("spread", *args) == message


def test_the_puzzle_must_have_the_files_vocab():
    message = user_error("spread", "blocks.0.hook_resid_post:a", "--puzzle", "abc")
    assert message.startswith("error: ") and "does not fit puzzle 'abc': it expects vocab a, b, c" in message


def test_values_are_the_same_as_explain_records():
    """The walk's value for a context equals the one explain's trace records at that position."""
    from handwired.engine.probe import parse_probe, probe_values
    from handwired.engine.trace import trace
    from handwired.engine.walk import Listed

    model = load(str(ROOT / "puzzles" / "solutions" / "induction.json"))
    contexts = [np.array([[0, 1, 2, 3, 0, 1], [3, 3, 1, 0, 2, 3]])]
    for name, column in (("blocks.1.attn.hook_z", "z3"), ("blocks.1.hook_resid_post", model.dims[-1]),
                         ("blocks.0.attn.hook_pattern", "-2")):
        probe = parse_probe(model, f"{name}:{column}")
        walked, values, present, _ = probe_values(model, probe, Listed(contexts, model.n_vocab), position=4)
        assert [batch.tolist() for batch in walked] == [contexts[0].tolist()]
        for row, value in zip(contexts[0], values[0]):
            record = trace(model, model.decode(row)).record[name]
            want = record[0, 4, 3] if name.endswith("pattern") else record[4].reshape(-1)[probe.index]
            assert value == pytest.approx(want)
        assert present[0].all()


def test_many_groups_in_order_are_separated_by_one_threshold_between_each_pair():
    from handwired.judge.workbench.separation import separate

    values = np.array([3.0, 1.0, 2.0, 4.0, 5.0, 0.0])
    groups = np.array([3, 1, 2, 4, 5, 0])
    result = separate(list("abcdef"), values, groups)
    assert result.separated and result.runs == tuple("abcdef")
    assert result.thresholds == ((0, 1), (1, 2), (2, 3), (3, 4), (4, 5))
    mixed = separate(["a", "b"], np.array([0.0, 1, 2, 3, 4, 5]), np.array([0, 1, 0, 1, 0, 1]))
    assert not mixed.separated and mixed.shared == (1, 4)  # a in [0, 4], b in [1, 5]: they meet on [1, 4]
    tied = separate(["a", "b"], np.array([0.0, 1, 1, 2]), np.array([0, 0, 1, 1]))
    assert not tied.separated and tied.shared == (1, 1)


def test_a_named_head_column_is_probed_by_its_name():
    """On a file that names its head dims, HOOK:q:pos reads that column: the query's pos column is 2·Lg·pos − Lg."""
    from handwired.engine.probe import parse_probe, probe_values
    from handwired.engine.walk import Listed

    model = load(str(Path(__file__).resolve().parent / "data" / "multihead_named.json"))
    probe = parse_probe(model, "blocks.0.attn.hook_q:q:pos")
    contexts = Listed([np.array([[0, 1, 0, 1, 1]])], model.n_vocab)
    _, values, present, _ = probe_values(model, probe, contexts, position=3)
    assert present[0].all() and values[0][0] == pytest.approx(2 * 1024 * 3 - 1024)
    message = user_error("spread", "blocks.0.attn.hook_q:pos9", "-w", str(Path(__file__).parent / "data"
                                                                           / "multihead_named.json"), "--every")
    assert "has no column 'pos9'; its columns are q:pos, q:one, q:pos2, q:one2" in message


def test_a_file_that_names_its_puzzle_is_spread_over_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = json.loads(Path(XOR).read_text(encoding="utf-8")) | {"puzzle": "xor"}
    Path("mine.json").write_text(json.dumps(doc))
    named = spread_json("blocks.0.hook_mlp_out:b", "-w", "mine.json")
    assert named == spread_json("blocks.0.hook_mlp_out:b", "--puzzle", "xor", "-w", XOR) | {"weights": "mine.json"}
    every = spread_json("blocks.0.hook_mlp_out:b", "-w", "mine.json", "--every")
    assert (every["contexts"], every["by"], every["total"]) == ("every context", "predicted", 62)
    invoke("puzzles", "start", "aab", "-o", "a.json")  # it fits xor too: xor is used, with a warning
    result = invoke("spread", "logits:a", "-w", "a.json", "--puzzle", "xor")
    assert result.exit_code == 0 and "over every context of puzzle xor" in " ".join(result.stdout.split())
    assert result.stderr == "warning: a.json names the puzzle 'aab'; judged by 'xor', as asked\n"


def test_a_block_not_wired_yet_is_still_recorded():
    """The walk skips an attention or MLP whose c_proj.w is all zeros when it only needs logits; spread must still
    see what such a block computes (a player tunes hook_pre before wiring c_proj): the trace's values, exactly."""
    from handwired.engine.probe import parse_probe, probe_values
    from handwired.engine.trace import trace
    from handwired.engine.walk import Listed

    model = load(str(ROOT / "puzzles" / "solutions" / "xor.json"))
    block = model.params["blocks"][0]
    block["mlp"]["c_proj"]["w"][:] = 0.0
    block["attn"]["c_proj"]["w"][:] = 0.0
    unit = model.axes("blocks[0].mlp.c_fc.w")[1].labels[0]
    contexts = [np.array(list(itertools.product(range(2), repeat=4)))]
    walked = Listed(contexts, model.n_vocab)
    pre = probe_values(model, parse_probe(model, f"blocks.0.mlp.hook_pre:{unit}"), walked)[1][0]
    assert np.ptp(pre) > 0  # it varies with the context: the MLP was evaluated, not skipped
    for name, column in (("blocks.0.mlp.hook_pre", unit), ("blocks.0.attn.hook_pattern", "0")):
        probe = parse_probe(model, f"{name}:{column}")
        order, values, present, _ = probe_values(model, probe, walked)
        for row, value in zip(order[0], values[0]):
            record = trace(model, model.decode(row)).record[name]
            want = record[0, 3, 0] if name.endswith("pattern") else record[3].reshape(-1)[probe.index]
            assert value == pytest.approx(want)
        assert present[0].all()


def test_every_context_of_a_huge_model_is_refused_in_one_line(tmp_path):
    """30 tokens and n_ctx 4096: a count of 6,000 digits, which Python will not print whole; the spread refuses
    as the exhaustive check does, naming the count short."""
    path = tmp_path / "huge.json"
    vocab = [chr(ord("a") + i) for i in range(26)] + list("0123")
    path.write_text(json.dumps({"format": "handwired/1", "vocab": vocab, "n_ctx": 4096, "n_embd": 1, "n_head": 1,
                                "wte": {}, "wpe": {}, "blocks": []}))
    message = user_error("spread", "logits:a", "-w", str(path), "--every")
    assert message.startswith("error: every context: 30^1 + … + 30^4096 = about ")
    assert message.endswith("contexts, about a billion hours or more of checking for this model, more than the "
                            "4,000,000 handwired will enumerate; spread over a puzzle's contexts instead")


def test_a_leads_spread_says_whether_every_right_token_leads(tmp_path, monkeypatch):
    # the sign of a lead decides a context: no threshold between the groups means anything for it
    monkeypatch.setenv("COLUMNS", "300")
    out = invoke("spread", "lead").stdout
    assert ("Every lead is above 0: the right token leads in every judged context (the smallest, 1023, where the "
            "right answer is a).") in out and "threshold" not in out
    monkeypatch.chdir(tmp_path)
    assert invoke("puzzles", "start", "aab", "-o", "zero.json").exit_code == 0  # all zeros: every lead is 0
    out = invoke("spread", "lead", "-w", "zero.json", "--by", "last-token").stdout
    assert ("Not every lead is above 0: the smallest, 0, is where the last token is a; a context whose lead is 0 or "
            "below fails.") in out
    data = json.loads(invoke("spread", "lead", "-w", "zero.json", "--json").stdout)
    assert data["verdict"].startswith("Not every lead is above 0") and max(g["max"] for g in data["groups"]) == 0
