"""Commands run at once on one progress file lose nothing: 8 processes × 20 rounds of puzzles check and hint (4
rounds outside CI: see stress.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from stress import size

from handwired.judge.game import progress as progressing
from handwired.judge.game.scores import Score

FIXTURES = Path(__file__).resolve().parent / "data" / "puzzles"
ROUNDS = size(20, 4)
HINTS = 100  # more than the rounds can reveal, so every hint asked for must be counted


def puzzles_folder(tmp_path: Path) -> Path:
    """The test puzzles aab and first, each with HINTS hints."""
    folder = tmp_path / "puzzles"
    (folder / "solutions").mkdir(parents=True)
    for name in ("aab", "first"):
        statement = json.loads((FIXTURES / f"{name}.json").read_text())
        statement["hints"] = [f"hint {n}" for n in range(1, HINTS + 1)]
        (folder / f"{name}.json").write_text(json.dumps(statement))
    return folder


def aab_answer(tmp_path: Path, extra: int) -> Path:
    """The aab solution with ``extra`` more non-zero parameters that change nothing: entries of c_proj's rows
    z0 … z6, which multiply values that are always 0 (only v7 is written). Fewer extras score better."""
    doc = json.loads((FIXTURES / "solutions" / "aab.json").read_text())
    rows = doc["blocks"][0]["attn"]["c_proj"]["w"]
    for i in range(extra):
        rows[i // 8][i % 8] = 1
    path = tmp_path / f"aab-{extra}.json"
    path.write_text(json.dumps(doc))
    return path


def test_eight_commands_at_once_for_twenty_rounds_lose_nothing(tmp_path, handwired_home):
    environment = {**os.environ, "HANDWIRED_HOME": str(handwired_home), "NO_COLOR": "1", "COLUMNS": "200",
                   "HANDWIRED_PUZZLES": str(puzzles_folder(tmp_path))}
    first = str(FIXTURES / "solutions" / "first.json")
    for round_number in range(ROUNDS):
        extras = [2 * (ROUNDS - round_number) - offset for offset in (0, 1)]  # each round brings a new best for aab
        commands = [["check", "aab", str(aab_answer(tmp_path, extra))] for extra in extras] + [
            ["check", "first", first], ["check", "first", first],
            ["hint", "aab"], ["hint", "aab"], ["hint", "first"], ["hint", "first"]]
        runs = [subprocess.Popen([sys.executable, "-m", "handwired", "puzzles", *command], env=environment,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for command in commands]
        for command, run in zip(commands, runs):
            out, err = run.communicate(timeout=120)
            assert (run.returncode, err) == (0, ""), command
            assert ("Solved" in out) if command[0] == "check" else ("hint" in out)
        progress = progressing.load()
        assert progress.solved("aab") and progress.solved("first"), round_number
        assert progress.best("aab") == Score(26 + min(extras), 8, 1, 1, 1023.0), round_number
        assert (progress.hints("aab"), progress.hints("first")) == (2 * (round_number + 1),) * 2, round_number
