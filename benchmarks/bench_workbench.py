"""How long `sweep` and `ablate` take, against one `puzzles check` of the same file, in process; and the peak
memory of a sweep over a large user domain.

Run:  python benchmarks/bench_workbench.py [--quick]

A sweep judges the file at every value of a constant, an ablation with every part removed in turn; each walks the
contexts in bounded batches and shares the stages of the forward pass its variants do not change
(handwired.engine.resume). Interleaved, so the machine's other work falls on all alike, each the median of five
runs (one with --quick) in CPU time (the process's, every thread's) and in wall time, after a warm-up, with numpy's
BLAS on one thread (OPENBLAS_NUM_THREADS=1 unless set: on small products its threads spend CPU time waiting):

* one check: handwired.judge.game.verdict.submit of the reference solution (the baseline);
* a 50-value sweep of the add reference's Lg (block 0's attention: nothing but the embeddings is shared) —
  target <= 50x the check;
* a 50-value sweep of add's K (only the MLP of its one, last, block) and of induction's Out (only block 1, the
  last of two) — target <= 20x their check;
* ablate of every head and MLP unit of the add reference (and each block's attention and MLP) — target
  <= (parts + 1)x the check.

Then, as a whole command in a child process, `handwired sweep` of a constant of a random 2-block model at add's
caps (n_embd 32, two heads, an MLP of 64) over the add statement rewritten with `###+##` operands (400,000
contexts, as benchmarks/bench_domains.py writes it), 5 values: its peak resident memory and CPU time, against
`puzzles check --no-proof` of the same file and statement in the same run.

--quick runs the add reference only, and the memory measure on `##+##` (40,000 contexts). It checks its own
answers: the sweep's verdict at a few values, and the ablation of a few parts, against the file edited and judged
by submit; the large sweep's count of contexts.
"""

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported (by bench_domains too)

from bench_domains import check, model, statement  # noqa: E402

from handwired.judge.game.catalogue import load_puzzle, solution_path
from handwired.judge.game.verdict import submit
from handwired.judge.workbench import spread as spreading
from handwired.judge.workbench.ablate import ablate
from handwired.judge.workbench.sweep import parse_range, sweep, with_constants
from handwired.weightfile import load, parse

RUNS = 5
SWEEPS = [("add", "Lg=1..512", 50.0, "block 0's attention onwards"), ("add", "K=1..40", 20.0, "the last block's MLP"),
          ("induction", "Out=0.5..8", 20.0, "block 1 of 2, the last")]


def timed(work) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run."""
    start, cpu = time.perf_counter(), time.process_time()
    work()
    return time.process_time() - cpu, time.perf_counter() - start


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
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in work}
    for _ in range(runs):
        for label, task in work.items():
            times[label].append(timed(task))

    for name, text, _, _ in sweeps:
        check_sweep(*files[name], results[text])
        with_constants(files[name][1], {results[text].ranges[0].name: 1.0})
    check_ablation(*files["add"], results["ablate"])

    cpu = {label: statistics.median(t[0] for t in taken) for label, taken in times.items()}
    wall = {label: statistics.median(t[1] for t in taken) for label, taken in times.items()}
    print(f"{runs} run(s) of each, interleaved; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"{'':58} {'CPU':>8} {'ratio':>6}  {'wall':>8} {'ratio':>6}")

    def line(label: str, what: str, base: str, target: float | None) -> None:
        ratio = cpu[label] / cpu[base]
        meets = "meets" if ratio <= (target or 0) else "MISSES"
        verdict = "" if quick or target is None else f"  target <= {target:.0f}x (CPU): {meets} it"
        print(f"{what:58} {cpu[label]:7.3f}s {ratio:5.1f}x  {wall[label]:7.3f}s {wall[label] / wall[base]:5.1f}x"
              f"{verdict}")

    for name in files:
        line(f"check {name}", f"one check of the {name} reference (submit)", f"check {name}", None)
    for name, text, target, touches in sweeps:
        line(f"sweep {name} {text}", f"sweep {name} {text}, {steps} values ({touches})", f"check {name}", target)
    parts = len(results["ablate"].rows)
    line("ablate add", f"ablate add, {parts} parts (heads, units, attention, MLP)", "check add", parts + 1)
    memory("##+##" if quick else "###+##")
    if quick:
        print("(--quick: the answers were checked; the timings are not judged)")


def memory(template: str) -> None:
    """Peak resident memory and CPU time of `handwired sweep` over a wide add statement, against its check."""
    command = [sys.executable, "-m", "handwired"]
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        env = {**os.environ, "HANDWIRED_HOME": str(folder / "home")}
        path, n_ctx = statement(folder, template), len(template) + 5
        weights = model(folder, n_ctx)
        document = json.loads(weights.read_text(encoding="utf-8"))
        document["constants"] = {"K": document["ln_f"]["b"][0]}  # a constant in the final LayerNorm's bias
        document["ln_f"]["b"][0] = "K"
        weights.write_text(json.dumps(document), encoding="utf-8")
        contexts = 10 ** template.count("#") * 4
        _, base_cpu, base_peak, out = check([*command, "puzzles", "check", "--no-proof", str(path), str(weights),
                                             "--json"], env)
        assert json.loads(out)["contexts"] == contexts, out
        _, cpu, peak, out = check([*command, "sweep", str(weights), "K=-1..1", "--steps", "5", "--puzzle",
                                   str(path), "--json"], env)
    print(f"{'puzzles check --no-proof ' + template + f' ({contexts:,} contexts)':58} {base_cpu:7.2f}s CPU "
          f"{base_peak:6,} MB")
    if out.startswith("error:"):  # refused by its estimate, in one line
        print(f"sweep over {template}: refused: {out.strip()} ({peak} MB)")
        return
    data = json.loads(out)
    assert data["judged"] == contexts and len(data["points"]) == 5, out
    print(f"{'sweep of a constant of ln_f over ' + template + ', 5 values':58} {cpu:7.2f}s CPU {peak:6,} MB "
          f"{peak / base_peak:5.2f}x the check's memory")


if __name__ == "__main__":
    main()
