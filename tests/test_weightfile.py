"""Reading, validating and writing weight files."""

import json

import numpy as np
import pytest
from test_cli import invoke

from handwired.errors import HandwiredError
from handwired.weightfile import bundled_models, dumps, load, parse, starter_document, write_new
from handwired.weightfile.expr import ExpressionError, evaluate


@pytest.mark.parametrize(
    "text,value",
    [("Lg", 1024), ("-Lg", -1024), ("Lg/2", 512), ("2*Lg+1", 2049), ("-(Lg - 4) / 4", -255), ("1e3", 1000),
     ("--2", 2), ("2 * (3 + 4) * .5", 7), ("−Lg", -1024), ("3×4÷2", 6), ("1-2-3", -4), ("8/2/2", 2),
     ("sqrt(16)", 4), ("-sqrt(Lg)", -32), ("2*sqrt(9)+1", 7), ("exp(0)", 1), ("ln(1)", 0), ("ln(exp(2))", 2),
     ("Lg*sqrt(4)/2", 1024)],
)
def test_expressions(text, value):
    assert evaluate(text, {"Lg": 1024.0}) == value


@pytest.mark.parametrize(
    "text,message",
    [("Lh", "unknown constant 'Lh' (constants: Lg)"), ("2 +", "ends too early"), ("(1", "missing ')'"),
     ("1/0", "division by zero"), ("__import__('os')", "unexpected"), ("1 2", "unexpected '2'"), ("", "empty"),
     ("2**3", "unexpected '*'"), ("1e308*10", "finite"), ("sqrt(-1)", "sqrt of a negative number (-1)"),
     ("ln(0)", "ln of a number that is not positive (0)"), ("exp(1000)", "exp(1000) is too large"),
     ("sqrt 4", "sqrt is a function: write sqrt(…)"), ("sqrt(", "ends too early")],
)
def test_bad_expressions(text, message):
    with pytest.raises(ExpressionError, match=None) as error:
        evaluate(text, {"Lg": 1024.0})
    assert message in str(error.value)


def problems_of(doc):
    model, problems = parse(doc)
    assert (model is None) == bool(problems)
    return problems


def test_bundled_aab_is_found_and_valid(aab_doc):
    assert "aab" in bundled_models()
    assert problems_of(aab_doc) == []
    model = load("aab")
    assert model.written.constants == {"Lg": 1024.0}
    assert model.dims == ("p0", "p1", "p2", "p3", "p4", "a", "b", "out")
    assert model.params["blocks"][0]["attn"]["c_proj"]["w"][7, 5] == -1024


def test_missing_bias_means_zeros(aab_doc):
    del aab_doc["blocks"][0]["attn"]["c_attn"]["b"]
    model, problems = parse(aab_doc)
    assert problems == []
    assert np.all(model.params["blocks"][0]["attn"]["c_attn"]["b"] == 0)


