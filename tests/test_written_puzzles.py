"""Puzzles people write: the README's statement, written out by hand, plays end to end like a bundled one."""

import json
import re
from pathlib import Path

import pytest
from test_cli import invoke, user_error

README = Path(__file__).resolve().parent.parent / "puzzles" / "README.md"


def readme_file(name: str) -> str:
    """A file the puzzles README shows (a ```json file=NAME block)."""
    found = re.search(rf"^```json file={re.escape(name)}\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)
    assert found, f"puzzles/README.md shows no {name}"
    return found.group(1)


@pytest.fixture
def written(tmp_path, handwired_home):
    (tmp_path / "repeat.json").write_text(readme_file("repeat.json"), encoding="utf-8")
    (tmp_path / "repeat-answer.json").write_text(readme_file("repeat-answer.json"), encoding="utf-8")
    return tmp_path


def test_the_readme_statement_plays_end_to_end(written, handwired_home):
    statement, answer = str(written / "repeat.json"), str(written / "repeat-answer.json")
    shown = invoke("puzzles", "show", statement)
    assert shown.exit_code == 0 and "Say it again" in shown.stdout and "(3 contexts)" in " ".join(shown.stdout.split())

    starter = written / "mine.json"
    assert invoke("puzzles", "start", statement, "-o", str(starter)).exit_code == 0
    failed = invoke("puzzles", "check", statement, str(starter))
    assert failed.exit_code == 1 and re.search(r"^3 +failed", failed.stdout, re.M)

    hint = invoke("puzzles", "hint", statement)
    assert "hint 1 of 1: At the bar, the letter is one position back" in hint.stdout

    solved = invoke("puzzles", "check", statement, answer)
    assert solved.exit_code == 0 and "Solved puzzle 'repeat'!" in solved.stdout
    assert "How the reference does it" not in solved.stdout  # a written puzzle has no reference to point at
    assert invoke("check", "--puzzle", statement, "-w", answer).exit_code == 0

    progress = json.loads((handwired_home / "progress.json").read_text())
    keys = [key for key in json.dumps(progress).split('"') if key.startswith("repeat#")]
    assert keys and all(re.fullmatch(r"repeat#[0-9a-f]{12}", key) for key in keys)


def test_an_edited_statement_is_a_new_puzzle_with_its_own_progress(written):
    statement = written / "repeat.json"
    assert invoke("puzzles", "check", str(statement), str(written / "repeat-answer.json")).exit_code == 0
    doc = json.loads(statement.read_text())
    doc["hints"].append("The value can carry the letter.")
    edited = written / "repeat-v2.json"  # a new file name, the same puzzle name: allowed for a written statement
    edited.write_text(json.dumps(doc))
    hint = invoke("puzzles", "hint", str(edited))
    assert "hint 1 of 2" in hint.stdout  # nothing carried over from the first statement's progress


def test_a_written_puzzle_has_no_reference_to_spoil(written):
    line = user_error("puzzles", "solution", str(written / "repeat.json"), "--spoil")
    assert line == f"error: puzzle {str(written / 'repeat.json')!r} has no reference solution"


def test_puzzles_new_writes_a_template_that_validates_and_is_not_overwritten(tmp_path, handwired_home):
    path = tmp_path / "mine.json"
    assert invoke("puzzles", "new", "-o", str(path)).exit_code == 0
    doc = json.loads(path.read_text())
    assert doc["name"] == "mine" and any(key.startswith("#") for key in doc)  # commented
    assert invoke("puzzles", "show", str(path)).exit_code == 0
    starter = tmp_path / "mine-answer.json"
    assert invoke("puzzles", "start", str(path), "-o", str(starter)).exit_code == 0
    assert invoke("puzzles", "check", str(path), str(starter)).exit_code == 1  # zeros solve nothing
    assert "already exists" in user_error("puzzles", "new", "-o", str(path))
    assert invoke("puzzles", "new", "-o", str(path), "--force").exit_code == 0
