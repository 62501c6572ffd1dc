import copy
import json
from pathlib import Path

import pytest

# The bundled aab model is written sparse; this dense copy of it keeps the tests honest about both forms.
AAB_FILE = Path(__file__).resolve().parent / "data" / "aab_dense.json"


@pytest.fixture
def aab_doc():
    """The bundled aab weight file as a fresh, editable JSON document."""
    return copy.deepcopy(json.loads(AAB_FILE.read_text(encoding="utf-8")))


@pytest.fixture
def write_json(tmp_path):
    def write(doc, name="model.json"):
        path = tmp_path / name
        path.write_text(json.dumps(doc), encoding="utf-8")
        return path

    return write


PUZZLE_FIXTURES = Path(__file__).resolve().parent / "data" / "puzzles"


@pytest.fixture(autouse=True)
def handwired_home(tmp_path, monkeypatch):
    """Progress goes to a fresh folder in every test, never the user's own."""
    home = tmp_path / "home"
    monkeypatch.setenv("HANDWIRED_HOME", str(home))
    return home


@pytest.fixture
def fixture_puzzles(monkeypatch):
    """Point handwired at the test puzzles in tests/data/puzzles instead of the bundled ones."""
    from handwired.judge.game import catalogue

    monkeypatch.setattr(catalogue, "puzzles_dir", lambda: PUZZLE_FIXTURES)
    return PUZZLE_FIXTURES
