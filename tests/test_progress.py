"""The progress file: what is remembered, atomic saves, and a bad file set aside, never lost."""

import json
import math
import os
import stat
from pathlib import Path

import pytest

from handwired.judge.game import progress as progressing
from handwired.judge.game.scores import Score

GOOD = Score(26, 8, 1, 1, 1023.0)


def test_a_fresh_start_then_solved_best_and_hints_are_remembered(handwired_home):
    warnings = []
    progress = progressing.load(warn=warnings.append)
    assert progress.path == handwired_home / "progress.json" and not progress.solved("aab")
    assert progress.record("aab", GOOD) is True
    assert progress.record("aab", Score(30, 8, 1, 1, 2000.0)) is False  # more parameters: not better
    assert progress.record("aab", Score(26, 8, 1, 1, 2000.0)) is False  # same size, larger margin: a tie
    assert progress.record("aab", Score(26, 7, 1, 1, 1.0)) is True  # narrower, whatever its margin
    progress.reveal("aab", 2)
    progress.reveal("aab", 1)  # never goes back
    again = progressing.load(warn=warnings.append)
    assert again.solved("aab") and again.best("aab") == Score(26, 7, 1, 1, 1.0) and again.hints("aab") == 2
    assert again.hints("ab") == 0 and again.best("ab") is None
    assert warnings == []
    data = json.loads((handwired_home / "progress.json").read_text())
    assert data["format"] == "handwired-progress/1"
    # no temporary files left behind; the lock file stays (deleting it could let two commands in at once)
    assert sorted(p.name for p in handwired_home.iterdir()) == ["progress.json", "progress.json.lock"]


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
    ('{"format": "handwired-progress/1", "puzzles": []}', "puzzles: expected an object of puzzle name: progress"),
    ('["handwired-progress/1"]', "expected an object with format, puzzles"),
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


@pytest.mark.parametrize("entry,reason", [
    ({"solved": "yes"}, "puzzles.aab.solved: expected true or false; found the string 'yes'"),
    ({"best": {"parameters": 1}}, "puzzles.aab.best: missing 'n_embd'"),
    ({"best": {"parameters": 1, "n_embd": 2, "n_head": 1, "n_layer": 1, "margin": 1e400}},
     "puzzles.aab.best.margin: expected a finite number of logits"),
    ({"hints": 1001}, "puzzles.aab.hints: 1001 is more than handwired supports (at most 1,000)"),
    ("solved", "puzzles.aab: expected an object with solved, best, hints"),
])
def test_one_bad_entry_is_left_out_and_every_other_puzzle_kept(handwired_home, entry, reason):
    handwired_home.mkdir()
    path = handwired_home / "progress.json"
    content = json.dumps({"format": "handwired-progress/1", "puzzles": {
        "ab": {"solved": True, "best": GOOD.to_json(), "hints": 1}, "aab": entry, "max": {"hints": 2}}})
    path.write_text(content.replace("Infinity", "1e400"))
    warnings = []
    progress = progressing.load(warn=warnings.append)
    assert len(warnings) == 1 and reason in warnings[0]
    assert "left out, every other puzzle's progress kept" in warnings[0]
    assert progress.solved("ab") and progress.best("ab") == GOOD and progress.hints("max") == 2
    assert not progress.solved("aab")
    copies = [p.read_text() for p in handwired_home.glob("progress.json.bad-*")]  # the file as it was: kept
    assert copies == [content.replace("Infinity", "1e400")] and "copied to progress.json.bad-" in warnings[0]
    again = progressing.load(warn=warnings.append)  # rewritten without the bad entry: read cleanly from then on
    assert len(warnings) == 1 and again.solved("ab") and again.hints("max") == 2 and "aab" not in again.puzzles
    again.reveal("max", 3)
    assert progressing.load(warn=warnings.append).hints("max") == 3 and len(warnings) == 1


def test_a_hint_count_is_never_written_larger_than_it_is_read(handwired_home):
    progress = progressing.load()
    progress.reveal("big", 5000)  # more hints than any statement may have
    warnings = []
    assert progressing.load(warn=warnings.append).hints("big") == progressing.MAX_HINTS and warnings == []


