"""How long `handwired spread` takes on the two largest puzzles, against `handwired puzzles check` on the same file.

Run:  python benchmarks/bench_spread.py [--quick]

A spread reads one value at every context a puzzle judges, through the same prefix evaluation as the check,
so it should cost about what the check costs. On induction (vocab abcd, n_ctx 8, two blocks: 87,380 contexts)
and add (30,000 contexts of its domain), each on its reference solution, it times, interleaved so the
machine's other work falls on both alike, each the median of seven runs (one with --quick):

* the whole commands, `handwired puzzles check NAME REF` and
  `handwired spread VALUE --puzzle NAME -w REF` (start-up, reading, evaluating, drawing);
* the work in process: the verdict (handwired.judge.game.verdict.submit) against the spread
  (handwired.judge.workbench.spread.spread), each after one warm-up.

Target: the spread within 1.5x the check, as a whole command and in process. It checks its own answers: the
spread groups exactly the contexts the check judges, and each group's count is the number of contexts whose
answer is that token.
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
from handwired.judge.game.catalogue import load_puzzle, solution_path
from handwired.judge.game.verdict import submit
from handwired.judge.kinds.rules import DECIDED
from handwired.judge.workbench import spread as spreading
from handwired.weightfile import load

TARGET = 1.5
RUNS = 7
VALUES = {"induction": "logits:a", "add": "logits:0"}  # puzzle -> the value spread


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


def contexts_judged(puzzle) -> list[np.ndarray]:
    if puzzle.domain is not None:
        return list(puzzle.domain.contexts)
    n = len(puzzle.vocab)
    return [np.array(list(np.ndindex(*(n,) * length))) for length in range(1, puzzle.n_ctx + 1)]


def measure(name: str, value: str, runs: int, env: dict[str, str]) -> tuple[dict[str, float], dict]:
    reference = str(solution_path(name))
    command = [sys.executable, "-m", "handwired"]
    check_args = [*command, "puzzles", "check", name, reference]
    spread_args = [*command, "spread", value, "--puzzle", name, "-w", reference]
    puzzle, model = load_puzzle(name), load(reference)
    probe = parse_probe(model, value)
    submit(puzzle, model)  # warm-up: imports, caches
    spreading.spread(model, probe, spreading.puzzle_source(puzzle, model))
    times: dict[str, list[float]] = {"check": [], "spread": [], "submit": [], "spread in process": []}
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
    answers = np.concatenate([np.where(j.status == DECIDED, np.argmax(j.acceptable, axis=1), -1)
                              for j in (puzzle.rule.judge(c) for c in contexts_judged(puzzle))])
    counts = {g["group"]: g["count"] for g in data["groups"]}
    assert counts == {puzzle.vocab[t]: int((answers == t).sum()) for t in range(len(puzzle.vocab))
                      if (answers == t).any()}, counts
    return {label: statistics.median(taken) for label, taken in times.items()}, data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each, for a smoke test")
    runs = 1 if parser.parse_args().quick else RUNS
    print(f"{runs} run(s) of each, interleaved; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "HANDWIRED_HOME": str(Path(folder) / "home"), "COLUMNS": "100"}
        for name, value in VALUES.items():
            median, data = measure(name, value, runs, env)
            print(f"{name}, reference solution, {data['total']:,} contexts; {value}: {data['verdict']}")
            whole = median["spread"] / median["check"]
            work = median["spread in process"] / median["submit"]
            print(f"  {'handwired puzzles check ' + name + ' REF':52} {median['check']:6.2f} s")
            print(f"  {'handwired spread ' + value + ' --puzzle ' + name + ' -w REF':52} {median['spread']:6.2f} s"
                  f"  {whole:4.2f}x")
            print(f"  {'in process: submit (the verdict)':52} {median['submit']:6.2f} s")
            print(f"  {'in process: spread':52} {median['spread in process']:6.2f} s  {work:4.2f}x")
            for what, ratio in (("as a whole command", whole), ("in process", work)):
                verdict = "meets" if ratio <= TARGET else "MISSES"
                print(f"  spread: {ratio:.2f}x the check {what} ({verdict} the target: <= {TARGET}x)")


if __name__ == "__main__":
    main()
