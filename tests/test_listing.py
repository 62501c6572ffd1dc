"""The list's light reader (judge/game/listing.py): only what `puzzles list` shows, with the whole reader's checks.

It must agree with the whole reader (judge/game/puzzle.py) on every figure the list shows, refuse a broken statement
in the very line the list gave when it read every statement whole, and load nothing of the rule kinds, the
domains, the engine or numpy.
"""

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import invoke, user_error
from test_statement_corruption import corrupt

from handwired.errors import HandwiredError
from handwired.judge.game import catalogue
from handwired.judge.game.catalogue import bundled_puzzles, load_puzzle, puzzles_dir
from handwired.judge.game.listing import read_listed
from handwired.judge.game.puzzle import TEMPLATE, read_statement
from handwired.weightfile.axes import printable

REAL_LOOKUP = puzzles_dir  # kept before any test points the catalogue elsewhere
BUNDLED = bundled_puzzles()  # name -> statement
FIXTURES = Path(__file__).resolve().parent / "data" / "puzzles"
NOT_FOR_THE_LIST = ("handwired.judge.game.puzzle", "handwired.judge.kinds.rules", "handwired.judge.kinds.spec",
                    "handwired.judge.kinds.answers", "handwired.judge.kinds.domains",
                    "handwired.judge.checking.contexts",
                    "handwired.engine", "handwired.weightfile.parse", "handwired.weightfile.model",
                    "handwired.weightfile.files", "handwired.weightfile.entries", "handwired.weightfile.expr",
                    "numpy")


@pytest.mark.parametrize("command", [["puzzles"], ["puzzles", "list"], ["puzzles", "list", "--json"]])
def test_the_list_loads_no_rule_domain_engine_or_numpy(command, handwired_home):
    """In a fresh interpreter: the list reads every bundled statement and loads none of the machinery that
    judges one (nor numpy, which only a model needs)."""
    program = (f"import sys\nsys.argv = ['handwired', *{command!r}]\n"
               "from handwired.cli import main\n"
               "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
               "print(' '.join(sorted(sys.modules)), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert "induction" in done.stdout and "add" in done.stdout
    loaded = set(done.stderr.split())
    assert {"handwired.judge.game.listing", "handwired.judge.game.statement", "handwired.judge.game.catalogue",
            "handwired.views.catalogue", "handwired.weightfile.checker"} <= loaded  # the probe is real
    for prefix in NOT_FOR_THE_LIST:
        assert not [module for module in loaded if module == prefix or module.startswith(prefix + ".")], prefix


def test_the_probe_sees_what_a_whole_statement_loads(handwired_home):
    """The same probe on `puzzles show`, which reads a statement whole: it finds the rule, domain and numpy."""
    program = ("import sys\nsys.argv = ['handwired', 'puzzles', 'show', 'add']\nfrom handwired.cli import main\n"
               "try:\n    main()\nexcept SystemExit:\n    pass\nprint(' '.join(sorted(sys.modules)), file=sys.stderr)")
    loaded = set(subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                                check=True).stderr.split())
    assert {"handwired.judge.game.puzzle", "handwired.judge.kinds.domains", "handwired.judge.kinds.spec",
            "numpy"} <= loaded


def _agree(path: Path) -> None:
    """The light reader's figures are the whole reader's, and the statement's own (read as plain JSON)."""
    entry, problems = read_listed(path)
    assert problems == [] and entry is not None
    puzzle = read_statement(path, named_by_file=True)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert (entry.name, entry.level, entry.title, entry.summary) == (puzzle.name, puzzle.level, puzzle.title,
                                                                      puzzle.summary)
    assert (entry.name, entry.level, entry.title, entry.summary) == (doc["name"], doc["level"], doc["title"],
                                                                      doc["summary"])
    assert entry.caps == puzzle.caps
    assert (entry.caps.n_embd, entry.caps.n_head, entry.caps.n_layer) == (
        doc["caps"]["n_embd"], doc["caps"]["n_head"], doc["caps"]["n_layer"])
    assert entry.caps.mlp == (doc["caps"]["mlp"] is not False)
    assert entry.n_hints == len(puzzle.hints) == len(doc["hints"])
    assert entry.par == puzzle.par and entry.record == puzzle.record
    for key in ("par", "record"):
        score = getattr(entry, key)
        assert (score is None) == (key not in doc)
        assert score is None or (score.parameters, score.margin) == (doc[key]["parameters"], doc[key]["margin"])
    assert entry.key == entry.name


