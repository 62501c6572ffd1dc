"""diff: weights by label, and the changed contexts against a brute-force comparison with the reference forward pass."""

import copy
import itertools
import json

import numpy as np
import pytest
from reference import params_to_document, random_params, reference_forward
from test_cli import invoke, user_error

from handwired.defaults import CHANGES_SHOWN, DIFF_SAMPLE
from handwired.judge.workbench import compare as diffing
from handwired.weightfile import load, parse


def model_of(doc, source="<test>"):
    model, problems = parse(json.loads(json.dumps(doc)), source)
    assert not problems, problems
    return model


@pytest.fixture
def small_doc():
    """vocab abc, n_ctx 4, two heads of width 2, LayerNorm and an MLP of 5 hidden units."""
    params = random_params(np.random.default_rng(3), n_vocab=3, n_ctx=4, n_embd=4, n_layer=1, n_hidden=5)
    doc = params_to_document(params, 2, "abc", 4)
    doc["dims"] = ["x", "y", "u", "v"]
    return doc


def test_every_entry_has_a_label_and_labels_follow_the_views(small_doc):
    model = model_of(small_doc)
    labels = diffing.labelled_weights(model)
    sizes = [np.size(v) for v in (model.params["wte"], model.params["wpe"])]
    for block in model.params["blocks"]:
        for part in block.values():
            sizes += [np.size(leaf) for sub in part.values()
                      for leaf in (sub.values() if isinstance(sub, dict) else [sub])]
    sizes += [np.size(v) for v in model.params["ln_f"].values()]
    assert len(labels) == sum(sizes)
    assert labels["wte.b.u"] == pytest.approx(small_doc["wte"][1][2])
    assert labels["wpe.3.v"] == pytest.approx(small_doc["wpe"][3][3])
    # q/k/v columns numbered across heads: column 4 + 3 is k3 (head 1's second key dim)
    assert labels["blocks[0].attn.c_attn.w.y.k3"] == pytest.approx(small_doc["blocks"][0]["attn"]["c_attn"]["w"][1][7])
    assert labels["blocks[0].attn.c_attn.b.v2"] == pytest.approx(small_doc["blocks"][0]["attn"]["c_attn"]["b"][10])
    assert labels["blocks[0].attn.c_proj.w.z2.x"] == pytest.approx(small_doc["blocks"][0]["attn"]["c_proj"]["w"][2][0])
    assert labels["blocks[0].mlp.c_fc.w.v.h4"] == pytest.approx(small_doc["blocks"][0]["mlp"]["c_fc"]["w"][3][4])
    assert labels["blocks[0].mlp.c_proj.w.h1.u"] == pytest.approx(small_doc["blocks"][0]["mlp"]["c_proj"]["w"][1][2])
    assert labels["ln_f.g.y"] == pytest.approx(small_doc["ln_f"]["g"][1])


def test_weight_changes_name_exactly_the_edited_entries(small_doc):
    edited = copy.deepcopy(small_doc)
    edited["blocks"][0]["attn"]["c_attn"]["w"][0][1] += 1  # q1 of dim x
    edited["blocks"][0]["ln_1"]["b"][3] = 0.0
    del edited["ln_f"]
    changes = diffing.weight_changes(model_of(small_doc), model_of(edited))
    by_label = {c.label: c for c in changes}
    assert by_label["blocks[0].attn.c_attn.w.x.q1"].new == pytest.approx(
        by_label["blocks[0].attn.c_attn.w.x.q1"].old + 1)
    assert by_label["blocks[0].ln_1.b.v"].new == 0.0
    assert {label for label in by_label if label.startswith("ln_f")} == {f"ln_f.{p}.{d}" for p in "gb" for d in "xyuv"}
    assert all(c.new is None for c in changes if c.label.startswith("ln_f"))
    assert len(changes) == 2 + 8


def _brute_force(doc, n_head):
    """context -> (prediction, tied, margin), from the independent reference forward pass."""
    params = model_of(doc).params
    answers = {}
    for length in range(1, doc["n_ctx"] + 1):
        for ids in itertools.product(range(len(doc["vocab"])), repeat=length):
            logits = np.array(reference_forward(params, list(ids), n_head)[0][-1])
            order = np.argsort(-logits, kind="stable")
            best, second = logits[order[0]], logits[order[1]]
            answers["".join(doc["vocab"][i] for i in ids)] = (doc["vocab"][order[0]], best == second, best - second)
    return answers


