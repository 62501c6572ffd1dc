"""The puzzles list at 80 columns, par and record, the solution as a file, lists in a pipe, and the smaller fixes."""

import json
import os
import re
import shutil
import stat

import pytest
from test_cli import invoke, user_error

from handwired.judge.game import catalogue
from handwired.weightfile import bundled_models

pytestmark = pytest.mark.usefixtures("fixture_puzzles")


@pytest.fixture
def with_record(tmp_path, monkeypatch, fixture_puzzles):
    """The test puzzles, aab stating a record of 24 non-zero parameters (its 26-parameter solution does not beat it)."""
    folder = tmp_path / "puzzles"
    shutil.copytree(fixture_puzzles, folder)
    statement = json.loads((folder / "aab.json").read_text())
    statement["record"] = {"parameters": 24, "n_embd": 8, "n_head": 1, "n_layer": 1, "margin": 1}
    (folder / "aab.json").write_text(json.dumps(statement))
    monkeypatch.setattr(catalogue, "puzzles_dir", lambda: folder)
    return folder


def rows(text):
    """Each line's words, table rules left out."""
    return [line.replace("│", " ").split() for line in text.splitlines()]


def test_the_list_fits_80_columns_one_line_a_puzzle_with_labelled_caps_par_and_record(monkeypatch, with_record):
    monkeypatch.setenv("COLUMNS", "80")
    result = invoke("puzzles")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert ["level", "name", "n_embd", "heads", "blocks", "MLP", "par", "record", "yours"] in rows(result.stdout)
    assert ["1", "first", "6", "2", "2", "yes", "9", "—", "·"] in rows(result.stdout)
    assert ["2", "aab", "8", "1", "1", "no", "26", "24", "·"] in rows(result.stdout)
    assert "Continue the repeating pattern" not in result.stdout  # no room: puzzles show says it
    assert "what each asks: handwired puzzles show NAME" in " ".join(result.stdout.split())


def test_a_wide_terminal_also_says_what_to_build(monkeypatch, with_record):
    monkeypatch.setenv("COLUMNS", "140")
    out = invoke("puzzles", "list").stdout
    assert ["2", "aab", "Continue", "the", "repeating", "pattern", "aab.", "8", "1", "1", "no", "26", "24",
            "·"] in rows(out)


def test_the_list_shows_your_best_and_an_mlp_cap(monkeypatch, with_record, tmp_path):
    monkeypatch.setenv("COLUMNS", "80")
    statement = json.loads((with_record / "first.json").read_text())
    statement["caps"]["mlp"] = 24
    (with_record / "first.json").write_text(json.dumps(statement))
    assert invoke("puzzles", "check", "aab", str(with_record / "solutions" / "aab.json")).exit_code == 0
    out = rows(invoke("puzzles").stdout)
    assert ["2", "aab", "8", "1", "1", "no", "26", "24", "✓", "26"] in out
    assert ["1", "first", "6", "2", "2", "≤24", "9", "—", "·"] in out


def test_show_and_a_solved_check_give_par_and_record(with_record):
    shown = " ".join(invoke("puzzles", "show", "aab").stdout.split())
    assert "par: 26 non-zero parameters" in shown
    assert "record: 24 non-zero parameters, n_embd 8, 1 head, 1 block, margin 1 logit" in shown
    result = invoke("puzzles", "check", "aab", str(with_record / "solutions" / "aab.json"))
    assert result.exit_code == 0
    assert ["record", "24", "8", "1", "1", "1"] in rows(result.stdout)
    assert "Ties par." in result.stdout and "record" not in result.stdout.split("!", 1)[1].split("\n")[0]


def test_beating_the_record_says_so(with_record):
    statement = json.loads((with_record / "aab.json").read_text())
    statement["record"]["parameters"] = 27
    (with_record / "aab.json").write_text(json.dumps(statement))
    result = invoke("puzzles", "check", "aab", str(with_record / "solutions" / "aab.json"))
    assert result.exit_code == 0
    assert "Better than the record: the leanest answer known until now!" in " ".join(result.stdout.split())
    again = " ".join(invoke("puzzles", "check", "aab", str(with_record / "solutions" / "aab.json")).stdout.split())
    # the same answer checked again: no second record falls; it ties the best already recorded
    assert "leanest answer known until now" not in again
    assert "Ties par. Better than the record. Ties your best, already recorded." in again