def test_two_bad_files_in_the_same_second_both_survive(handwired_home, monkeypatch):
    handwired_home.mkdir()
    monkeypatch.setattr(progressing.time, "strftime", lambda pattern: "20261127-120000")  # the same second, surely
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


def test_two_commands_holding_stale_copies_merge_instead_of_overwriting(handwired_home):
    first, second = progressing.load(), progressing.load()  # both read the same (missing) file
    assert first.record("aab", GOOD) is True
    second.reveal("ab", 2)  # knew nothing of aab when it read
    assert second.record("aab", Score(30, 8, 1, 1, 5.0)) is False  # worse than what the first saved meanwhile
    first.reveal("ab", 1)  # fewer hints than the file holds: hints never go back
    again = progressing.load()
    assert again.solved("aab") and again.best("aab") == GOOD and again.hints("ab") == 2


def test_revealing_the_next_hint_counts_from_the_file_not_from_a_stale_read(handwired_home):
    first, second = progressing.load(), progressing.load()
    assert first.reveal_next("aab", 3) == (0, 1)
    assert second.reveal_next("aab", 3) == (1, 2)  # not (0, 1) again: the first one's hint is on disk
    assert second.reveal_next("aab", 3, every=True) == (2, 3)
    assert first.reveal_next("aab", 3) == (3, 3)  # no more than there are
    assert progressing.load().hints("aab") == 3


@pytest.mark.parametrize("make", ["fifo", "folder"])
def test_something_other_than_a_file_is_set_aside_without_being_opened(handwired_home, make):
    handwired_home.mkdir()
    path = handwired_home / "progress.json"
    if make == "fifo":
        os.mkfifo(path)  # opening it for reading would wait for a writer forever
    else:
        path.mkdir()
    warnings = []
    progress = progressing.load(warn=warnings.append)
    kind = {"fifo": "is a FIFO (named pipe)", "folder": "is a folder"}[make]
    assert len(warnings) == 1 and f"unreadable progress ({kind}, not a file to read); set aside as" in warnings[0]
    aside = next(handwired_home.glob("progress.json.bad-*"))
    assert stat.S_ISFIFO(aside.lstat().st_mode) if make == "fifo" else aside.is_dir()
    progress.record("aab", GOOD)
    assert progressing.load().solved("aab") and path.is_file()


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400, "1" + "0" * 5000])
def test_a_number_that_is_not_a_finite_float_leaves_its_entry_out(handwired_home, number):
    handwired_home.mkdir()
    content = ('{"format": "handwired-progress/1", "puzzles": {"aab": {"solved": true, "hints": 1, "best": '
               '{"parameters": 26, "n_embd": 8, "n_head": 1, "n_layer": 1, "margin": ' + number + '}}, '
               '"ab": {"solved": true, "hints": 2}}}')
    (handwired_home / "progress.json").write_text(content)
    warnings = []
    progress = progressing.load(warn=warnings.append)
    assert list(progress.puzzles) == ["ab"] and progress.solved("ab")
    assert len(warnings) == 1 and "puzzles.aab.best.margin: expected a finite number" in warnings[0]
    assert "\n" not in warnings[0] and len(warnings[0]) < 300
    assert next(handwired_home.glob("progress.json.bad-*")).read_text() == content