@pytest.mark.parametrize(
    "edit,expected",
    [
        (lambda d: d["blocks"][0]["attn"]["c_attn"]["w"][3].pop(),
         "blocks[0].attn.c_attn.w[3]: 23 numbers, expected 24"),
        (lambda d: d["wte"].pop(), "wte: 1 rows, expected 2 (one per vocab token)"),
        (lambda d: d["blocks"][0]["attn"].update(c_atn=d["blocks"][0]["attn"].pop("c_attn")),
         "blocks[0].attn.c_atn: unknown key 'c_atn' (did you mean 'c_attn'?"),
        (lambda d: d["wpe"][1].__setitem__(2, "x"), "wpe[1][2]: 'x': unknown constant 'x' (constants: Lg)"),
        (lambda d: d["wpe"][1].__setitem__(2, True), "wpe[1][2]: expected a number or an expression"),
        (lambda d: d["wpe"][1].__setitem__(2, None), "found null"),
        (lambda d: d["wpe"][0].__setitem__(0, float("nan")), "wpe[0][0]: expected a finite number; found nan"),
        (lambda d: d["wpe"][0].__setitem__(0, float("inf")), "wpe[0][0]: expected a finite number; found inf"),
        (lambda d: d["wpe"][0].__setitem__(0, 10**400),
         "wpe[0][0]: expected a finite number; found a number too large"),
        (lambda d: d.update(n_head=3), "n_head: n_embd 8 is not divisible by n_head 3"),
        (lambda d: d.update(n_ctx=0), "n_ctx: expected a whole number ≥ 1; found 0"),
        (lambda d: d.update(n_ctx=4.5), "n_ctx: expected a whole number ≥ 1; found the number 4.5"),
        (lambda d: d.update(n_embd=10**9), "n_embd: 1000000000 is more than handwired supports"),
        (lambda d: d.update(format="handwired/2"), "format: expected 'handwired/1'"),
        (lambda d: d.pop("wte"), "(top level): missing 'wte'"),
        (lambda d: d.update(vocab=["a", "a"]), "vocab[1]: 'a' appears twice"),
        (lambda d: d.update(vocab=["ab", "c"]), "vocab[0]: expected a single character"),
        (lambda d: d.update(example="abc"), "example: 'c' (position 2) is not in the vocabulary a, b"),
        (lambda d: d.update(dims=["x"] * 3), "dims: expected a list of 8 labels"),
        (lambda d: d.update(constants={"Lg": "2*Lh"}), "constants.Lg: '2*Lh': unknown constant 'Lh'"),
        (lambda d: d["blocks"][0].update(ln_2={"g": [1] * 8}), "blocks[0].ln_2: given, but the block has no mlp"),
        (lambda d: d["blocks"][0].update(mlp={"c_fc": {"w": [[0] * 4] * 8}, "c_proj": {"w": [[0] * 8] * 3}}),
         "blocks[0].mlp.c_proj.w: 3 rows, expected 4"),
        (lambda d: d.update(blocks={}), "blocks: expected a list of blocks; found an object"),
        (lambda d: d.update(ln_f={"g": [1] * 7}), "ln_f.g: 7 numbers, expected 8"),
    ],
)
def test_each_problem_names_its_json_path(aab_doc, edit, expected):
    edit(aab_doc)
    problems = problems_of(aab_doc)
    assert any(expected in problem for problem in problems), problems


def test_every_problem_is_reported_not_just_the_first(aab_doc):
    aab_doc["wte"][0].pop()
    aab_doc["wpe"][4][0] = "Lx"
    aab_doc["oops"] = 1
    problems = problems_of(aab_doc)
    assert len(problems) == 3
    assert [p.split(":")[0] for p in problems] == ["oops", "wte[0]", "wpe[4][0]"]


def test_constants_may_use_earlier_constants(aab_doc):
    aab_doc["constants"] = {"Lg": 1024, "half": "Lg/2"}
    aab_doc["wpe"][0][0] = "half"
    model, _ = parse(aab_doc)
    assert model.params["wpe"][0, 0] == 512


def test_load_errors_are_one_line_with_the_file(tmp_path, write_json, aab_doc):
    path = tmp_path / "broken.json"
    path.write_text('{"format": "handwired/1",\n  "vocab": ["a" "b"]}')
    with pytest.raises(HandwiredError,
                       match=r"broken.json: not valid JSON: Expecting ',' delimiter \(line 2, column 17\)"):
        load(str(path))
    with pytest.raises(HandwiredError, match="no such file, and no bundled model of that name"):
        load(str(tmp_path / "missing.json"))
    aab_doc["wte"][0].pop()
    aab_doc["wte"][1].pop()
    with pytest.raises(HandwiredError) as error:
        load(str(write_json(aab_doc)))
    assert ("model.json: wte[0]: 7 numbers, expected 8 (one per residual dim) (and 1 more: handwired weights validate"
            in str(error.value))
    assert "\n" not in str(error.value)
    path.write_text('{"a": 1, "a": 2}')
    with pytest.raises(HandwiredError, match="key 'a' appears twice"):
        load(str(path))


def test_far_too_large_file_is_refused_without_reading(tmp_path, monkeypatch):
    from handwired.weightfile import jsonfile

    monkeypatch.setattr(jsonfile, "MAX_FILE_BYTES", 100)
    path = tmp_path / "big.json"
    path.write_text("[" + "0," * 100 + "0]")
    with pytest.raises(HandwiredError, match="far too large"):
        load(str(path))


def test_encode_rejects_unknown_characters_and_empty_input():
    model = load("aab")
    assert model.encode("abba").tolist() == [0, 1, 1, 0]
    with pytest.raises(HandwiredError, match=r"'c' \(position 2\) is not in the vocabulary a, b"):
        model.encode("abc")
    with pytest.raises(HandwiredError, match="empty"):
        model.encode("")