@pytest.mark.parametrize("name", list(BUNDLED))
def test_the_light_reader_agrees_with_the_whole_one_on_every_bundled_statement(name):
    _agree(BUNDLED[name])


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda path: path.stem)
def test_the_light_reader_agrees_on_the_test_statements(path):
    _agree(path)


def _template(name: str, **changes) -> dict:
    doc = json.loads(TEMPLATE.read_text(encoding="utf-8"))
    doc["name"] = name
    doc.update(changes)
    return doc


WRITTEN = {  # statements the tests write: each part the list shows, in each of its forms
    "plain": {},
    "wide-mlp": {"caps": {"n_embd": 12, "n_head": 3, "n_layer": 2, "mlp": 40}},
    "any-mlp": {"caps": {"n_embd": 8, "n_head": 2, "n_layer": 1, "mlp": True}},
    "scored": {"par": {"parameters": 30, "n_embd": 8, "n_head": 1, "n_layer": 1, "margin": 2.5},
               "record": {"parameters": 12, "n_embd": 4, "n_head": 1, "n_layer": 1, "margin": 0.25}},
    "one-hint": {"hints": ["Look back."], "level": 9, "# note": "a comment key is no part of the statement"},
}


@pytest.mark.parametrize("name", list(WRITTEN))
def test_the_light_reader_agrees_on_statements_the_tests_write(name, tmp_path):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(_template(name, **WRITTEN[name])), encoding="utf-8")
    _agree(path)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """An empty folder of puzzles the catalogue lists (as a test folder is given, not through the environment)."""
    folder = tmp_path / "puzzles"
    folder.mkdir()
    monkeypatch.setattr(catalogue, "puzzles_dir", lambda: folder)
    return folder


def _whole_error(folder: Path) -> str | None:
    """What the list said before it read light: the first statement the whole reader refuses, as the CLI prints
    it; None when every one reads."""
    try:
        catalogue.catalogue()
    except HandwiredError as error:
        return f"error: {printable(str(error))}"
    return None


LISTED_PARTS = ("name", "level", "title", "summary", "caps", "hints", "par", "record", "format")


def test_a_broken_statement_is_refused_in_the_line_the_whole_reader_gives(folder):
    """Random corruptions of every bundled statement, each listed in a folder of its own: when the list refuses
    one, it is in the whole reader's very line (its first problem and how many more); when it lists one the whole
    reader refuses, the problem is in a part the list does not read (the rule, the domain, the examples...)."""
    rng = random.Random(22)
    statements = {name: json.loads(path.read_text(encoding="utf-8")) for name, path in BUNDLED.items()}
    refused = listed_anyway = 0
    for _ in range(150):
        name = rng.choice(sorted(statements))
        for old in folder.glob("*.json"):
            old.unlink()
        path = folder / f"{name}.json"
        path.write_text(corrupt(statements[name], rng), encoding="utf-8")
        whole = _whole_error(folder)
        result = invoke("puzzles", "list")
        if result.exit_code == 2:
            refused += 1
            assert result.stderr.strip() == whole, path.read_text()[:300]
        else:
            assert result.exit_code == 0 and name in result.stdout, result.output
            if whole is not None:
                listed_anyway += 1
                part = whole.removeprefix(f"error: {path}: ").split(":")[0].split(".")[0].split("[")[0]
                assert part not in LISTED_PARTS and not part.startswith("(top level)"), whole
    assert refused >= 60 and listed_anyway >= 10, (refused, listed_anyway)  # both ways were taken, many times