def test_changed_contexts_match_a_brute_force_comparison(small_doc):
    edited = copy.deepcopy(small_doc)
    edited["wpe"][2][0] += 0.8  # only contexts of length 3 and more can change
    before, after = _brute_force(small_doc, 2), _brute_force(edited, 2)
    expected = []
    for context in before:  # itertools.product: shortest first, in vocab order
        (p0, t0, m0), (p1, t1, m1) = before[context], after[context]
        if p0 != p1 or t0 != t1 or abs(m0 - m1) > 1e-9 * max(1, abs(m0), abs(m1)):
            expected.append(context)
    assert expected and all(len(c) >= 3 for c in expected)
    result = diffing.compare(model_of(small_doc), model_of(edited), show=1000)
    assert result.contexts == 3 + 9 + 27 + 81
    assert [c.context for c in result.shown] == expected
    assert result.changed == len(expected)
    assert result.predictions == sum(before[c][0] != after[c][0] or before[c][1] != after[c][1] for c in expected)
    for change in result.shown:
        assert change.old.prediction == before[change.context][0]
        assert change.new.margin == pytest.approx(after[change.context][2], abs=1e-9)
    shortest = diffing.compare(model_of(small_doc), model_of(edited), show=3)
    assert [c.context for c in shortest.shown] == expected[:3] and shortest.changed == len(expected)


def _pattern_answers(pattern, n_ctx):
    """context -> the set of next tokens at every phase it fits, written out by hand from the stream."""
    stream = pattern * (n_ctx + 2)
    fits: dict[str, set] = {}
    for phase in range(len(pattern)):
        for length in range(1, n_ctx + 1):
            fits.setdefault(stream[phase : phase + length], set()).add(stream[phase + length])
    return fits


def test_right_and_wrong_are_judged_by_the_target(aab_doc):
    edited = copy.deepcopy(aab_doc)
    edited["blocks"][0]["attn"]["c_proj"]["b"][5] = 0  # no bias towards a: ties become b
    old, new = model_of(aab_doc), model_of(edited)
    result = diffing.compare(old, new, show=100)
    fits = _pattern_answers("aab", 5)
    after = _brute_force(edited, 1)
    now_wrong = [c for c, nxt in fits.items() if len(nxt) == 1 and (after[c][0] not in nxt or after[c][1])]
    assert result.target == "aab" and result.now_right == 0
    assert result.now_wrong == len(now_wrong) > 0  # the original passes everything
    for change in result.shown:
        assert change.expected == (tuple(fits[change.context]) if len(fits.get(change.context, ())) == 1 else ())
        assert change.new.right is (None if not change.expected else change.context not in now_wrong)


def test_a_broken_context_shows_the_right_tokens_lead_falling_below_zero(aab_doc, write_json, monkeypatch):
    edited = copy.deepcopy(aab_doc)
    edited["blocks"][0]["attn"]["c_proj"]["b"][5] = 0  # no bias towards a: ties become b
    before = _brute_force(aab_doc, 1)
    fits = _pattern_answers("aab", 5)
    data = json.loads(invoke("diff", "aab", str(write_json(edited)), "--json", "--show", "100").stdout)
    shown = {c["context"]: c for c in data["shown"]}
    broken = [c for c in shown.values() if c["old"]["right"] and c["new"]["right"] is False]
    assert broken
    for change in broken:  # the predicted token's margin rises or stays positive; the right token's lead is negative
        (right,) = fits[change["context"]]
        wrong = "b" if right == "a" else "a"
        logits = np.array(reference_forward(model_of(edited).params, [edited["vocab"].index(t) for t in
                                                                       change["context"]], 1)[0][-1])
        lead = logits[edited["vocab"].index(right)] - logits[edited["vocab"].index(wrong)]
        assert change["new"]["lead"] == pytest.approx(lead) and lead < 0 < change["new"]["margin"]
        assert change["old"]["lead"] == pytest.approx(before[change["context"]][2])
    assert all(c["new"]["lead"] is None for c in shown.values() if not c["expected"])  # not judged: no lead
    monkeypatch.setenv("COLUMNS", "160")
    out = " ".join(invoke("diff", "aab", str(write_json(edited)), "--show", "100").stdout.split())
    assert "right's lead old" in out and "right's lead new" in out and "margin old" not in out
    assert "right's lead: the best right token's logit minus the best wrong token's" in out
    for doc in (aab_doc, edited):  # no target, no rule: the predicted token's margin, labelled so
        del doc["target"]
    out = " ".join(invoke("diff", str(write_json(aab_doc, "old.json")), str(write_json(edited))).stdout.split())
    assert "margin old" in out and "right's lead" not in out
    assert "margin: the predicted token's lead over the next best token" in out


