"""export / import without TransformerLens: the layout, the round trip, and every kind of bad input.

The comparison with the real library is tests/test_transformer_lens.py; here the exported
tensors are checked against a forward pass written directly in TransformerLens's layout.
"""

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from reference import params_to_document, random_params
from test_cli import invoke, user_error

safetensors_numpy = pytest.importorskip("safetensors.numpy")

from handwired.engine.forward import forward  # noqa: E402
from handwired.errors import HandwiredError  # noqa: E402
from handwired.interop import FILES, export_folder, import_folder  # noqa: E402
from handwired.interop.mapping import to_config, to_state_dict  # noqa: E402
from handwired.interop.readme import LOAD_V3, LOAD_V4, TESTED, readme  # noqa: E402
from handwired.weightfile import bundled_models, load, locate, parse  # noqa: E402


def random_model(seed, n_head=2, layer_norm=True, mlp=True, n_layer=2):
    """A random model like the forward pass tests'; ``mlp`` may list each block's MLP width (None: none)."""
    params = random_params(np.random.default_rng(seed), n_layer=n_layer, layer_norm=layer_norm, mlp=mlp)
    model, problems = parse(params_to_document(params, n_head, "abc", 6), source=f"random-{seed}")
    assert not problems, problems
    return model


MODELS = {
    "attention only": lambda: random_model(1, n_head=4, layer_norm=False, mlp=False, n_layer=1),
    "LayerNorm and MLP": lambda: random_model(2, n_head=2, n_layer=2),
    "eight heads": lambda: random_model(3, n_head=8, n_layer=3),
    "mixed MLP widths": lambda: random_model(4, n_head=2, layer_norm=False, mlp=[5, None, 12]),
    "mixed widths, LayerNorm": lambda: random_model(5, n_head=4, mlp=[None, 3, 9]),
}


# ------------------------------------------------------------ an independent forward pass, TransformerLens's layout


def tl_layout_forward(config, state, tokens):
    """One context, TransformerLens's tensors, einsum per head: written from the formulas, not from handwired."""

    def ln(x, prefix):
        if config["normalization_type"] is None:
            return x
        x = x - x.mean(-1, keepdims=True)
        return x / np.sqrt((x**2).mean(-1, keepdims=True) + config["eps"]) * state[prefix + ".w"] + state[prefix + ".b"]

    n = len(tokens)
    x = state["embed.W_E"][tokens] + state["pos_embed.W_pos"][:n]  # [pos, d_model]
    for i in range(config["n_layers"]):
        p = f"blocks.{i}."
        h = ln(x, p + "ln1")
        q = np.einsum("pm,hmd->phd", h, state[p + "attn.W_Q"]) + state[p + "attn.b_Q"]  # [pos, head, d_head]
        k = np.einsum("pm,hmd->phd", h, state[p + "attn.W_K"]) + state[p + "attn.b_K"]
        v = np.einsum("pm,hmd->phd", h, state[p + "attn.W_V"]) + state[p + "attn.b_V"]
        scores = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(config["d_head"])
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
        pattern = np.exp(scores - scores.max(-1, keepdims=True))
        pattern /= pattern.sum(-1, keepdims=True)
        z = np.einsum("hqk,khd->qhd", pattern, v)
        x = x + np.einsum("qhd,hdm->qm", z, state[p + "attn.W_O"]) + state[p + "attn.b_O"]
        if not config["attn_only"]:
            pre = ln(x, p + "ln2") @ state[p + "mlp.W_in"] + state[p + "mlp.b_in"]
            post = 0.5 * pre * (1 + np.tanh(math.sqrt(2 / math.pi) * (pre + 0.044715 * pre**3)))
            x = x + post @ state[p + "mlp.W_out"] + state[p + "mlp.b_out"]
    return ln(x, "ln_final") @ state["unembed.W_U"] + state["unembed.b_U"]


@pytest.mark.parametrize("name", list(MODELS))
def test_exported_tensors_compute_handwireds_logits_in_transformer_lens_layout(name):
    model = MODELS[name]()
    config, state = to_config(model), to_state_dict(model)
    rng = np.random.default_rng(0)
    for length in (1, 4, 6):
        tokens = rng.integers(0, model.n_vocab, length)
        expected = forward(model.params, tokens[None, :], model.n_head)[0]
        np.testing.assert_allclose(tl_layout_forward(config, state, tokens), expected, rtol=1e-12, atol=1e-12)


