"""A user's script using every documented name of ``import handwired`` (tests/data/typed/user_script.py) type-checks
clean under ``mypy --strict`` and pyright's strict mode, and runs. Each checker is run when it is installed (CI
installs both in its main environment and sets HANDWIRED_REQUIRE_TYPECHECKERS=1, and there a missing one fails the
run); elsewhere, without it, its test is skipped."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent / "data" / "typed" / "user_script.py"
IN_CI = os.environ.get("HANDWIRED_REQUIRE_TYPECHECKERS") == "1"  # .ci/run's main environment, which has both


def needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        if IN_CI:
            pytest.fail(f"{module} must run here (CI installs it: .ci/run)")
        pytest.skip(f"{module} is not installed: pip install {module}")


def test_the_user_script_is_clean_under_mypy_strict(tmp_path):
    needs("mypy")
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                           "--cache-dir", str(tmp_path / "cache"), str(SCRIPT)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues found" in done.stdout


def test_the_user_script_is_clean_under_pyright_strict(tmp_path):
    needs("pyright")
    assert SCRIPT.read_text().startswith("# pyright: strict\n")
    done = subprocess.run([sys.executable, "-m", "pyright", "--pythonpath", sys.executable, str(SCRIPT)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 errors" in done.stdout


def test_the_user_script_runs(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "edited.json").is_file()
