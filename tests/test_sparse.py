"""Sparse, labelled matrices: the same model as the dense form, lossless conversion, and one-line errors."""

import copy
import json

import numpy as np
import pytest
from reference import params_to_document, random_params

from handwired.weightfile import dumps, load, parse, starter_document
from handwired.weightfile import forms as convert


def params_equal(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(params_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(params_equal(x, y) for x, y in zip(a, b))
    return np.array_equal(a, b)


def parsed(doc):
    model, problems = parse(doc, "model.json")
    assert problems == [], problems
    return model


def only_problem(doc):
    model, problems = parse(doc, "model.json")
    assert model is None and len(problems) == 1, problems
    return problems[0]


@pytest.fixture
def sparse_doc(aab_doc):
    return convert.document(parsed(aab_doc), "sparse")


def test_bundled_sparse_aab_is_the_dense_model_number_for_number(aab_doc):
    bundled = load("aab")
    dense = parsed(aab_doc)
    assert params_equal(bundled.params, dense.params)
    # and written the same way: the same expressions in the same cells
    for path, written in dense.written.entries.items():
        assert written.tolist() == bundled.written.entries[path].tolist(), path


def test_bundled_aab_is_written_by_label(aab_doc):
    doc = json.loads(dumps(load("aab").written.document))
    c_attn = doc["blocks"][0]["attn"]["c_attn"]["w"]
    assert c_attn["p1"] == {"q0": "Lg", "q1": "Lg", "k1": 1}  # the query at p1 looks for keys p0 and p1
    assert c_attn["a"] == {"v7": 1} and c_attn["b"] == {"v7": -1}
    assert doc["blocks"][0]["attn"]["c_proj"] == {"w": {"z7": {"a": "-Lg", "b": "Lg"}}, "b": {"a": "Lg"}}


def test_sparse_entries_land_where_the_labels_say(sparse_doc):
    model = parsed(sparse_doc)
    w = model.params["blocks"][0]["attn"]["c_attn"]["w"]  # rows: dims p0…p4 a b out; columns q0…q7 k0…k7 v0…v7
    assert w[1, 0] == w[1, 1] == 1024 and w[1, 8 + 1] == 1 and w[5, 16 + 7] == 1 and w[6, 16 + 7] == -1
    assert np.count_nonzero(w) == 16


def test_dense_sparse_dense_keeps_numbers_and_expressions(aab_doc):
    aab_doc["constants"]["half"] = "Lg/2"
    aab_doc["wpe"][2][7] = "half - 1"
    aab_doc["blocks"][0]["attn"]["c_attn"]["w"][0][3] = "Lg - Lg"  # an expression that comes to 0 is kept
    dense = parsed(aab_doc)
    sparse = parsed(convert.document(dense, "sparse"))
    again = parsed(convert.document(sparse, "dense"))
    for model in (sparse, again):
        assert params_equal(model.params, dense.params)
        assert model.written.constants == dense.written.constants
        for path, written in dense.written.entries.items():
            assert written.tolist() == model.written.entries[path].tolist(), path
    assert sparse.written.entries["wpe"][2, 7] == "half - 1"
    assert convert.document(sparse, "sparse")["wpe"]["2"] == {"p2": 1, "out": "half - 1"}


@pytest.mark.parametrize("seed", range(4))
def test_round_trip_of_random_models_with_layernorm_and_mlp(seed):
    rng = np.random.default_rng(seed)
    params = random_params(rng, n_vocab=3, n_ctx=5, n_embd=8, n_layer=2, n_hidden=6)
    params["blocks"][0]["attn"]["c_attn"]["w"][rng.random((8, 24)) < 0.7] = 0  # mostly zero, as by hand
    dense = parsed(params_to_document(params, 2, "xyz", 5))
    sparse_text = dumps(convert.document(dense, "sparse"))
    sparse = parsed(json.loads(sparse_text))
    assert params_equal(sparse.params, dense.params)
    assert json.loads(sparse_text)["blocks"][1]["mlp"]["hidden"] == 6  # a sparse MLP says its width
    dense_again = parsed(json.loads(dumps(convert.document(sparse, "dense"))))
    assert params_equal(dense_again.params, dense.params)
    assert dumps(convert.document(dense_again, "sparse")) == sparse_text


def test_rows_and_vectors_may_mix_forms(sparse_doc):
    sparse_doc["wpe"] = [{"p0": 1}, {"p1": 1}, [0, 0, 1, 0, 0, 0, 0, 0], {"3": 1}, {"p4": 1}]
    sparse_doc["wte"]["a"] = [0, 0, 0, 0, 0, 1, 0, 0]
    model = parsed(sparse_doc)
    assert np.array_equal(model.params["wpe"][:, :5], np.eye(5))
    assert np.array_equal(model.params["wte"][0], np.eye(8)[5])


def test_q_k_v_columns_are_numbered_across_heads():
    doc = starter_document("ab", 3, 4, n_head=2)
    doc["blocks"][0]["attn"]["c_attn"]["w"] = {"d0": {"q2": 1, "k3": 2, "v1": 3}}
    doc["blocks"][0]["attn"]["c_proj"]["w"] = {"z3": {"d1": 4}}
    model = parsed(doc)
    w = model.params["blocks"][0]["attn"]["c_attn"]["w"]
    assert (w[0, 2], w[0, 4 + 3], w[0, 8 + 1]) == (1, 2, 3)  # q2 is head 1's first query dim (d_head 2)
    assert model.params["blocks"][0]["attn"]["c_proj"]["w"][3, 1] == 4


def test_mlp_hidden_units_by_name(sparse_doc):
    sparse_doc["blocks"][0]["mlp"] = {
        "hidden": ["same", "differ"],
        "c_fc": {"w": {"a": {"same": 1}}, "b": {"differ": -1}},
        "c_proj": {"w": {"differ": {"out": 2}}},
    }
    mlp = parsed(sparse_doc).params["blocks"][0]["mlp"]
    assert mlp["c_fc"]["w"].shape == (8, 2) and mlp["c_fc"]["w"][5, 0] == 1 and mlp["c_fc"]["b"].tolist() == [0, -1]
    assert mlp["c_proj"]["w"][1, 7] == 2


def test_starter_is_a_few_lines_and_all_zero():
    doc = starter_document("abc", 6, 12, n_head=2, n_layer=2)
    text = dumps(doc)
    assert len(text.splitlines()) < 40 and '"wte": {}' in text
    model = parsed(json.loads(text))
    assert model.params["wte"].shape == (3, 12) and not model.params["wte"].any()
    assert model.params["blocks"][1]["attn"]["c_attn"]["w"].shape == (12, 36)


@pytest.mark.parametrize(
    "edit,expected",
    [
        (lambda d: d["wte"].update(c={"a": 1}),
         "wte.c: unknown row label 'c'; expected one per vocab token: a, b, or an index 0, 1"),
        (lambda d: d["wte"]["a"].update(q=1),
         "wte.a.q: unknown column label 'q'; expected one per residual dim: p0…p4, a, b, out, or an index 0…7"),
        (lambda d: d["wte"]["a"].update({"5": 2}), "wte.a.5: '5' is the same entry as 'a', given twice"),
        (lambda d: d["wpe"].update({"7": {}}),
         "wpe.7: row index 7 is out of range; expected one per position, n_ctx: 0…4"),
        (lambda d: d["blocks"][0]["attn"]["c_attn"]["w"]["p1"].update(q9=1),
         "blocks[0].attn.c_attn.w.p1.q9: unknown column label 'q9'; expected q, k, v: 3 × n_embd: q0…q7, k0…k7, v0…v7, "
         "or an index 0…23"),
        (lambda d: d["blocks"][0]["attn"]["c_proj"]["w"].update(v7={}),
         "blocks[0].attn.c_proj.w.v7: unknown row label 'v7'; expected one per attention output dim, "
         "heads concatenated: z0…z7"),
        (lambda d: d["blocks"][0]["attn"]["c_proj"]["b"].update(x=1),
         "blocks[0].attn.c_proj.b.x: unknown entry label 'x'"),
        (lambda d: d["blocks"][0]["attn"]["c_proj"].update(b=5),
         "blocks[0].attn.c_proj.b: expected a list of 8 numbers (one per residual dim) "
         "or an object of entries by label; found the number 5"),
        (lambda d: d.update(wte=3),
         "wte: expected a list of 2 rows (one per vocab token) or an object of rows by label"),
        (lambda d: d["wte"].update(a=[1, 2]), "wte.a: 2 numbers, expected 8 (one per residual dim)"),
        (lambda d: d["wte"]["a"].update(b="Lh"), "wte.a.b: 'Lh': unknown constant 'Lh' (constants: Lg)"),
        (lambda d: d.update(dims=["p0", "p1", "p2", "p3", "p4", "a", "b", "3"]),
         "dims[7]: '3' is a number but labels entry 7; in a sparse matrix '3' would mean two things"),
        (lambda d: d["blocks"][0].update(mlp={"c_fc": {"w": {}}, "c_proj": {"w": {}}}),
         "blocks[0].mlp: missing 'hidden'"),
        (lambda d: d["blocks"][0].update(mlp={"hidden": ["x", "x"], "c_fc": {"w": {}}, "c_proj": {"w": {}}}),
         "blocks[0].mlp.hidden[1]: 'x' appears twice"),
        (lambda d: d["blocks"][0].update(mlp={"hidden": 2, "c_fc": {"w": {"a": {"h2": 1}}}, "c_proj": {"w": {}}}),
         "blocks[0].mlp.c_fc.w.a.h2: unknown column label 'h2'; expected one per hidden unit: h0, h1, "
         "or an index 0, 1"),
    ],
)
def test_each_sparse_problem_is_one_line_with_its_path(sparse_doc, edit, expected):
    edit(sparse_doc)
    problem = only_problem(sparse_doc)
    assert expected in problem, problem
    assert "\n" not in problem


def test_a_sparse_file_cannot_ask_for_a_huge_model(sparse_doc):
    sparse_doc.update(n_embd=4096, dims=[f"d{i}" for i in range(4096)], blocks=[sparse_doc["blocks"][0]] * 20)
    assert "more than handwired supports" in only_problem(sparse_doc)


def test_random_damage_to_a_sparse_file_is_reported_never_raised(sparse_doc):
    import random

    rng = random.Random(1)
    junk = [None, True, 0, -1, 2.5, "Lg", "-(", "x", "q0", "9", "", [], [1], {}, {"a": 1}, {"zz": 1}, {"0": [1]}]

    def nodes(value, path=()):
        yield path
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            yield from nodes(item, path + (key,))

    paths = list(nodes(sparse_doc))[1:]
    for _ in range(1000):
        doc = copy.deepcopy(sparse_doc)
        *parent, last = rng.choice(paths)
        node = doc
        for key in parent:
            node = node[key]
        node[last] = rng.choice(junk)
        if rng.random() < 0.3 and isinstance(node, dict):
            node[rng.choice(["p9", "q0", "5", "zz", "b"])] = rng.choice(junk)
        model, problems = parse(doc)
        assert (model is None) == bool(problems)
        assert all(isinstance(p, str) and "\n" not in p for p in problems)


# ---------------------------------------------------------------- the CLI


def test_cli_convert_writes_a_new_file_and_refuses_to_overwrite(tmp_path, write_json, aab_doc):
    from test_cli import invoke, user_error

    dense = write_json(aab_doc, "dense.json")
    out = tmp_path / "sparse.json"
    result = invoke("weights", "convert", str(dense), "--to", "sparse", "-o", str(out))
    assert result.exit_code == 0 and "344 entries, 26 of them non-zero" in result.stdout
    assert params_equal(load(str(out)).params, load(str(dense)).params)
    before = out.read_text()
    assert "already exists; use --force" in user_error("weights", "convert", str(dense), "--to", "dense", "-o",
                                                      str(out))
    assert out.read_text() == before
    assert "the weight file being read" in user_error("weights", "convert", str(dense), "--to", "dense", "-o",
                                                     str(dense), "--force")
    assert "expected sparse or dense" in user_error("weights", "convert", str(dense), "--to", "csv", "-o",
                                                   str(tmp_path / "x"))
    assert invoke("weights", "convert", str(out), "--to", "dense", "-o",
                  str(out.with_name("again.json"))).exit_code == 0
    assert params_equal(load(str(out.with_name("again.json"))).params, load(str(dense)).params)


def test_cli_show_sparse_prints_the_file_to_write_back(aab_doc):
    from test_cli import invoke

    text = invoke("weights", "show", "aab", "--sparse").stdout
    assert params_equal(parsed(json.loads(text)).params, parsed(aab_doc).params)
    assert '"p1": {"q0": "Lg", "q1": "Lg", "k1": 1}' in text


def test_cli_weights_new_writes_a_sparse_starter(tmp_path):
    from test_cli import invoke

    out = tmp_path / "starter.json"
    assert invoke("weights", "new", "-o", str(out), "--vocab", "abc", "--n-embd", "12", "--n-ctx", "6").exit_code == 0
    doc = json.loads(out.read_text())
    assert doc["wte"] == {} and doc["blocks"][0]["attn"]["c_attn"] == {"w": {}}
    assert not load(str(out)).params["wpe"].any()
