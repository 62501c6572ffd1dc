"""How long `handwired puzzles check` takes on every bundled puzzle, as a whole command, against `puzzles list`.

Run:  python benchmarks/bench_puzzles.py [--quick]

For each bundled puzzle it times `handwired puzzles check NAME` on the
puzzle's reference solution (a solved check: every judged context, the score
against par and record) and on its starter (all zeros: every context fails,
and the failure's view is drawn), each the median of five runs (one with
--quick), against the baseline measured in the same run, interleaved:
`handwired puzzles list`, which starts Python and reads every statement but
checks nothing. Target: every check within 2× the baseline. The list itself is
timed against the import floor, `python -c "import numpy, typer, rich"` (the
libraries every command loads), in the same interleaved runs; target: within
1.5× (reading a statement never enumerates its domain).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from handwired.judge.catalogue import catalogue, solution_path

TARGET = 2.0
LIST_TARGET = 1.5
RUNS = 5


def seconds(args: list[str], env: dict[str, str], ok_codes=(0, 1)) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode not in ok_codes:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each, for a smoke test")
    runs = 1 if parser.parse_args().quick else RUNS
    command = [sys.executable, "-m", "handwired"]
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "HANDWIRED_HOME": str(Path(folder) / "home"), "COLUMNS": "100"}
        checks = {}
        for puzzle in catalogue():
            starter = Path(folder) / f"{puzzle.name}-starter.json"
            subprocess.run([*command, "puzzles", "start", puzzle.name, "-o", str(starter)], env=env, check=True,
                           capture_output=True)
            checks[puzzle.name] = {"reference": str(solution_path(puzzle.name)), "starter": str(starter)}
        times: dict[str, list[float]] = {"list": [], "floor": []}
        for _ in range(runs):  # interleaved, so the machine's other work falls on all alike
            times["floor"].append(seconds([sys.executable, "-c", "import numpy, typer, rich"], env, ok_codes=(0,)))
            times["list"].append(seconds([*command, "puzzles", "list"], env, ok_codes=(0,)))
            for name, files in checks.items():
                for what, path in files.items():
                    times.setdefault(f"{name} {what}", []).append(
                        seconds([*command, "puzzles", "check", name, path], env))
    baseline, floor = statistics.median(times.pop("list")), statistics.median(times.pop("floor"))
    print(f"{runs} run(s) of each, interleaved; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"{'import floor: import numpy, typer, rich':44} {floor:6.2f} s")
    listed = "meets" if baseline / floor <= LIST_TARGET else "MISSES"
    print(f"{'baseline: handwired puzzles list':44} {baseline:6.2f} s  {baseline / floor:4.2f}x the floor ({listed} "
          f"the target: <= {LIST_TARGET}x)")
    worst = 0.0
    for label, taken in times.items():
        median = statistics.median(taken)
        worst = max(worst, median / baseline)
        print(f"{'handwired puzzles check ' + label:44} {median:6.2f} s  {median / baseline:4.2f}x")
    verdict = "meets" if worst <= TARGET else "MISSES"
    print(f"slowest check: {worst:.2f}x the baseline ({verdict} the target: <= {TARGET}x)")


if __name__ == "__main__":
    main()
