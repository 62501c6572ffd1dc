"""A score cannot be bought with a margin: an answer level with the record on parameters and sizes ties it.

The answer here is the max record (tests/data/records/max.json) with its output constant W ten times larger:
the same non-zero parameters, n_embd, blocks and heads, ten times the margin.
"""

import json
import shutil
from pathlib import Path

import pytest
from test_cli import invoke

from handwired.judge.game import catalogue
from handwired.judge.game import progress as progressing
from handwired.judge.game.catalogue import load_puzzle

RECORD = Path(__file__).resolve().parent / "data" / "records" / "max.json"


@pytest.fixture
def louder(tmp_path):
    """The max record with its output constant W scaled by ten."""
    doc = json.loads(RECORD.read_text())
    doc["constants"]["W"] = 10 * doc["constants"]["W"]
    path = tmp_path / "louder.json"
    path.write_text(json.dumps(doc))
    return str(path)


def words(text):
    return " ".join(text.split())


def rows(text):
    return [line.replace("│", " ").split() for line in text.splitlines()]


def test_ten_times_the_margin_ties_the_record_in_check(louder):
    record = load_puzzle("max").record
    data = json.loads(invoke("puzzles", "check", "max", louder, "--json").stdout)
    assert data["solved"] and data["score"]["parameters"] == record.parameters
    assert data["score"]["margin"] > 9 * record.margin  # ten times, give or take the last token's own logit
    assert data["against_record"] == "tie" and data["against_par"] == "better"
    for args in (("puzzles", "check", "max", louder), ("check", "--puzzle", "max", "-w", louder)):
        verdict = words(invoke(*args).stdout)
        assert "Ties the record." in verdict
        assert "Better than the record" not in verdict and "leanest answer known until now" not in verdict


def test_ten_times_the_margin_ties_your_best_and_keeps_it(louder, handwired_home):
    assert invoke("puzzles", "check", "max", str(RECORD)).exit_code == 0
    stored = progressing.load().best("max")
    result = invoke("puzzles", "check", "max", louder)
    verdict = words(result.stdout)
    assert result.exit_code == 0 and "Ties your best, already recorded." in verdict and "A new best." not in verdict
    assert progressing.load().best("max") == stored  # the first answer's score stays: a tie replaces nothing
    data = json.loads(invoke("puzzles", "check", "max", louder, "--json").stdout)
    assert data["new_best"] is False and data["best"]["margin"] == stored.margin


def test_the_list_marks_a_tied_record_and_recomputes_the_mark_when_the_record_changes(louder, tmp_path,
                                                                                      monkeypatch):
    folder = tmp_path / "puzzles"
    shutil.copytree(catalogue.puzzles_dir(), folder)
    monkeypatch.setattr(catalogue, "puzzles_dir", lambda: folder)
    monkeypatch.setenv("COLUMNS", "80")
    record = load_puzzle("max").record.parameters
    assert invoke("puzzles", "check", "max", louder).exit_code == 0
    out = invoke("puzzles").stdout
    max_row = next(row for row in rows(out) if row[1:2] == ["max"])
    assert max_row[-3:] == ["✓", str(record), "★"]
    assert "★: your best ties or beats the record" in words(out)
    listed = {p["name"]: p for p in json.loads(invoke("puzzles", "--json").stdout)["puzzles"]}
    assert listed["max"]["best_against_record"] == "tie" and listed["ab"]["best_against_record"] is None
    statement = json.loads((folder / "max.json").read_text())
    statement["record"]["parameters"] = record - 1  # a leaner record is found later: the best no longer reaches it
    (folder / "max.json").write_text(json.dumps(statement))
    max_row = next(row for row in rows(invoke("puzzles").stdout) if row[1:2] == ["max"])
    assert max_row[-3:] == [str(record - 1), "✓", str(record)]
    listed = {p["name"]: p for p in json.loads(invoke("puzzles", "--json").stdout)["puzzles"]}
    assert listed["max"]["best_against_record"] == "worse" and listed["max"]["best"]["parameters"] == record


@pytest.mark.parametrize("columns", [60, 70, 79])
def test_on_a_narrow_terminal_the_list_fits_whole_and_keeps_the_mark(louder, handwired_home, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    record = load_puzzle("max").record.parameters
    assert invoke("puzzles", "check", "max", louder).exit_code == 0
    out = invoke("puzzles").stdout
    assert "…" not in out and all(len(line.rstrip()) <= columns for line in out.splitlines())  # nothing cut
    max_row = next(row for row in rows(out) if row[1:2] == ["max"])
    assert max_row[-3:] == ["✓", str(record), "★"]
    assert "lv: level" in words(out) and "★: your best ties or beats the record" in words(out)
