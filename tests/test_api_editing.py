"""Editing a model from Python and saving it: load → set → save → load gives the edited logits (an independent
forward pass on the edited numbers), and ``handwired diff`` names exactly the edited entries."""

import copy
import json

import numpy as np
import pytest
from reference import params_to_document, random_params, reference_forward
from test_cli import invoke

import handwired
from handwired import HandwiredError
from handwired.weightfile import bundled_dir


@pytest.fixture
def dense(tmp_path):
    """A dense file (lists), LayerNorm and an MLP, with its numbers."""
    params = random_params(np.random.default_rng(7), n_vocab=3, n_ctx=4, n_embd=4, n_layer=1, n_hidden=3)
    path = tmp_path / "dense.json"
    path.write_text(json.dumps(params_to_document(params, 2, "xyz", 4)))
    return path, params


def diff_labels(old, new) -> list[str]:
    result = invoke("diff", str(old), str(new), "--json")
    assert result.exit_code == 0, result.output
    return [change["label"] for change in json.loads(result.output)["weights"]]


def test_an_edit_saved_and_loaded_gives_the_edited_logits_and_diff_names_exactly_it(dense, tmp_path):
    path, params = dense
    model = handwired.load(str(path))
    model.set("blocks.0.attn.c_proj.w", 0.75, row=1, col=2)
    model.set("blocks[0].mlp.c_fc.b", 0.0, row=2)
    model.set("ln_f.g", [2.0, 1.0, 0.5, 1.5])
    saved = model.save(tmp_path / "edited.json")
    edited = copy.deepcopy(params)
    edited["blocks"][0]["attn"]["c_proj"]["w"][1][2] = 0.75
    edited["blocks"][0]["mlp"]["c_fc"]["b"][2] = 0.0
    edited["ln_f"]["g"] = [2.0, 1.0, 0.5, 1.5]
    again = handwired.load(saved)
    for text in ["x", "xyz", "zzyx"]:
        expected, _ = reference_forward(edited, list(again.model.encode(text)), 2)
        assert np.allclose(again(text)[0], expected, rtol=0, atol=1e-12)
    changed = {"blocks[0].attn.c_proj.w.z1.d2", "blocks[0].mlp.c_fc.b.h2"}
    changed |= {f"ln_f.g.d{i}" for i in range(4) if params["ln_f"]["g"][i] != edited["ln_f"]["g"][i]}
    assert set(diff_labels(path, saved)) == changed
    assert {c.label for c in handwired.diff(str(path), model).weights} == changed  # in memory, the same
    assert isinstance(json.loads(saved.read_text())["wte"], list)  # a dense file stays dense
    assert invoke("weights", "validate", str(saved)).exit_code == 0


def test_saving_keeps_labels_sparsity_constants_and_expressions_and_finds_edits_in_place(tmp_path):
    model = handwired.load("aab")
    model.params["wpe"][0, 0] = 0.5  # in place: the same model, saved too
    model.set("blocks.0.attn.c_proj.w", 3, row="z7", col="b")
    model.set("wte", 0.0, row="a", col="a")  # an entry that becomes 0 leaves the sparse form
    model.set("blocks.0.attn.c_proj.w", 5.0, row="z7", col="a")
    model.set("blocks.0.attn.c_proj.w", -1024, row="z7", col="a")  # set back: written as the file wrote it
    saved = json.loads(model.save(tmp_path / "aab.json").read_text())
    original = json.loads((bundled_dir() / "aab.json").read_text())
    assert saved["constants"] == original["constants"] == {"Lg": 1024}
    assert saved["blocks"][0]["attn"]["c_proj"]["w"] == {"z7": {"a": "-Lg", "b": 3}}
    assert saved["blocks"][0]["attn"]["c_attn"] == original["blocks"][0]["attn"]["c_attn"]  # "Lg" kept
    assert saved["wpe"]["0"] == {"p0": 0.5} and saved["wte"] == {"b": {"b": 1}}
    assert set(diff_labels("aab", tmp_path / "aab.json")) == {"wpe.0.p0", "blocks[0].attn.c_proj.w.z7.b",
                                                               "wte.a.a"}


def test_saving_never_replaces_a_file_without_force(dense, tmp_path):
    path, _ = dense
    model = handwired.load(str(path))
    before = path.read_text()
    model.set("wte", 9.0, row=0, col=0)
    with pytest.raises(HandwiredError, match="already exists; use force=True"):
        model.save(path)
    assert path.read_text() == before
    model.save(path, force=True)
    assert handwired.load(str(path)).params["wte"][0, 0] == 9.0


@pytest.mark.parametrize("call, message", [
    (lambda m: m.set("blocks.3.attn.c_proj.w", 1.0), "path='blocks.3.attn.c_proj.w': the model has no such"),
    (lambda m: m.set(3, 1.0), "path=3: expected a string"),
    (lambda m: m.set("wte", 1.0, row="q"), "row='q': wte has no such row"),
    (lambda m: m.set("wte", 1.0, row=0, col=99), "col=99: expected a label or a number 0…7 of wte"),
    (lambda m: m.set("wte", float("nan"), row=0, col=0), "value=nan: expected finite numbers"),
    (lambda m: m.set("wte", [1.0, 2.0], row=0), "value [1.0, 2.0]: expected a number or an array of shape [8]"),
    (lambda m: m.set("blocks.0.attn.c_proj.b", 1.0, row=0, col=0), "col=0: blocks[0].attn.c_proj.b is a vector"),
    (lambda m: m.save(5), "path=5: expected a string or a path"),
])
def test_a_bad_edit_is_one_line_and_changes_nothing(call, message):
    model = handwired.load("aab")
    before = {key: value.copy() for key, value in model.model.written.entries.items()}
    with pytest.raises(HandwiredError) as caught:
        call(model)
    assert str(caught.value).startswith(message), str(caught.value)
    assert all(np.array_equal(before[key], value) for key, value in model.model.written.entries.items())
    assert np.array_equal(model("aabaa"), handwired.load("aab")("aabaa"))