def test_a_statement_that_is_no_json_or_no_statement_is_refused_alike(folder):
    for text in ('{"format": "handwired-puzzle/1", "name": ', "[1, 2]", '{"format": "handwired/1"}', "x" * 10):
        (folder / "broken.json").write_text(text, encoding="utf-8")
        assert user_error("puzzles", "list") == _whole_error(folder) is not None


def test_one_broken_statement_among_good_ones_names_its_file(folder):
    for path in FIXTURES.glob("*.json"):
        shutil.copy(path, folder)
    doc = json.loads((folder / "aab.json").read_text(encoding="utf-8"))
    doc["caps"]["n_head"] = 3  # 8 is not divisible by 3
    doc["title"] = 7
    (folder / "aab.json").write_text(json.dumps(doc), encoding="utf-8")
    line = user_error("puzzles", "list")
    assert line == _whole_error(folder)
    assert line == f"error: {folder / 'aab.json'}: title: expected a string; found the number 7 (and 1 more)"


def test_a_folder_given_by_the_environment_is_read_whole(tmp_path, monkeypatch):
    """Statements someone is writing ($HANDWIRED_PUZZLES): a broken rule, which the light reader never reads, is
    refused by the list in the line `puzzles show` gives, as before; in the bundled folder it would be listed."""
    monkeypatch.setattr(catalogue, "puzzles_dir", REAL_LOOKUP)  # the real lookup, which reads the environment
    folder = tmp_path / "mine"
    folder.mkdir()
    doc = json.loads((FIXTURES / "aab.json").read_text(encoding="utf-8"))
    doc["rule"] = {"kind": "nope"}
    (folder / "aab.json").write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.setenv("HANDWIRED_PUZZLES", str(folder))
    line = user_error("puzzles", "list")
    assert line.startswith(f"error: {folder / 'aab.json'}: rule") and line == _whole_error(folder)
    assert user_error("puzzles", "show", "aab") == line
    monkeypatch.delenv("HANDWIRED_PUZZLES")
    monkeypatch.setattr(catalogue, "puzzles_dir", lambda: folder)
    assert invoke("puzzles", "list").exit_code == 0  # read light: only what the list shows
    with pytest.raises(HandwiredError, match="rule"):
        load_puzzle("aab")



@pytest.mark.parametrize("columns", ["100", "79"])
def test_the_list_prints_the_same_read_light_or_whole(columns, monkeypatch):
    """The bundled folder listed light and listed whole (named by $HANDWIRED_PUZZLES): the same table and the same
    JSON, with a solved puzzle and its mark among them."""
    monkeypatch.setattr(catalogue, "puzzles_dir", REAL_LOOKUP)
    monkeypatch.setenv("COLUMNS", columns)
    assert invoke("puzzles", "check", "ab", str(catalogue.solution_path("ab"))).exit_code == 0
    light = [invoke("puzzles").stdout, invoke("puzzles", "list", "--json").stdout]
    monkeypatch.setenv("HANDWIRED_PUZZLES", str(REAL_LOOKUP()))
    whole = [invoke("puzzles").stdout, invoke("puzzles", "list", "--json").stdout]
    assert light == whole
    assert f"1 of {len(BUNDLED)} solved" in light[0]
    assert [entry["name"] for entry in json.loads(light[1])["puzzles"] if entry["solved"]] == ["ab"]


def test_a_statement_needs_two_tokens(tmp_path):
    # with one token every next token is right: nothing would be judged, yet the check would read "proved"
    path = tmp_path / "one.json"
    path.write_text(json.dumps(_template("one", vocab=["a"], rule={"kind": "pattern", "pattern": "a"},
                                         domain={"kind": "every_string"})), encoding="utf-8")
    with pytest.raises(HandwiredError, match=r"one.json: vocab: 1 token: a puzzle needs at least two \(with one"):
        read_statement(path)
