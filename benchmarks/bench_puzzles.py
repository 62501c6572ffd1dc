"""How long `handwired puzzles check` takes on the largest puzzle shape, as a whole command.

Run:  python benchmarks/bench_puzzles.py

The induction puzzle: vocab abcd, n_ctx 8, two blocks of two heads, n_embd 24:
87,380 contexts. It checks the puzzle's starter (all zeros), a model with
random weights of the same shape and, when the puzzle is bundled, its reference
solution (a solved check, which also shows par), each the median of five runs, against the
baseline measured in the same run: `handwired puzzles list`, which starts
Python and reads the puzzles but checks nothing. Target (2-core machine):
well under two seconds for the whole check command.

It uses the bundled induction puzzle when there is one, else a copy of its
statement in a temporary folder (through $HANDWIRED_PUZZLES).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from reference import params_to_document, random_params  # noqa: E402

from handwired.judge.catalogue import bundled_puzzles, solution_path  # noqa: E402

STATEMENT = {
    "format": "handwired-puzzle/1", "name": "induction", "level": 5, "title": "Induction", "summary": "Induction.",
    "story": "For the benchmark.", "vocab": ["a", "b", "c", "d"], "n_ctx": 8,
    "caps": {"n_embd": 24, "n_head": 2, "n_layer": 2, "mlp": False}, "rule": {"kind": "induction"},
    "examples": ["abcab"], "hints": ["none"],
}
RUNS = 5


def median_seconds(args: list[str], env: dict[str, str], ok_codes=(0, 1), runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(args, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode not in ok_codes:
            raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return statistics.median(times)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each, for a smoke test")
    runs = 1 if parser.parse_args().quick else RUNS
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        env = {**os.environ, "HANDWIRED_HOME": str(folder / "home")}
        bundled = "induction" in bundled_puzzles()
        if not bundled:
            (folder / "puzzles").mkdir()
            (folder / "puzzles" / "induction.json").write_text(json.dumps(STATEMENT))
            env["HANDWIRED_PUZZLES"] = str(folder / "puzzles")
        command = [sys.executable, "-m", "handwired"]
        subprocess.run([*command, "puzzles", "start", "induction", "-o", str(folder / "starter.json")], env=env,
                       check=True, capture_output=True)
        params = random_params(np.random.default_rng(0), n_vocab=4, n_ctx=8, n_embd=24, n_layer=2, layer_norm=False,
                               mlp=False)
        (folder / "random.json").write_text(json.dumps(params_to_document(params, 2, "abcd", 8)))

        baseline = median_seconds([*command, "puzzles", "list"], env, ok_codes=(0,), runs=runs)
        print(f"{'what':58} {f'median of {runs}':>12} {'beyond the baseline':>20}")
        print(f"{'baseline: handwired puzzles list (start-up, no check)':58} {baseline:>10.2f} s")
        files = {"starter": folder / "starter.json", "random": folder / "random.json"}
        reference = solution_path("induction") if bundled else None
        if reference is not None:
            files["reference (solved)"] = reference
        for name, path in files.items():
            seconds = median_seconds([*command, "puzzles", "check", "induction", str(path)], env, runs=runs)
            label = f"handwired puzzles check induction, {name}"
            print(f"{label:58} {seconds:>10.2f} s {seconds - baseline:>18.2f} s   {seconds / baseline:.1f}x")


if __name__ == "__main__":
    main()