def test_too_many_contexts_are_sampled_and_the_report_says_so(small_doc):
    edited = copy.deepcopy(small_doc)
    edited["wte"][0][0] += 1
    result = diffing.compare(model_of(small_doc), model_of(edited), limit=50)
    assert result.checked.startswith(f"{DIFF_SAMPLE:,} random contexts") and result.contexts == DIFF_SAMPLE
    result = diffing.compare(model_of(small_doc), model_of(edited), sample=500, seed=1)
    assert result.contexts == 500 and "(seed 1) of 120" in result.checked


# ---------------------------------------------------------------- the command


def test_diff_command_lists_weights_and_contexts(aab_doc, write_json):
    aab_doc["blocks"][0]["attn"]["c_proj"]["b"][5] = 1000
    edited = write_json(aab_doc, "edited.json")
    result = invoke("diff", "aab", str(edited))
    assert result.exit_code == 0
    assert "blocks[0].attn.c_proj.b.a" in result.stdout
    assert "1 weight differs; 62 of 62 contexts changed" in result.stdout.replace("\n", " ")
    data = json.loads(invoke("diff", "aab", str(edited), "--json").stdout)
    assert data["weights"] == [{"label": "blocks[0].attn.c_proj.b.a", "old": 1024.0, "new": 1000.0}]
    # every lead moved by 24 logits (the a-bias), no answer did
    assert data["changed"] == 62 and data["predictions_changed"] == 0
    assert data["shown"][0]["context"] == "a" and len(data["shown"]) == CHANGES_SHOWN
    assert [c["context"] for c in data["shown"][:3]] == ["a", "b", "aa"]
    assert data["shown"][2] == {"context": "aa", "expected": ["b"],
                                "old": {"prediction": "b", "tied": False, "margin": 1023.0, "right": True,
                                        "lead": 1023.0},
                                "new": {"prediction": "b", "tied": False, "margin": 1047.0, "right": True,
                                        "lead": 1047.0}}


def test_diff_of_identical_files_says_so():
    result = invoke("diff", "aab", "aab")
    assert result.exit_code == 0
    assert "no weight differs; no context's prediction or margin changed (62 compared)" in result.stdout


def test_diff_refuses_models_that_are_not_versions_of_one_model(aab_doc, write_json):
    other = copy.deepcopy(aab_doc)
    other["vocab"] = ["a", "c"]
    del other["example"], other["target"]
    assert "vocab a c differs" in user_error("diff", "aab", str(write_json(other, "vocab.json")))
    shorter = copy.deepcopy(aab_doc)
    shorter["n_ctx"] = 4
    shorter["wpe"] = shorter["wpe"][:4]
    assert "n_ctx 4 differs" in user_error("diff", "aab", str(write_json(shorter, "ctx.json")))
    assert "--show 0" in user_error("diff", "aab", "aab", "--show", "0")
    assert "no such file" in user_error("diff", "aab", "missing.json")


def test_diff_saves_svg(tmp_path, aab_doc, write_json):
    aab_doc["wte"][1][6] = 3
    edited = write_json(aab_doc, "edited.json")
    svg = tmp_path / "diff.svg"
    assert invoke("diff", "aab", str(edited), "--svg", str(svg)).exit_code == 0
    text = svg.read_text(encoding="utf-8")
    assert text.startswith("<svg") and "wte.b.b" in text


def test_named_hidden_units_and_sparse_files_use_the_file_labels(small_doc):
    small_doc["blocks"][0]["mlp"]["hidden"] = ["and", "or", "xor", "not", "id"]
    labels = diffing.labelled_weights(model_of(small_doc))
    assert labels["blocks[0].mlp.c_fc.w.v.id"] == pytest.approx(small_doc["blocks"][0]["mlp"]["c_fc"]["w"][3][4])
    assert labels["blocks[0].mlp.c_proj.w.or.u"] == pytest.approx(small_doc["blocks"][0]["mlp"]["c_proj"]["w"][1][2])
    # the bundled aab is written sparse: an entry it leaves out is a labelled 0 like any other
    aab = diffing.labelled_weights(load("aab"))
    assert aab["blocks[0].attn.c_proj.b.a"] == 1024 and aab["blocks[0].attn.c_proj.b.b"] == 0
    assert aab["blocks[0].attn.c_attn.w.p1.q0"] == 1024 and aab["blocks[0].attn.c_attn.w.a.v7"] == 1


def test_ctrl_c_during_a_long_diff_exits_130_without_a_traceback(monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    from handwired.cli import diff as diff_command

    monkeypatch.setattr(diff_command, "compare", interrupted)
    result = invoke("diff", "aab", "aab")
    assert result.exit_code == 130 and "interrupted" in result.stderr
