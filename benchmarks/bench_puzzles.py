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
libraries a command that runs a model loads; the list itself needs no numpy),
in the same interleaved runs; target: within 1.5× (the list reads of each
statement only what it shows). Every command runs with single-threaded BLAS, as
handwired sets it for itself, so that the floor's CPU time is not numpy starting
threads; the CPU time each used is printed beside its wall-clock time. All run
from compiled bytecode, as after `pip install` (a first, uncounted round writes
it where it is missing; PYTHONDONTWRITEBYTECODE is not passed on).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from handwired.judge.game.catalogue import catalogue, solution_path

TARGET = 2.0
LIST_TARGET = 1.5
RUNS = 5


def seconds(args: list[str], env: dict[str, str], ok_codes=(0, 1)) -> tuple[float, float]:
    """The command's wall-clock time and the CPU time it used (user and system, its threads and children)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        took = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in ok_codes:
            err.seek(0)
            raise SystemExit(f"{' '.join(args)} failed ({code}):\n{err.read().decode(errors='replace')}")
    return took, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each, for a smoke test")
    quick = parser.parse_args().quick
    runs = 1 if quick else RUNS
    command = [sys.executable, "-m", "handwired"]
    with tempfile.TemporaryDirectory() as folder:
        env = {**{key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"},
               "HANDWIRED_HOME": str(Path(folder) / "home"), "COLUMNS": "100",
               **{variable: "1" for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}}
        checks = {}
        for puzzle in catalogue():
            starter = Path(folder) / f"{puzzle.name}-starter.json"
            subprocess.run([*command, "puzzles", "start", puzzle.name, "-o", str(starter)], env=env, check=True,
                           capture_output=True)
            checks[puzzle.name] = {"reference": str(solution_path(puzzle.name)), "starter": str(starter)}
        times: dict[str, list[tuple[float, float]]] = {}
        for round_ in range(runs + (0 if quick else 1)):  # interleaved, so the machine's other work falls on all alike
            if round_ == 1 and not quick:  # the first round is not counted: it wrote bytecode, warmed the file cache
                times = {}
            times.setdefault("floor", []).append(
                seconds([sys.executable, "-c", "import numpy, typer, rich"], env, ok_codes=(0,)))
            times.setdefault("list", []).append(seconds([*command, "puzzles", "list"], env, ok_codes=(0,)))
            for name, files in checks.items():
                for what, path in files.items():
                    times.setdefault(f"{name} {what}", []).append(
                        seconds([*command, "puzzles", "check", name, path], env))
    (baseline, baseline_cpu), (floor, floor_cpu) = medians(times.pop("list")), medians(times.pop("floor"))
    print(f"{runs} run(s) of each, interleaved; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"{'':44} {'wall':>8}  {'ratio':>5}  {'CPU':>8}  {'ratio':>5}")
    print(f"{'import floor: import numpy, typer, rich':44} {floor:6.3f} s  {'':5}  {floor_cpu:6.3f} s")
    listed = "meets" if baseline / floor <= LIST_TARGET else "MISSES"
    print(f"{'baseline: handwired puzzles list':44} {baseline:6.3f} s  {baseline / floor:4.2f}x  "
          f"{baseline_cpu:6.3f} s  {baseline_cpu / floor_cpu:4.2f}x the floor ({listed} the target: <= {LIST_TARGET}x)")
    worst = 0.0
    for label, taken in times.items():
        median, cpu = medians(taken)
        worst = max(worst, median / baseline)
        print(f"{'handwired puzzles check ' + label:44} {median:6.3f} s  {median / baseline:4.2f}x  {cpu:6.3f} s  "
              f"{cpu / baseline_cpu:4.2f}x")
    verdict = "meets" if worst <= TARGET else "MISSES"
    print(f"slowest check: {worst:.2f}x the baseline ({verdict} the target: <= {TARGET}x)")


def medians(taken: list[tuple[float, float]]) -> tuple[float, float]:
    """The median wall-clock time and the median CPU time of some runs."""
    return statistics.median(wall for wall, _ in taken), statistics.median(cpu for _, cpu in taken)


if __name__ == "__main__":
    main()