def test_head_h_takes_columns_h_times_d_head_of_q_k_and_v():
    model = random_model(6, n_head=4, n_layer=1)
    state = to_state_dict(model)
    w = model.params["blocks"][0]["attn"]["c_attn"]["w"]
    for h in range(4):
        for row in range(8):
            for col in range(2):
                assert state["blocks.0.attn.W_Q"][h, row, col] == w[row, 2 * h + col]
                assert state["blocks.0.attn.W_K"][h, row, col] == w[row, 8 + 2 * h + col]
                assert state["blocks.0.attn.W_V"][h, row, col] == w[row, 16 + 2 * h + col]


def test_config_says_what_the_model_is():
    config = to_config(MODELS["mixed MLP widths"]())
    assert config["act_fn"] == "gelu_new" and config["dtype"] == "float64"
    assert config["d_mlp"] == 12 and config["attn_only"] is False and config["normalization_type"] is None
    assert config["default_prepend_bos"] is False and config["positional_embedding_type"] == "standard"
    assert (config["d_model"], config["n_heads"], config["d_head"], config["n_layers"]) == (8, 2, 4, 3)
    aab = to_config(load("aab"))
    assert aab["attn_only"] is True and aab["d_mlp"] is None and aab["n_ctx"] == 5 and aab["d_vocab"] == 2
    assert to_config(MODELS["LayerNorm and MLP"]())["normalization_type"] == "LN"


# ---------------------------------------------------------------- the folder