def test_a_lock_held_too_long_is_one_warning_and_the_command_goes_on(handwired_home, monkeypatch):
    import fcntl

    from handwired.judge.game import progress_lock

    handwired_home.mkdir()
    monkeypatch.setattr(progress_lock, "WAIT_SECONDS", 0.05)
    monkeypatch.setattr(progressing, "locked", lambda path: progress_lock.locked(path, wait=0.05))
    holder = os.open(handwired_home / "progress.json.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another open file description: as another process would hold it
        warnings = []
        progress = progressing.load(warn=warnings.append)
        assert progress.record("aab", GOOD) is True and progress.solved("aab")  # remembered for this command
        progress.reveal("aab", 1)
    finally:
        os.close(holder)
    assert len(warnings) == 1 and warnings[0].count(str(handwired_home)) == 1
    assert "could not save progress: another handwired command has held progress.json.lock" in warnings[0]
    assert not (handwired_home / "progress.json").exists()


def test_a_fifo_in_place_of_the_progress_file_blocks_no_command(handwired_home):
    import subprocess
    import sys

    handwired_home.mkdir()
    os.mkfifo(handwired_home / "progress.json")
    environment = {**os.environ, "HANDWIRED_HOME": str(handwired_home), "NO_COLOR": "1", "COLUMNS": "300"}
    run = subprocess.run([sys.executable, "-m", "handwired", "puzzles", "hint", "aab"], capture_output=True,
                         text=True, env=environment, timeout=60)  # before: blocked forever opening the FIFO
    assert run.returncode == 0 and run.stdout.startswith("hint 1 of ")
    assert len(run.stderr.splitlines()) == 1 and "is a FIFO (named pipe), not a file to read" in run.stderr
    assert progressing.load().hints("aab") == 1


def test_randomly_corrupted_progress_files_are_read_or_set_aside_never_an_exception(handwired_home):
    """Cut, flipped, duplicated, retyped and enormous pieces of a good file: each either reads as progress (every
    number a finite float or a bounded whole number) or is set aside with one warning and the command goes on."""
    import random

    rng = random.Random(16)
    good = json.dumps({"format": "handwired-progress/1", "puzzles": {
        "aab": {"solved": True, "best": GOOD.to_json(), "hints": 2},
        "ab": {"solved": False, "best": None, "hints": 1}}})
    pieces = ['"', "{", "}", "[", "]", ",", ":", "-", "1e400", "NaN", "Infinity", "9" * 5000, "null", "true", "0.5",
              '"\\u0000"', "\n", '"solved"', '"hints": ', "[" * 3000, "\xff"]
    for trial in range(400):
        text = list(good)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(text))
            how = rng.choice(("cut", "insert", "replace", "swap"))
            if how == "cut":
                del text[at:at + rng.randint(1, 20)]
            elif how == "insert":
                text[at:at] = rng.choice(pieces)
            elif how == "replace":
                text[at] = rng.choice(pieces)
            else:
                other = rng.randrange(len(text))
                text[at], text[other] = text[other], text[at]
        for path in handwired_home.glob("progress.json*"):
            path.unlink()
        handwired_home.mkdir(exist_ok=True)
        (handwired_home / "progress.json").write_bytes("".join(text).encode("utf-8", "surrogateescape"))
        warnings = []
        progress = progressing.load(warn=warnings.append)
        assert len(warnings) <= 1, trial
        if warnings:
            assert "\n" not in warnings[0], trial
            assert ("set aside as progress.json.bad-" in warnings[0]
                    or "left out, every other puzzle's progress kept" in warnings[0]), trial
        for entry in progress.puzzles.values():
            assert isinstance(entry.solved, bool) and 0 <= entry.hints <= progressing.MAX_HINTS
            assert entry.best is None or math.isfinite(entry.best.margin)
        progress.reveal("aab", 1)  # and the command goes on to save
        assert progressing.load().hints("aab") >= 1, trial


def test_a_best_stored_under_the_margin_rule_still_loads_and_a_louder_tie_does_not_replace_it(handwired_home):
    handwired_home.mkdir()
    stored = Score(26, 8, 1, 1, 2000.0)  # written when a larger margin ranked higher
    (handwired_home / "progress.json").write_text(json.dumps(
        {"format": "handwired-progress/1", "puzzles": {"aab": {"solved": True, "best": stored.to_json(), "hints": 1}}}))
    progress = progressing.load()
    assert progress.best("aab") == stored
    assert progress.record("aab", Score(26, 8, 1, 1, 20000.0)) is False  # ten times the margin: a tie
    assert progress.record("aab", Score(26, 8, 1, 1, 1.0)) is False  # a smaller one: a tie too, never worse
    assert progressing.load().best("aab") == stored
