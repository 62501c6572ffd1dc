"""The progress file: what is remembered, atomic saves, and a bad file set aside, never lost."""

import json
from pathlib import Path

import pytest

from handwired.judge import progress as progressing
from handwired.judge.scores import Score

GOOD = Score(26, 8, 1, 1, 1023.0)


def test_a_fresh_start_then_solved_best_and_hints_are_remembered(handwired_home):
    warnings = []
    progress = progressing.load(warn=warnings.append)
    assert progress.path == handwired_home / "progress.json" and not progress.solved("aab")
    assert progress.record("aab", GOOD) is True
    assert progress.record("aab", Score(30, 8, 1, 1, 2000.0)) is False  # more parameters: not better
    assert progress.record("aab", Score(26, 8, 1, 1, 2000.0)) is True  # same size, larger margin
    progress.reveal("aab", 2)
    progress.reveal("aab", 1)  # never goes back
    again = progressing.load(warn=warnings.append)
    assert again.solved("aab") and again.best("aab").margin == 2000.0 and again.hints("aab") == 2
    assert again.hints("ab") == 0 and again.best("ab") is None
    assert warnings == []
    data = json.loads((handwired_home / "progress.json").read_text())
    assert data["format"] == "handwired-progress/1"
    assert [p.name for p in handwired_home.iterdir()] == ["progress.json"]  # no temporary files left behind


def test_entries_for_puzzles_not_installed_are_kept(handwired_home):
    handwired_home.mkdir()
    (handwired_home / "progress.json").write_text(json.dumps(
        {"format": "handwired-progress/1",
         "puzzles": {"retired": {"solved": True, "best": GOOD.to_json(), "hints": 1}}}))
    progress = progressing.load()
    progress.reveal("aab", 1)
    assert progressing.load().best("retired") == GOOD


@pytest.mark.parametrize("par", [{"aab": {"source": "x"}}, {"aab": {"source": 1, "score": {}}}, [], "stale"])
def test_a_bad_par_entry_is_dropped_not_the_players_progress(handwired_home, par):
    handwired_home.mkdir()
    (handwired_home / "progress.json").write_text(json.dumps({"format": "handwired-progress/1", "par": par,
        "puzzles": {"aab": {"solved": True, "best": GOOD.to_json(), "hints": 2}}}))
    warnings = []
    progress = progressing.load(warn=warnings.append)
    assert warnings == [] and progress.solved("aab") and progress.hints("aab") == 2  # par was only a cache
    assert list(handwired_home.glob("progress.json.bad-*")) == []
    progress.reveal("aab", 3)
    assert "par" not in json.loads((handwired_home / "progress.json").read_text())  # par is the statement's now


@pytest.mark.parametrize("content,reason", [
    ("{", "Expecting property name"),
    ('{"format": "handwired-progress/2", "puzzles": {}}', "format: expected 'handwired-progress/1'"),
    ('{"format": "handwired-progress/1", "puzzles": {"aab": {"solved": "yes"}}}',
     "puzzles.aab.solved: expected true or false; found the string 'yes'"),
    ('{"format": "handwired-progress/1", "puzzles": {"aab": {"best": {"parameters": 1}}}}',
     "puzzles.aab.best: missing 'n_embd'"),
    ('{"format": "handwired-progress/1", "puzzles": {"aab": {"best": {"parameters": 1, "n_embd": 2, "n_head": 1, '
     '"n_layer": 1, "margin": 1' + "0" * 400 + '}}}}', "puzzles.aab.best.margin: expected a finite number of logits"),
])
def test_a_bad_file_is_set_aside_with_one_warning(handwired_home, content, reason):
    handwired_home.mkdir()
    (handwired_home / "progress.json").write_text(content)
    warnings = []
    progress = progressing.load(warn=warnings.append)
    assert len(warnings) == 1 and reason in warnings[0] and "set aside as progress.json.bad-" in warnings[0]
    aside = next(handwired_home.glob("progress.json.bad-*"))
    assert aside.read_text() == content
    assert progressing.load().puzzles == {}  # replaced by a good, empty file
    progress.record("aab", GOOD)
    assert progressing.load().solved("aab")


def test_two_bad_files_in_the_same_second_both_survive(handwired_home):
    handwired_home.mkdir()
    for content in ("first bad", "second bad"):
        (handwired_home / "progress.json").write_text(content)
        progressing.load()
    assert sorted(p.read_text() for p in handwired_home.glob("progress.json.bad-*")) == ["first bad", "second bad"]


def test_a_bad_file_that_cannot_be_moved_is_left_alone_and_never_overwritten(handwired_home, monkeypatch):
    handwired_home.mkdir()
    path = handwired_home / "progress.json"
    path.write_text("not json")

    def refuse(self, target):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "rename", refuse)
    warnings = []
    progress = progressing.load(warn=warnings.append)
    assert "could not set it aside" in warnings[0] and "will not be saved" in warnings[0]
    progress.record("aab", GOOD)
    assert path.read_text() == "not json"


def test_saving_into_a_folder_that_cannot_exist_warns(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("HANDWIRED_HOME", str(tmp_path / "file" / "home"))
    warnings = []
    progressing.load(warn=warnings.append).record("aab", GOOD)
    assert len(warnings) == 1 and "could not save progress" in warnings[0]