def test_export_writes_the_folder_byte_for_byte_the_same(tmp_path):
    model = MODELS["mixed widths, LayerNorm"]()
    export_folder(model, tmp_path / "one")
    export_folder(model, tmp_path / "two")
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == sorted(FILES)
    for name in FILES:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    tensors = safetensors_numpy.load_file(str(tmp_path / "one" / "model.safetensors"))
    assert all(t.dtype == np.float64 for t in tensors.values())
    assert json.loads((tmp_path / "one" / "vocab.json").read_text()) == {"0": "a", "1": "b", "2": "c"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one", "two"]  # no temporary folder left


SOLUTIONS = sorted((Path(__file__).resolve().parent.parent / "puzzles" / "solutions").glob("*.json"))
HAND_WIRED = {**{f"bundled {n}": n for n in bundled_models()}, **{f"solution {p.stem}": str(p) for p in SOLUTIONS}}


@pytest.mark.parametrize("name", list(HAND_WIRED) + list(MODELS))
def test_export_then_import_gives_back_the_same_numbers(name, tmp_path):
    model = load(HAND_WIRED[name]) if name in HAND_WIRED else MODELS[name]()
    export_folder(model, tmp_path / "export")
    back = import_folder(tmp_path / "export", tmp_path / "back.json")
    again = load(str(tmp_path / "back.json"))
    for result in (back, again):
        assert (result.vocab, result.n_ctx, result.n_embd, result.n_head, result.dims) == \
            (model.vocab, model.n_ctx, model.n_embd, model.n_head, model.dims)
        assert same_params(result.params, model.params)
    assert (again.name, again.example, again.target) == (model.name, model.example, model.target)


def same_params(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_params(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same_params(x, y) for x, y in zip(a, b))
    return np.array_equal(a, b)


def test_import_writes_the_sparse_form_with_whole_numbers_as_integers(tmp_path):
    export_folder(load("aab"), tmp_path / "export")
    import_folder(tmp_path / "export", tmp_path / "aab.json")
    doc = json.loads((tmp_path / "aab.json").read_text())
    assert doc["wte"] == {"a": {"a": 1}, "b": {"b": 1}}  # labels come back from handwired.json
    assert doc["blocks"][0]["attn"]["c_proj"]["b"] == {"a": 1024}  # was the constant "Lg": constants do not survive


def test_layer_norm_without_gain_and_bias_imports_as_gain_one(tmp_path):
    model = MODELS["LayerNorm and MLP"]()
    folder = exported(model, tmp_path)
    edit_config(folder, normalization_type="LNPre")
    state = safetensors_numpy.load_file(str(folder / "model.safetensors"))
    save({k: v for k, v in state.items() if not k.endswith((".w", ".b")) or "ln" not in k}, folder)
    back = import_folder(folder, tmp_path / "back.json")
    assert np.array_equal(back.params["ln_f"]["g"], np.ones(8)) and not back.params["ln_f"]["b"].any()
    assert np.array_equal(back.params["blocks"][1]["ln_2"]["g"], np.ones(8))


def test_float32_tensors_widen_exactly(tmp_path):
    folder = exported(load("aab"), tmp_path)
    state = safetensors_numpy.load_file(str(folder / "model.safetensors"))
    save({k: v.astype(np.float32) for k, v in state.items()}, folder)
    assert same_params(import_folder(folder, tmp_path / "back.json").params, load("aab").params)


# ---------------------------------------------------------------- the command line


def test_cli_export_and_import(tmp_path):
    out = tmp_path / "aab-tl"
    result = invoke("export", "aab", "--to", "transformer-lens", "-o", str(out))
    assert result.exit_code == 0 and "README.md" in result.stdout
    readme = (out / "README.md").read_text()
    for text in ("TransformerBridge.boot_native", "HookedTransformerConfig", "torch.float64", "convert_tl_checkpoint",
                 "4.3.0", "3.9.0", 'tokens = torch.tensor([[vocab.index(c) for c in "aabaa"]])', "# b"):
        assert text in readme, text
    result = invoke("import", str(out), "-o", str(tmp_path / "aab.json"))
    assert result.exit_code == 0 and "n_embd 8" in result.stdout
    assert invoke("predict", "aabaa", "-w", str(tmp_path / "aab.json"), "--json").stdout == \
        invoke("predict", "aabaa", "--json").stdout.replace(str(load("aab").source), str(tmp_path / "aab.json"))


def _blocks_doc(mlp_widths):
    """A two-dim model with one block per entry of ``mlp_widths`` (0: no MLP), and no description."""
    def block(width):
        attn = {"attn": {"c_attn": {"w": {}}, "c_proj": {"w": {}}}}
        mlp = {"mlp": {"hidden": [f"h{i}" for i in range(width)], "c_fc": {"w": {"0": {"h0": 1}}}, "c_proj": {"w": {}}}}
        return {**attn, **(mlp if width else {})}

    return {"format": "handwired/1", "vocab": ["a", "b"], "n_ctx": 2, "n_embd": 2,
            "wte": {"a": {"0": 1}, "b": {"1": 1}}, "wpe": {}, "blocks": [block(width) for width in mlp_widths]}


@pytest.mark.parametrize("widths,says", [
    ([0, 0], None),  # attention only: the config says attn_only, and no MLP is made up
    ([3, 3], None),  # one width everywhere: nothing padded
    ([0, 3], "A block without an MLP in handwired is an all-zero MLP of width d_mlp = 3 here: the zeros add"),
    ([2, 3], "A narrower MLP is zero-padded to d_mlp = 3: the zeros add"),
    ([0, 2, 3], "A block without an MLP in handwired is an all-zero MLP of width d_mlp = 3 here; a narrower MLP is "
                "zero-padded to d_mlp = 3: the zeros add"),
])
def test_the_readme_says_what_the_folder_holds_and_nothing_empty(widths, says):
    model, problems = parse(_blocks_doc(widths), "m.json")
    assert problems == []
    config = to_config(model)
    text = readme(model, config)
    assert config["attn_only"] is (max(widths) == 0)
    assert ("all-zero MLP" in text) is (says is not None and "without" in says)
    assert ("zero-padded" in text) is (says is not None and "narrower" in says)
    if says is not None:
        assert says in " ".join(text.split())
    assert "\n\n\n" not in text and text.startswith("# handwired model: a hand-wired transformer for "
                                                       "TransformerLens\n\nExported by handwired")
    described, _ = parse({**_blocks_doc(widths), "description": "Two dims, nothing wired."}, "m.json")
    assert "TransformerLens\n\nTwo dims, nothing wired.\n\nExported by handwired" in readme(described, config)


def test_the_docs_give_the_loading_code_the_comparison_test_runs():
    readme = (Path(__file__).resolve().parent.parent / "docs" / "transformer-lens.md").read_text(encoding="utf-8")
    assert LOAD_V4 in readme and LOAD_V3 in readme
    assert f"tested with {TESTED['4']}" in readme and f"tested with {TESTED['3']}" in readme


def test_cli_export_refuses_to_replace_without_force_and_replaces_only_an_export(tmp_path):
    out = tmp_path / "out"
    invoke("export", "aab", "-o", str(out))
    (out / "config.json").write_text("{}")
    assert "already exists; use --force" in user_error("export", "aab", "-o", str(out))
    assert (out / "config.json").read_text() == "{}"
    assert invoke("export", "aab", "-o", str(out), "--force").exit_code == 0
    assert json.loads((out / "config.json").read_text())["d_model"] == 8
    (out / "notes.txt").write_text("mine")
    assert "holds 'notes.txt', which an export does not write" in user_error("export", "aab", "-o", str(out), "--force")
    assert (out / "notes.txt").read_text() == "mine"
    file = tmp_path / "file"
    file.write_text("x")
    assert "is not a folder" in user_error("export", "aab", "-o", str(file), "--force")
    assert "does not exist" in user_error("export", "aab", "-o", str(tmp_path / "no" / "out"))
    assert "--to 'pytorch': expected one of transformer-lens" in user_error("export", "aab", "--to", "pytorch", "-o",
                                                                             str(tmp_path / "x"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "out"]


def test_a_failed_write_leaves_the_earlier_export_and_no_temporary_folder(tmp_path, monkeypatch):
    import os

    out = tmp_path / "out"
    invoke("export", "aab", "-o", str(out))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    rename = os.rename

    def fail_on_the_new_folder(source, target):
        if str(source).endswith(".tmp"):
            raise OSError(28, "No space left on device")
        rename(source, target)

    monkeypatch.setattr("handwired.interop.folder.os.rename", fail_on_the_new_folder)
    line = user_error("export", "multihead", "-o", str(out), "--force")
    assert "out: cannot write: No space left on device" in line
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_cli_export_refuses_mixed_layer_norm(tmp_path, write_json):
    for edit, says in ((lambda b: b[0].pop("ln_1"), "but not at blocks[0].ln_1"),
                       (lambda b: [block.pop(k) for block in b for k in ("ln_1", "ln_2")],
                        "LayerNorm at ln_f but not at")):
        params = random_params(np.random.default_rng(0), n_layer=2)
        edit(params["blocks"])
        path = write_json(params_to_document(params, 2, "abc", 6))
        line = user_error("export", str(path), "-o", str(tmp_path / "out"))
        assert says in line and "cannot be exported exactly" in line
        assert not (tmp_path / "out").exists()


def test_cli_says_what_to_install_without_safetensors(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "safetensors", None)
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    line = user_error("export", "aab", "-o", str(tmp_path / "out"))
    assert "pip install 'handwired[export]'" in line
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- bad folders for import


def exported(model, tmp_path):
    folder = tmp_path / "export"
    export_folder(model, folder)
    return folder


def edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


def save(state, folder):
    safetensors_numpy.save_file(state, str(folder / "model.safetensors"))


def edit_tensors(folder, change):
    state = safetensors_numpy.load_file(str(folder / "model.safetensors"))
    change(state)
    save(state, folder)


BAD_FOLDERS = {
    # name: (how to spoil an exported LayerNorm-and-MLP model, what the one line says)
    "config missing": (lambda f: (f / "config.json").unlink(), "config.json: missing"),
    "config not JSON": (lambda f: (f / "config.json").write_text("{"), "config.json: not valid JSON"),
    "config not an object": (lambda f: (f / "config.json").write_text("[]"), "expected an object"),
    "config without d_model": (lambda f: edit_config(f, d_model=None), "d_model: expected a whole number"),
    "weights missing": (lambda f: (f / "model.safetensors").unlink(), "model.safetensors: missing"),
    "weights not safetensors": (lambda f: (f / "model.safetensors").write_bytes(b"\x10\x00garbage"),
                                "not a readable safetensors file"),
    "missing tensor": (lambda f: edit_tensors(f, lambda s: s.pop("blocks.1.mlp.W_in")),
                       "missing tensor blocks.1.mlp.W_in"),
    "extra tensor": (lambda f: edit_tensors(f, lambda s: s.update({"blocks.0.attn.W_extra": np.zeros(2)})),
                     "unexpected tensor blocks.0.attn.W_extra"),
    "misshapen tensor": (lambda f: edit_tensors(f, lambda s: s.update({"blocks.0.attn.b_O": np.zeros(7)})),
                         "blocks.0.attn.b_O has shape [7], the config makes it [8]"),
    "config contradicts tensors": (lambda f: edit_config(f, d_mlp=13),
                                   "mlp.W_in has shape [8, 12], the config makes it [8, 13]"),
    "integer tensor": (lambda f: edit_tensors(f, lambda s: s.update({"ln_final.b": np.zeros(8, dtype=np.int64)})),
                       "ln_final.b holds int64 values"),
    "not finite": (lambda f: edit_tensors(f, lambda s: s["ln_final.b"].__setitem__(0, np.nan)), "not a finite number"),
    "untied unembedding": (lambda f: edit_tensors(f, lambda s: s["unembed.W_U"].__setitem__((0, 0), 5.0)),
                           "unembed.W_U is not embed.W_E transposed"),
    "unembedding bias": (lambda f: edit_tensors(f, lambda s: s["unembed.b_U"].__setitem__(1, 0.5)),
                         "unembed.b_U is not zero"),
    "erf GELU": (lambda f: edit_config(f, act_fn="gelu"), "act_fn 'gelu': handwired computes only GPT-2's tanh GELU"),
    "ReLU": (lambda f: edit_config(f, act_fn="relu"), "act_fn 'relu'"),
    "RMSNorm": (lambda f: edit_config(f, normalization_type="RMS"), "normalization_type 'RMS'"),
    "another epsilon": (lambda f: edit_config(f, eps=1e-6), "eps 1e-06: handwired's LayerNorm uses eps 1e-05"),
    "rotary": (lambda f: edit_config(f, positional_embedding_type="rotary"), "positional_embedding_type 'rotary'"),
    "heads do not fill d_model": (lambda f: edit_config(f, d_head=3), "n_heads·d_head = 2·3 ≠ d_model 8"),
    "bidirectional": (lambda f: edit_config(f, attention_dir="bidirectional"), "bidirectional attention"),
    "attention scale": (lambda f: edit_config(f, attn_scale=1.0),
                        "attn_scale 1.0: handwired divides attention scores by √d_head = 2"),
    "scaled by layer": (lambda f: edit_config(f, scale_attn_by_inverse_layer_idx=True),
                        "attention scaled by the block's index"),
    "too large": (lambda f: edit_config(f, d_mlp=4000, n_layers=400),
                  "weights would make a file larger than handwired reads"),
    "too wide": (lambda f: edit_config(f, d_model=5000), "d_model 5000 is more than handwired supports"),
    "untied output vocabulary": (lambda f: edit_config(f, d_vocab_out=4), "d_vocab_out 4 ≠ d_vocab 3"),
    "IGNORE not −∞": (lambda f: edit_tensors(f, lambda s: s.update({"blocks.0.attn.IGNORE": np.array(-1e5)})),
                      "blocks.0.attn.IGNORE is -100000.0"),
    "vocab missing": (lambda f: (f / "vocab.json").unlink(),
                      "vocab.json: missing; give the tokens in id order with --vocab"),
    "vocab too short": (lambda f: (f / "vocab.json").write_text('{"0": "a", "1": "b"}'),
                        "2 tokens, the config has d_vocab 3"),
    "vocab not characters": (lambda f: (f / "vocab.json").write_text('{"0": "a", "1": "bb", "2": "c"}'),
                             "token 1 is 'bb'"),
    "vocab not by id": (lambda f: (f / "vocab.json").write_text('["a", "b", "c"]'), "expected an object from token id"),
    "labels wrong length": (lambda f: (f / "handwired.json").write_text('{"dims": ["x"]}'),
                            "dims: expected a list of 8 labels"),
    "labels invalid": (lambda f: (f / "handwired.json").write_text('{"example": "abz"}'),
                       "would not make a valid weight file: example: 'z'"),
}


@pytest.mark.parametrize("case", list(BAD_FOLDERS))
def test_cli_import_refuses_a_bad_folder_in_one_line(case, tmp_path):
    folder = exported(MODELS["LayerNorm and MLP"](), tmp_path)
    spoil, says = BAD_FOLDERS[case]
    spoil(folder)
    output = tmp_path / "model.json"
    line = user_error("import", str(folder), "-o", str(output))
    assert says in line, line
    assert not output.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # nothing half-written


def test_cli_import_refuses_missing_folder_file_and_existing_output(tmp_path):
    assert "no such folder" in user_error("import", str(tmp_path / "nowhere"), "-o", str(tmp_path / "m.json"))
    (tmp_path / "file").write_text("x")
    assert "is not a folder" in user_error("import", str(tmp_path / "file"), "-o", str(tmp_path / "m.json"))
    folder = exported(load("aab"), tmp_path)
    (tmp_path / "m.json").write_text("mine")
    assert "m.json: already exists; use --force" in user_error("import", str(folder), "-o", str(tmp_path / "m.json"))
    assert (tmp_path / "m.json").read_text() == "mine"
    assert invoke("import", str(folder), "-o", str(tmp_path / "m.json"), "--force").exit_code == 0
    assert load(str(tmp_path / "m.json")).name == "aab"
    assert "that is the weight file being read" in user_error("import", str(folder), "-o", str(folder))


def test_cli_import_takes_the_vocabulary_from_an_option(tmp_path):
    folder = exported(load("aab"), tmp_path)
    (folder / "vocab.json").unlink()
    (folder / "handwired.json").unlink()
    assert invoke("import", str(folder), "-o", str(tmp_path / "m.json"), "--vocab", "xy").exit_code == 0
    model = load(str(tmp_path / "m.json"))
    assert model.vocab == ("x", "y") and model.dims[:2] == ("d0", "d1")
    assert "--vocab: token 'x' appears twice" in user_error("import", str(folder), "-o", str(tmp_path / "n.json"),
                                                            "--vocab", "xx")


def test_import_core_raises_handwired_error_not_a_traceback(tmp_path):
    with pytest.raises(HandwiredError, match="no such folder"):
        import_folder(tmp_path / "nowhere", tmp_path / "m.json")


def test_import_refuses_to_write_inside_the_folder_it_reads(tmp_path):
    folder = exported(load("aab"), tmp_path)
    before = (folder / "config.json").read_bytes()
    line = user_error("import", str(folder), "-o", str(folder / "config.json"), "--force")
    assert "inside the folder being read" in line
    assert (folder / "config.json").read_bytes() == before


def test_mlp_hidden_labels_and_width_come_back(tmp_path):
    from handwired.judge.game.catalogue import puzzles_dir

    doc = json.loads((puzzles_dir() / "solutions" / "xor.json").read_text())
    doc["blocks"][0]["mlp"]["hidden"] = doc["blocks"][0]["mlp"]["hidden"] + ["spare"]  # an all-zero unit at the end
    model, problems = parse(doc, "xor.json")
    assert problems == []
    export_folder(model, tmp_path / "xor-tl")
    back = import_folder(tmp_path / "xor-tl", tmp_path / "xor.json")
    assert back.axes("blocks[0].mlp.c_fc.w")[1].labels == ("ab", "ba", "spare")
    assert back.written.entries.keys() == model.written.entries.keys()
    for path in model.written.entries:  # every matrix the same shape and numbers, the spare unit's zeros included
        assert np.array_equal(locate(back.params, path), locate(model.params, path)), path


def test_a_deeply_nested_config_is_one_line(tmp_path):
    folder = exported(load("aab"), tmp_path)
    (folder / "config.json").write_text("[" * 5000)
    line = user_error("import", str(folder), "-o", str(tmp_path / "x.json"))  # exit code 2, one line
    # Python 3.11's json overflows on this nesting; 3.13's reaches the end and names the position
    assert line in (f"error: {folder / 'config.json'}: not valid JSON for handwired: nested too deeply",
                    f"error: {folder / 'config.json'}: not valid JSON: Expecting value (line 1, column 5001)")
