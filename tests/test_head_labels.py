"""Names for head dims: a two-head model whose q, k, v columns are named, through every reader and writer."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from test_cli import invoke, user_error

from handwired.weightfile import load

NAMED = Path(__file__).resolve().parent / "data" / "multihead_named.json"


@pytest.fixture
def named_doc():
    return json.loads(NAMED.read_text())


def words(text):
    return " ".join(text.replace("│", " ").replace("┃", " ").split())


def test_the_names_are_the_numbered_dims_of_the_bundled_model():
    named, numbered = load(str(NAMED)), load("multihead")
    for path in ("c_attn", "c_proj"):
        for part in ("w", "b"):
            assert np.array_equal(named.params["blocks"][0]["attn"][path][part],
                                  numbered.params["blocks"][0]["attn"][path][part])
    # head 0 owns columns 0…1 of q, k and v; head 1 columns 2…3 (d_head 2), each named by its own list
    assert named.axes("blocks[0].attn.c_attn.w")[1].labels == (
        "q:pos", "q:one", "q:pos2", "q:one2", "k:pos", "k:pos_sq", "k:pos2", "k:pos_sq2",
        "v:tok", "v:spare", "v:tok2", "v:spare2")
    assert named.axes("blocks[0].attn.c_proj.w")[0].labels == ("z:tok", "z:spare", "z:tok2", "z:spare2")
    assert named.head_labels(0, "k", 1) == ("k:pos2", "k:pos_sq2")
    assert numbered.head_labels(0, "z", 1) == ("z2", "z3")


def test_unnamed_columns_keep_their_numbers(named_doc, write_json):
    named_doc["blocks"][0]["attn"]["heads"] = [{"q": ["pos", "one"]}, {}]
    named_doc["blocks"][0]["attn"]["c_attn"] = {"w": {"pos": {"q:pos": 1, "q2": 2, "k0": 3, "v3": 4}}}
    named_doc["blocks"][0]["attn"]["c_proj"] = {"w": {"z3": {"tok": 5}}}
    model = load(str(write_json(named_doc)))
    assert model.head_labels(0, "q") == ("q:pos", "q:one", "q2", "q3")
    w = model.params["blocks"][0]["attn"]["c_attn"]["w"]
    assert (w[2, 0], w[2, 2], w[2, 4], w[2, 11]) == (1, 2, 3, 4)
    assert model.params["blocks"][0]["attn"]["c_proj"]["w"][3, 0] == 5


@pytest.mark.parametrize("edit, message", [
    (lambda attn: attn["c_attn"]["w"]["pos"].update({"k:nope": 1}),
     "blocks[0].attn.c_attn.w.pos.k:nope: unknown column label 'k:nope'; expected q, k, v: 3 × n_embd: q:pos, q:one, "
     "q:pos2, q:one2, k:pos, k:pos_sq, k:pos2, k:pos_sq2, v:tok, v:spare, v:tok2, v:spare2, or an index 0…11"),
    (lambda attn: attn["c_attn"]["w"]["pos"].update({"q0": 1}),
     "blocks[0].attn.c_attn.w.pos.q0: unknown column label 'q0'; expected q, k, v: 3 × n_embd: q:pos, q:one, "
     "q:pos2, q:one2, k:pos, k:pos_sq, k:pos2, k:pos_sq2, v:tok, v:spare, v:tok2, v:spare2, or an index 0…11"),
    (lambda attn: attn["c_proj"]["w"].update({"z:pos": {"tok": 1}}),
     "blocks[0].attn.c_proj.w.z:pos: unknown row label 'z:pos'; expected one per attention output dim, heads "
     "concatenated: z:tok, z:spare, z:tok2, z:spare2, or an index 0…3"),
    (lambda attn: attn["heads"][1].update({"q": ["pos", "x"]}),
     "blocks[0].attn.heads[1].q[0]: 'pos' already names a q column of head 0; a name is used once among a block's "
     "q columns"),
    (lambda attn: attn.update({"heads": [{}]}),
     "blocks[0].attn.heads: expected a list of 2 heads (n_head), each an object of its q, k and v labels; "
     "found a list of 1"),
    (lambda attn: attn["heads"][0].update({"v": ["a"]}),
     "blocks[0].attn.heads[0].v: expected a list of 2 labels (d_head = n_embd / n_head: one per v column of head 0); "
     "found a list of 1"),
    (lambda attn: attn["heads"][0].update({"z": ["a", "b"]}),
     "blocks[0].attn.heads[0].z: unknown key 'z' (valid keys: q, k, v)"),
    (lambda attn: attn["heads"][0].update({"k": ["pos", ""]}),
     "blocks[0].attn.heads[0].k[1]: expected a non-empty label; found the string ''"),
])
def test_wrong_names_are_one_line_naming_the_path(named_doc, write_json, edit, message):
    edit(named_doc["blocks"][0]["attn"])
    path = write_json(named_doc)
    assert user_error("predict", "ab", "-w", str(path)).startswith(f"error: {path}: {message}")


def test_explain_shows_the_names(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = words(invoke("explain", "-w", str(NAMED), "--step", "qkv", "--head", "1", "--all").stdout)
    assert "pos ╲ q q:pos2 q:one2" in out and "pos ╲ k k:pos2 k:pos_sq2" in out and "pos ╲ v v:tok2 v:spare2" in out
    out = words(invoke("explain", "-w", str(NAMED), "--step", "concat", "--all").stdout)
    assert "z dim (head 0: z:tok…z:spare, head 1: z:tok2…z:spare2)" in out
    assert "head 1's share: z_1 · W_O[z:tok2…z:spare2]" in out
    out = words(invoke("weights", "show", str(NAMED), "--all").stdout)
    assert "q:pos q:one q:pos2 q:one2" in out and "k:pos k:pos_sq k:pos2 k:pos_sq2" in out


def test_diff_names_the_weights_and_naming_alone_changes_none(named_doc, write_json):
    assert words(invoke("diff", "multihead", str(NAMED)).stdout).endswith(
        "no weight differs; no context's prediction or margin changed (510 compared)")
    named_doc["blocks"][0]["attn"]["c_attn"]["w"]["pos"]["k:pos2"] = 2
    out = words(invoke("diff", str(NAMED), str(write_json(named_doc))).stdout)
    assert "blocks[0].attn.c_attn.w.pos.k:pos2 1 2 1" in out and "1 weight differs;" in out
    data = json.loads(invoke("diff", "multihead", str(write_json(named_doc)), "--json").stdout)
    assert data["weights"] == [{"label": "blocks[0].attn.c_attn.w.pos.k:pos2", "old": 1.0, "new": 2.0}]


@pytest.mark.parametrize("first, second", [("dense", "sparse"), ("sparse", "dense")])
def test_weights_convert_round_trips_the_names(tmp_path, named_doc, first, second):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert invoke("weights", "convert", str(NAMED), "--to", first, "-o", str(one)).exit_code == 0
    assert invoke("weights", "convert", str(one), "--to", second, "-o", str(two)).exit_code == 0
    back = json.loads((two if second == "sparse" else one).read_text())
    if second == "sparse":
        assert back["blocks"] == named_doc["blocks"]  # every entry by its name, expressions kept
    assert json.loads(one.read_text())["blocks"][0]["attn"]["heads"] == named_doc["blocks"][0]["attn"]["heads"]
    assert json.loads(two.read_text())["blocks"][0]["attn"]["heads"] == named_doc["blocks"][0]["attn"]["heads"]
    for path in (one, two):
        assert words(invoke("diff", str(NAMED), str(path)).stdout).startswith("old model multihead-named")
        assert "no weight differs" in words(invoke("diff", str(NAMED), str(path)).stdout)


def test_export_and_import_round_trip_the_names(tmp_path, named_doc):
    pytest.importorskip("safetensors")
    folder, back = tmp_path / "tl", tmp_path / "back.json"
    assert invoke("export", str(NAMED), "-o", str(folder)).exit_code == 0
    assert json.loads((folder / "handwired.json").read_text())["heads"] == {
        "0": named_doc["blocks"][0]["attn"]["heads"]}
    assert invoke("import", str(folder), "-o", str(back)).exit_code == 0
    assert json.loads(back.read_text())["blocks"][0]["attn"]["heads"] == named_doc["blocks"][0]["attn"]["heads"]
    assert load(str(back)).axes("blocks[0].attn.c_attn.w")[1] == load(str(NAMED)).axes("blocks[0].attn.c_attn.w")[1]
    assert "no weight differs; no context's prediction or margin changed" in words(
        invoke("diff", str(NAMED), str(back)).stdout)


def test_a_puzzle_key_survives_export_and_import(tmp_path):
    pytest.importorskip("safetensors")
    doc = copy.deepcopy(json.loads((Path(__file__).resolve().parent.parent / "weights" / "aab.json").read_text()))
    doc["puzzle"] = "aab"
    (tmp_path / "a.json").write_text(json.dumps(doc))
    assert invoke("export", str(tmp_path / "a.json"), "-o", str(tmp_path / "tl")).exit_code == 0
    assert invoke("import", str(tmp_path / "tl"), "-o", str(tmp_path / "b.json")).exit_code == 0
    assert json.loads((tmp_path / "b.json").read_text())["puzzle"] == "aab"


def test_watch_names_an_edited_head_weight_and_the_head_columns(tmp_path, named_doc):
    from rich.console import Console

    from handwired.views import watch as watching

    path = tmp_path / "named.json"
    path.write_text(json.dumps(named_doc))
    state = watching.State(watching.load_snapshot(path))
    named_doc["blocks"][0]["attn"]["c_attn"]["w"]["first"]["v:tok"] = -3
    path.write_text(json.dumps(named_doc))
    state = state.advance(watching.load_snapshot(path))
    console = Console(width=200, record=True, file=open("/dev/null", "w"))
    console.print(watching.screen(state))
    text = words(console.export_text())
    assert "edited since the previous version: blocks[0].attn.c_attn.w.first.v:tok -2 → -3" in text
    assert "pos ╲ v v:tok" in text and "pos ╲ q q:pos2 q:one2" in text
    named_doc["blocks"][0]["attn"]["c_attn"]["w"]["first"] = {"v:nope": 1}
    path.write_text(json.dumps(named_doc))
    assert watching.load_snapshot(path).errors == (
        "blocks[0].attn.c_attn.w.first.v:nope: unknown column label 'v:nope'; expected q, k, v: 3 × n_embd: q:pos, "
        "q:one, q:pos2, q:one2, k:pos, k:pos_sq, k:pos2, k:pos_sq2, v:tok, v:spare, v:tok2, v:spare2, "
        "or an index 0…11",)