def test_starter_document_validates_and_is_all_zero():
    doc = starter_document("xyz", 4, 6, n_head=2, n_layer=2)
    model, problems = parse(doc)
    assert problems == []
    assert model.n_layer == 2 and model.n_head == 2 and model.vocab == ("x", "y", "z")
    assert not np.any(model.params["blocks"][1]["attn"]["c_attn"]["w"])


def test_dumps_round_trips_and_keeps_each_row_on_one_line(aab_doc):
    text = dumps(aab_doc)
    assert json.loads(text) == aab_doc
    assert '    [1, 0, 0, 0, 0, 0, 0, 0],\n' in text


def test_write_new_refuses_to_overwrite_and_is_atomic(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text("my precious weights")
    with pytest.raises(HandwiredError, match="already exists; use force to replace it"):
        write_new(path, "new")
    assert path.read_text() == "my precious weights"
    write_new(path, "new", force=True)
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["mine.json"]  # no temporary file left behind


def _nodes(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _nodes(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _nodes(item, path + (i,))


def test_random_damage_is_always_reported_never_raised(aab_doc):
    """Replace random parts of a valid file with random JSON: parse reports a problem or accepts it."""
    import copy
    import random

    from handwired.engine.forward import forward

    rng = random.Random(0)
    junk = [None, True, 0, -1, 2.5, 1e400, "Lg", "-(", "x", "", [], [1], [[1]], {}, {"w": 1}, "a", ["a", "b", "c"]]
    paths = list(_nodes(aab_doc))[1:]
    for _ in range(1500):
        doc = copy.deepcopy(aab_doc)
        for _ in range(rng.randint(1, 3)):
            *parent, last = rng.choice(paths)
            node = doc
            try:
                for key in parent:
                    node = node[key]
                if rng.random() < 0.2 and isinstance(node, dict):
                    node.pop(last, None)
                else:
                    node[last] = rng.choice(junk)
            except (KeyError, IndexError, TypeError):
                continue
        model, problems = parse(doc)
        assert (model is None) == bool(problems)
        assert all(isinstance(p, str) and "\n" not in p for p in problems)
        if model is not None:
            forward(model.params, np.zeros((1, model.n_ctx), dtype=int), model.n_head)


def test_a_constant_that_fails_to_evaluate_is_reported_once_not_at_each_use(write_json):
    doc = {"format": "handwired/1", "vocab": ["a", "b"], "n_ctx": 2, "n_embd": 2,
           "constants": {"mu": "exp(1000)", "half": "mu/2", "ok": 2},
           "wte": {"a": {"0": "mu"}, "b": {"1": "half*ok"}}, "wpe": {"0": {"0": "mu"}, "1": {"1": "nu"}}, "blocks": []}
    path = write_json(doc)
    result = invoke("weights", "validate", str(path))
    assert result.exit_code == 2
    # the failed constant once; half (which uses it) and the three uses are not problems of their own;
    # an undefined name is still one, with the constants that did evaluate
    assert result.stderr.splitlines() == [
        f"{path}: constants.mu: 'exp(1000)': exp(1000) is too large for a float64",
        f"{path}: wpe.1.1: 'nu': unknown constant 'nu' (constants: ok)",
        "2 problems"]
    with pytest.raises(HandwiredError, match=r"exp\(1000\) is too large for a float64 \(and 1 more"):
        load(str(path))


def test_the_package_names_load_on_first_use_and_keep_their_meaning():
    """`import handwired.weightfile` loads no model, parser or numpy; each name the package gives is its module's
    object, and `parse` stays the function when the module of that name loads first."""
    import subprocess
    import sys

    program = ("import sys, importlib, handwired.weightfile as w\n"
               "assert 'numpy' not in sys.modules and 'handwired.weightfile.model' not in sys.modules\n"
               "import handwired.weightfile.parse\n"
               "from handwired.weightfile import parse\n"
               "assert callable(parse) and parse is sys.modules['handwired.weightfile.parse'].parse\n"
               "for name, home in w.HOMES.items():\n"
               "    assert getattr(w, name) is getattr(importlib.import_module('handwired.weightfile.' + home), name)\n"
               "assert sorted(w.__all__) == sorted(w.HOMES) and w.files.load is w.load\n"
               "try:\n    w.nothing\nexcept AttributeError:\n    print('ok')\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.stdout == "ok\n", done.stderr
