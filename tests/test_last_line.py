"""The last line of defence: an exception no check foresaw is one line naming it a bug, exit code 70.

Every reproducer of a bad input has its own test that ends in exit code 2 before this line is reached;
these tests plant a bug on purpose to see the net hold.
"""

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import handwired.cli.predict
from handwired.cli import app

runner = CliRunner()


def plant(monkeypatch, error: BaseException) -> None:
    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(handwired.cli.predict, "trace", broken)


@pytest.mark.parametrize("error,said", [
    (RuntimeError("the forward pass\nwent wrong"), "RuntimeError: the forward pass\\nwent wrong"),
    (RecursionError("maximum recursion depth exceeded"), "RecursionError: maximum recursion depth exceeded"),
    (MemoryError(), "ran out of memory"),
])
def test_an_unforeseen_exception_is_one_line_and_exit_70(monkeypatch, error, said):
    monkeypatch.delenv("HANDWIRED_DEBUG", raising=False)
    plant(monkeypatch, error)
    result = runner.invoke(app, ["predict", "aab"])
    assert result.exit_code == 70 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"internal error: {said} — a bug in handwired, not in your input; please report it "
        "(run again with HANDWIRED_DEBUG=1 or --debug for the traceback)"]


@pytest.mark.parametrize("how", [{"env": {"HANDWIRED_DEBUG": "1"}}, {"args": ["--debug"]}])
def test_the_traceback_is_shown_on_request(monkeypatch, how):
    monkeypatch.delenv("HANDWIRED_DEBUG", raising=False)
    plant(monkeypatch, RuntimeError("planted"))
    result = runner.invoke(app, [*how.get("args", []), "predict", "aab"], env=how.get("env"))
    assert result.exit_code == 70
    assert "Traceback (most recent call last)" in result.stderr and 'raise error' in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("internal error: RuntimeError: planted — a bug")
    assert "(the traceback is above)" in result.stderr


def test_ctrl_c_anywhere_is_exit_130_without_a_traceback(monkeypatch):
    plant(monkeypatch, KeyboardInterrupt())
    result = runner.invoke(app, ["predict", "aab"])
    assert result.exit_code == 130 and "Traceback" not in result.output


def test_usage_errors_still_belong_to_the_command_line_parser():
    result = runner.invoke(app, ["predict", "aab", "--no-such-flag"])
    assert result.exit_code == 2 and "No such option: --no-such-flag" in result.stderr
    assert "internal error" not in result.stderr


def test_outside_any_command_the_entry_point_is_the_net(tmp_path):
    """A command that cannot even be loaded fails in the group, before any command's own guard."""
    script = ("import handwired.cli as cli\n"
              "cli.COMMANDS['predict'] = 'handwired.no_such_module:app'\n"
              "cli.main()\n")
    environment = {key: value for key, value in os.environ.items() if key != "HANDWIRED_DEBUG"}
    run = subprocess.run([sys.executable, "-c", script, "predict", "aab"], capture_output=True, text=True,
                         env={**environment, "NO_COLOR": "1", "COLUMNS": "300"}, cwd=tmp_path, timeout=60)
    assert run.returncode == 70 and run.stdout == ""
    assert run.stderr.splitlines() == [
        "internal error: ModuleNotFoundError: No module named 'handwired.no_such_module' — a bug in handwired, "
        "not in your input; please report it (run again with HANDWIRED_DEBUG=1 or --debug for the traceback)"]


@pytest.mark.parametrize("seed", ["-1", str(2**64)])
def test_a_seed_numpy_cannot_take_is_a_user_error_before_the_net(seed):
    for command in (["check", "--sample", "10"], ["diff", "aab", "aab", "--sample", "10"]):
        result = runner.invoke(app, [*command, "--seed", seed])
        assert result.exit_code == 2 and result.stderr.splitlines() == [
            f"error: --seed {seed}: expected a whole number from 0 to 18,446,744,073,709,551,615"]


@pytest.mark.parametrize("given,said", [
    ("[[1" + "0" * 400 + "]]", "error: --x[0][0]: the number 100000…(401 digits) is not a finite number"),
    ("[[1" + "0" * 5000 + "]]", "error: --x[0][0]: the number 100000…(5,001 digits) is not a finite number"),
    ("[[1, [2]]]", "error: --x[0][1]: a list of 1 is not a number"),
])
def test_attend_numbers_beyond_float64_are_a_user_error_before_the_net(given, said):
    result = runner.invoke(app, ["attend", "--x", given])
    assert result.exit_code == 2 and result.stderr.splitlines() == [said]


def test_a_reader_that_went_away_is_not_called_a_bug(monkeypatch):
    plant(monkeypatch, BrokenPipeError(32, "Broken pipe"))  # as `handwired … | head -1` meets it
    result = runner.invoke(app, ["predict", "aab"])
    assert result.exit_code == 1 and "internal error" not in result.output