def test_the_solution_in_a_pipe_is_the_weight_file_itself(fixture_puzzles):
    result = invoke("puzzles", "solution", "aab", "--spoil")
    assert result.exit_code == 0
    assert result.stdout == (fixture_puzzles / "solutions" / "aab.json").read_text()
    assert json.loads(result.stdout)["format"] == "handwired/1"


def test_the_solution_on_a_terminal_is_shown_with_its_par(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich: a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    out = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", invoke("puzzles", "solution", "aab", "--spoil").stdout).split())
    assert out.startswith("reference solution of aab")
    assert "par: 26 non-zero parameters, n_embd 8, 1 head, 1 block, margin 1023 logits" in out


def test_the_solution_written_with_o_and_never_over_a_file(tmp_path, fixture_puzzles):
    path = tmp_path / "sol.json"
    result = invoke("puzzles", "solution", "aab", "--spoil", "-o", str(path))
    assert result.exit_code == 0
    assert path.read_text() == (fixture_puzzles / "solutions" / "aab.json").read_text()
    assert " ".join(result.stdout.split()) == (f"wrote {path}: the reference solution of aab. "
                                               f"See it: handwired weights show {path}")
    line = user_error("puzzles", "solution", "aab", "--spoil", "-o", str(path))
    assert line == f"error: {path}: already exists; use --force to replace it"
    assert invoke("puzzles", "solution", "aab", "--spoil", "-o", str(path), "--force").exit_code == 0
    line = user_error("puzzles", "solution", "aab", "-o", str(tmp_path / "other.json"))
    assert line.startswith("error: puzzle 'aab' is not solved yet")
    assert not (tmp_path / "other.json").exists()


def test_weights_list_is_one_model_a_line_in_a_pipe(monkeypatch):
    monkeypatch.setenv("COLUMNS", "20")  # narrower than any path: still never wrapped
    result = invoke("weights", "list")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [f"{name}  {path}" for name, path in bundled_models().items()]


def test_an_unsolved_check_gives_the_parameter_count_so_far(tmp_path, with_record):
    path = tmp_path / "mine.json"
    invoke("puzzles", "start", "aab", "-o", str(path))
    doc = json.loads(path.read_text())
    doc["wte"] = {"a": {"0": 1}, "b": {"1": 2, "2": -1}}
    path.write_text(json.dumps(doc))
    result = invoke("puzzles", "check", "aab", str(path))
    assert result.exit_code == 1
    assert ("Not solved yet: 3 non-zero parameters so far (par 26, record 24). Stuck? handwired puzzles hint aab"
            in " ".join(result.stdout.split()))
    assert json.loads(invoke("puzzles", "check", "aab", str(path), "--json").stdout)["parameters"] == 3


def test_a_missing_answer_points_at_puzzles_start(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert user_error("puzzles", "check", "aab") == (
        "error: aab.json: no such file; write a starter with handwired puzzles start aab -o aab.json")
    assert user_error("check", "--puzzle", "first", "-w", "my answer.json") == (
        "error: my answer.json: no such file; write a starter with handwired puzzles start first -o 'my answer.json'")


def test_hints_in_a_pipe_are_one_a_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    out = invoke("puzzles", "hint", "aab", "--every-hint").stdout
    assert out.splitlines()[:2] == ["hint 1 of 2: Look at the last two tokens.",
                                    "hint 2 of 2: Attend to this position and the one before."]


@pytest.mark.parametrize("umask", [0o022, 0o027], ids=["022", "027"])
def test_written_files_follow_the_umask_and_a_replaced_file_keeps_its_mode(tmp_path, umask):
    old = os.umask(umask)
    try:
        starter, svg, html = tmp_path / "start.json", tmp_path / "view.svg", tmp_path / "view.html"
        invoke("puzzles", "start", "aab", "-o", str(starter))
        invoke("explain", "--step", "pattern", "--svg", str(svg), "--html", str(html))
        invoke("export", "aab", "-o", str(tmp_path / "tl"))
        invoke("import", str(tmp_path / "tl"), "-o", str(tmp_path / "back.json"))
        invoke("weights", "new", "-o", str(tmp_path / "new.json"))
        written = (starter, svg, html, tmp_path / "back.json", tmp_path / "new.json", tmp_path / "tl" / "config.json")
        for path in written:
            assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path
        assert stat.S_IMODE((tmp_path / "tl").stat().st_mode) == 0o777 & ~umask
        starter.chmod(0o640)
        assert invoke("puzzles", "start", "aab", "-o", str(starter), "--force").exit_code == 0
        assert stat.S_IMODE(starter.stat().st_mode) == 0o640
    finally:
        os.umask(old)
