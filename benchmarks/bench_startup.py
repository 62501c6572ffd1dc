"""How long `handwired predict aabaa` takes as a whole command, against importing what it cannot do without.

Run:  python benchmarks/bench_startup.py            (about ten seconds)
      python benchmarks/bench_startup.py --runs 30

The baseline is `python -c "import numpy, typer, rich.table"`: the libraries
every handwired command needs, and nothing of handwired's own. Both commands
run the same way: from compiled bytecode, as after `pip install` (the first,
unmeasured run of each writes it if it is missing), with single-threaded BLAS
(which handwired sets for itself). They alternate, baseline then handwired, so
the machine's other work falls on both alike; the figures are medians.

Target: handwired predict aabaa <= 1.25x the baseline (wall-clock medians).
The CPU time each command used is printed too: it moves less than wall-clock
time when other work shares the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET = 1.25


def handwired_command() -> list[str]:
    """The installed `handwired` script beside this interpreter, as a user runs it; else python -m handwired."""
    script = Path(sys.executable).with_name("handwired")
    if script.exists():
        return [str(script)]
    found = shutil.which("handwired")
    return [found] if found else [sys.executable, "-m", "handwired"]


def run(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One whole run: (wall-clock seconds, CPU seconds of the child)."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{child.stderr.read().decode()}")
    child.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each command (default 10)")
    parser.add_argument("--quick", action="store_true", help="three runs of each, for a smoke test")
    options = parser.parse_args()
    if options.quick:
        options.runs = 3
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[variable] = "1"
    commands = {
        "baseline: python -c 'import numpy, typer, rich.table'": [sys.executable, "-c",
                                                                   "import numpy, typer, rich.table"],
        "handwired predict aabaa": [*handwired_command(), "predict", "aabaa"],
    }
    for command in commands.values():  # unmeasured: writes bytecode if missing, warms the file cache
        run(command, env)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(options.runs):
        for name, command in commands.items():
            wall, cpu = run(command, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    print(f"{options.runs} runs of each, interleaved; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    for name in commands:
        print(f"  {name:<52} wall median {statistics.median(walls[name]) * 1000:5.0f} ms "
              f"(fastest {min(walls[name]) * 1000:4.0f})   CPU median {statistics.median(cpus[name]) * 1000:5.0f} ms")
    base, predict = commands
    wall_ratio = statistics.median(walls[predict]) / statistics.median(walls[base])
    cpu_ratio = statistics.median(cpus[predict]) / statistics.median(cpus[base])
    verdict = "meets" if wall_ratio <= TARGET else "MISSES"
    print(f"  ratio {wall_ratio:.2f}x wall-clock ({verdict} target: <= {TARGET}x), {cpu_ratio:.2f}x CPU time")


if __name__ == "__main__":
    main()
