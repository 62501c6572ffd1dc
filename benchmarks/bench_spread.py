"""How long `handwired spread` takes on the largest puzzle, against `handwired puzzles check` on the same file.

Run:  python benchmarks/bench_spread.py [--quick]

A spread reads one value at every context a puzzle judges, through the same prefix evaluation as the check,
so it should cost about what the check costs. On induction (vocab abcd, n_ctx 8, two blocks: 87,380 contexts)
and its reference solution, it times, interleaved so the machine's other work falls on both alike, each the
median of seven runs (one with --quick):

* the whole commands, `handwired puzzles check induction REF` and
  `handwired spread logits:a --puzzle induction -w REF` (start-up, reading, evaluating, drawing);
* the work in process: the verdict (handwired.judge.verdict.submit) against the spread
  (handwired.judge.spread.spread), each after one warm-up.

Target: the spread within 1.5x the check. It checks its own answers: the spread groups exactly the contexts the
check judges, and each group's count is the number of contexts whose answer is that token.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from handwired.engine.probe import parse_probe
from handwired.judge import spread as spreading
from handwired.judge.catalogue import load_puzzle, solution_path
from handwired.judge.rules import DECIDED
from handwired.judge.verdict import submit
from handwired.weightfile import load

TARGET = 1.5
RUNS = 7
VALUE = "logits:a"


def run(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return took, done.stdout


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each, for a smoke test")
    runs = 1 if parser.parse_args().quick else RUNS
    reference = str(solution_path("induction"))
    command = [sys.executable, "-m", "handwired"]
    check_args = [*command, "puzzles", "check", "induction", reference]
    spread_args = [*command, "spread", VALUE, "--puzzle", "induction", "-w", reference]

    puzzle, model = load_puzzle("induction"), load(reference)
    probe = parse_probe(model, VALUE)
    submit(puzzle, model)  # warm-up: imports, caches
    spreading.spread(model, probe, spreading.puzzle_source(puzzle, model))
    times: dict[str, list[float]] = {"check": [], "spread": [], "submit": [], "spread in process": []}
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "HANDWIRED_HOME": str(Path(folder) / "home"), "COLUMNS": "100"}
        for _ in range(runs):
            times["check"].append(run(check_args, env)[0])
            times["spread"].append(run(spread_args, env)[0])
            times["submit"].append(timed(lambda: submit(puzzle, model)))
            times["spread in process"].append(
                timed(lambda: spreading.spread(model, probe, spreading.puzzle_source(puzzle, model))))
        report = json.loads(run([*check_args, "--json"], env)[1])
        data = json.loads(run([*spread_args, "--json"], env)[1])

    # its own answers: the spread groups the contexts the check judges, by the rule's answer
    judged = report["passed"] + report["failed"]
    assert data["grouped"] == judged == sum(g["count"] for g in data["groups"]), (data["grouped"], judged)
    contexts = [np.array(list(np.ndindex(*(4,) * n))) for n in range(1, 9)]
    answers = np.concatenate([np.where(j.status == DECIDED, np.argmax(j.acceptable, axis=1), -1)
                              for j in (puzzle.rule.judge(c) for c in contexts)])
    assert [g["count"] for g in data["groups"]] == [int((answers == t).sum()) for t in range(4)]

    median = {label: statistics.median(taken) for label, taken in times.items()}
    print(f"{runs} run(s) of each, interleaved; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"induction, reference solution, {data['total']:,} contexts; {VALUE}: {data['verdict']}")
    whole = median["spread"] / median["check"]
    work = median["spread in process"] / median["submit"]
    print(f"{'handwired puzzles check induction REF':52} {median['check']:6.2f} s")
    print(f"{'handwired spread ' + VALUE + ' --puzzle induction -w REF':52} {median['spread']:6.2f} s  {whole:4.2f}x")
    print(f"{'in process: submit (the verdict)':52} {median['submit']:6.2f} s")
    print(f"{'in process: spread':52} {median['spread in process']:6.2f} s  {work:4.2f}x")
    verdict = "meets" if whole <= TARGET else "MISSES"
    print(f"spread: {whole:.2f}x the check as a whole command ({verdict} the target: <= {TARGET}x)")


if __name__ == "__main__":
    main()
