"""One command line: the weight file given the same way everywhere, --all with one meaning, --version, and
the puzzle verdict reached by three commands through one core function."""

import json
import re
from pathlib import Path

import pytest
from conftest import PUZZLE_FIXTURES
from test_cli import invoke, user_error

from handwired.cli import COMMANDS

# Every command that reads one weight file, with the arguments it needs besides the file.
READERS = {
    "predict": ["aabaa"], "explain": ["aabaa", "--step", "embed"], "complete": ["aab", "-n", "2"], "check": [],
    "weights show": [], "weights validate": [], "weights convert": ["--to", "dense", "-o", "{out}"],
    "export": ["-o", "{out}"], "puzzles check": ["aab"],
}
# Those where the file also reads naturally as the first argument.
POSITIONAL = ("check", "weights show", "weights validate", "weights convert", "export", "puzzles check")


def run_with(command: str, how: list[str], folder: Path):
    args = [arg.replace("{out}", str(folder / "out")) for arg in READERS[command]]
    words = command.split()
    if command == "puzzles check":
        return invoke(*words, *args, *how)
    return invoke(*words, *how, *args)


@pytest.mark.parametrize("command", list(READERS))
def test_every_command_that_reads_a_weight_file_takes_w(command, tmp_path, fixture_puzzles):
    solution = str(PUZZLE_FIXTURES / "solutions" / "aab.json")
    for flag in ("-w", "--weights"):
        folder = tmp_path / flag
        folder.mkdir()
        result = run_with(command, [flag, solution], folder)
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize("command", POSITIONAL)
def test_the_file_as_the_first_argument_where_it_reads_naturally(command, tmp_path, fixture_puzzles):
    solution = str(PUZZLE_FIXTURES / "solutions" / "aab.json")
    result = run_with(command, [solution], tmp_path)
    assert result.exit_code == 0, result.output
    both = run_with(command, [solution, "-w", solution], tmp_path)
    assert both.exit_code == 2 and "give the weight file once" in both.stderr


def test_watch_takes_the_file_either_way():
    # the file is checked before the terminal is: both spellings reach the same one-line refusal
    assert "nope.json: no such file" in user_error("watch", "nope.json")
    assert "nope.json: no such file" in user_error("watch", "-w", "nope.json", "aab")


def test_all_means_show_what_is_folded_and_nothing_else(tmp_path):
    helps = {name: invoke(*name.split(), "--help").stdout for name in
             ("predict", "explain", "check", "watch", "weights show", "puzzles check", "puzzles hint")}
    for name, text in helps.items():
        if "--all" in text:
            assert "folded" in " ".join(text.split()), name
    assert "--all" not in helps["predict"] and "--every-position" in helps["predict"]
    assert "--all" not in helps["puzzles hint"] and "--every-hint" in helps["puzzles hint"]
    folded = invoke("explain", "--step", "embed").stdout
    unfolded = invoke("explain", "--step", "embed", "--all").stdout
    assert "all-zero" in folded and "all-zero" not in unfolded


def test_version_comes_from_the_package_metadata():
    from importlib.metadata import version

    import handwired

    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"handwired {version('handwired')}"
    assert handwired.__version__ == version("handwired")
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert len(re.findall(r'^version = "', pyproject, re.M)) == 1  # written once


def test_the_help_lists_every_command_without_importing_the_ones_not_run():
    text = invoke("--help").stdout
    for name in COMMANDS:
        assert name in text


def test_weights_new_takes_the_files_own_names():
    text = " ".join(invoke("weights", "new", "--help").stdout.split())
    for flag in ("--n-ctx", "--n-embd", "--n-head", "--n-layer"):
        assert flag in text


def test_the_three_puzzle_paths_call_one_core_verdict(monkeypatch, tmp_path, fixture_puzzles):
    """puzzles check, check --puzzle, watch --puzzle and Python's submit all judge through
    handwired.judge.game.verdict.submit, called by the one judging (handwired.judge.judging.verdict)."""
    import handwired
    from handwired.judge import judging
    from handwired.judge.game import verdict
    from handwired.views import watch as watching

    calls = []
    real = verdict.submit

    def counted(*args, **kwargs):
        calls.append(args[0].name)
        return real(*args, **kwargs)

    monkeypatch.setattr(judging, "submit", counted)
    solution = str(PUZZLE_FIXTURES / "solutions" / "aab.json")
    assert invoke("puzzles", "check", "aab", solution).exit_code == 0
    assert invoke("check", "--puzzle", "aab", "-w", solution).exit_code == 0
    from handwired.judge.game.catalogue import load_puzzle

    snapshot = watching.load_snapshot(Path(solution), judge=watching.judge(load_puzzle("aab")))
    assert snapshot.verdict.report.ok
    assert handwired.puzzle("aab").submit(solution).solved
    assert calls == ["aab", "aab", "aab", "aab"]
    json_a = json.loads(invoke("puzzles", "check", "aab", solution, "--json").stdout)
    json_b = json.loads(invoke("check", "--puzzle", "aab", "-w", solution, "--json").stdout)
    assert json_a == json_b
