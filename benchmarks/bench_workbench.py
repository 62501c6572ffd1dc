"""How long `sweep` and `ablate` take, against one `puzzles check` of the same file, in process.

Run:  python benchmarks/bench_workbench.py [--quick]

A sweep judges the file at every value of a constant, an ablation with every part removed in turn; each shares
the stages of the forward pass its variants do not change (handwired.engine.resume). Interleaved, so the
machine's other work falls on all alike, each the median of five runs (one with --quick), after a warm-up:

* one check: handwired.judge.verdict.submit of the reference solution (the baseline);
* a 50-value sweep of the add reference's Lg (block 0's attention: nothing but the embeddings is shared) —
  target <= 50x the check;
* a 50-value sweep of add's K (only the MLP of its one, last, block) and of induction's Out (only block 1, the
  last of two) — target <= 20x their check;
* ablate of every head and MLP unit of the add reference (and each block's attention and MLP) — target
  <= (parts + 1)x the check.

--quick runs the add reference only. It checks its own answers: the sweep's verdict at a few values, and the
ablation of a few parts, against the file edited and judged by submit.
"""

import argparse
import copy
import os
import statistics
import time

from handwired.judge import spread as spreading
from handwired.judge.ablate import ablate
from handwired.judge.catalogue import load_puzzle, solution_path
from handwired.judge.sweep import parse_range, sweep, with_constants
from handwired.judge.verdict import submit
from handwired.weightfile import load, parse

RUNS = 5
SWEEPS = [("add", "Lg=1..512", 50.0, "block 0's attention onwards"), ("add", "K=1..40", 20.0, "the last block's MLP"),
          ("induction", "Out=0.5..8", 20.0, "block 1 of 2, the last")]


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def check_sweep(puzzle, model, result) -> None:
    """A few of the sweep's values, judged the ordinary way: the file edited, parsed, submitted."""
    name = result.ranges[0].name
    for point in result.points[:: max(1, len(result.points) // 4)]:
        document = copy.deepcopy(model.written.document)
        document["constants"][name] = point.values[0]
        report = submit(puzzle, parse(document, model.source)[0]).report
        assert (report.ok, report.failed) == (point.verdict.ok, point.verdict.failed), (name, point)


def check_ablation(puzzle, model, result) -> None:
    for row in result.rows[:: max(1, len(result.rows) // 4)]:
        report = submit(puzzle, row.part.variant).report
        assert (report.ok, report.failed) == (row.verdict.ok, row.verdict.failed), row.part.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one run of each, 5-value sweeps of add only, for a smoke test")
    quick = parser.parse_args().quick
    runs, steps = (1, 5) if quick else (RUNS, 50)
    names = ("add",) if quick else ("add", "induction")  # induction's check alone takes seconds
    files = {name: (load_puzzle(name), load(str(solution_path(name)))) for name in names}
    sweeps = [entry for entry in SWEEPS if entry[0] in names]
    work = {f"check {name}": (lambda p=p, m=m: submit(p, m)) for name, (p, m) in files.items()}
    results = {}
    for name, text, _, _ in sweeps:
        puzzle, model = files[name]
        work[f"sweep {name} {text}"] = lambda p=puzzle, m=model, t=text: results.__setitem__(
            t, sweep(m, spreading.puzzle_source(p, m), [parse_range(m, t, steps, False)]))
    puzzle, model = files["add"]
    work["ablate add"] = lambda: results.__setitem__("ablate", ablate(model, spreading.puzzle_source(puzzle, model)))
    for task in work.values():  # warm-up: imports, caches
        task()
    times: dict[str, list[float]] = {label: [] for label in work}
    for _ in range(runs):
        for label, task in work.items():
            times[label].append(timed(task))

    for name, text, _, _ in sweeps:
        check_sweep(*files[name], results[text])
        with_constants(files[name][1], {results[text].ranges[0].name: 1.0})
    check_ablation(*files["add"], results["ablate"])

    median = {label: statistics.median(taken) for label, taken in times.items()}
    print(f"{runs} run(s) of each, interleaved; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    for name in files:
        print(f"{'one check of the ' + name + ' reference (submit)':58} {median['check ' + name]:7.3f} s   1x")
    for name, text, target, touches in sweeps:
        ratio = median[f"sweep {name} {text}"] / median[f"check {name}"]
        verdict = "" if quick else f"  target <= {target:.0f}x: {'meets' if ratio <= target else 'MISSES'} it"
        print(f"{f'sweep {name} {text}, {steps} values ({touches})':58} {median[f'sweep {name} {text}']:7.3f} s "
              f"{ratio:5.1f}x{verdict}")
    parts = len(results["ablate"].rows)
    ratio = median["ablate add"] / median["check add"]
    verdict = "" if quick else f"  target <= {parts + 1}x: {'meets' if ratio <= parts + 1 else 'MISSES'} it"
    print(f"{f'ablate add, {parts} parts (heads, units, attention, MLP)':58} {median['ablate add']:7.3f} s "
          f"{ratio:5.1f}x{verdict}")
    if quick:
        print("(--quick: the answers were checked; the timings are not judged)")


if __name__ == "__main__":
    main()
