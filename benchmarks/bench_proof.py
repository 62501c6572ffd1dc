"""What the proof costs: the certified puzzle check against the float64 check, in process, on add and induction.

Run:  python benchmarks/bench_proof.py [--quick]

For the reference solutions of add (its domain, walked as a trie) and induction (every string, walked as a trie
cut by slot, in parts on threads: engine/parts.py)
it times the whole verdict, :func:`handwired.judge.game.verdict.submit`, with the certified bounds (the default) and
without them (``--no-proof``), interleaved, the best of five runs each (one with --quick), in wall time and in
CPU time (every thread's): on a shared machine the CPU time is the steadier measure of the work, and the
target's. It checks its own answers in both modes: the same counts and the same margin (the certified passes' values
are the float passes' bits), every passing context proved with the bounds, none without.
Target: the certified check within 2.5× the float check, the cost the checks' estimates assume for a proof on a
walk (``PROOF_COST`` in engine/cost.py); the aim beyond it is 1.5×.

Both run with numpy's BLAS on one thread (OPENBLAS_NUM_THREADS=1, set before numpy loads, unless already set): the
walk's own threads each call BLAS, and on a busy 2-core machine BLAS threads inside them spin against each
other, which moved the float check of induction between 0.2 s and 2 s from run to run.
"""

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported

from handwired.engine.cost import PROOF_COST
from handwired.judge.game.catalogue import load_puzzle, solution_path
from handwired.judge.game.verdict import submit
from handwired.weightfile import load

TARGET = PROOF_COST  # what every estimate assumes the proof costs
RUNS = 5
PUZZLES = ("add", "induction")


def timed(puzzle, model, proof):  # -> (the submission, (wall seconds, CPU seconds of every thread))
    wall, cpu = time.perf_counter(), time.process_time()
    result = submit(puzzle, model, proof=proof)
    return result, (time.perf_counter() - wall, time.process_time() - cpu)


def check_answers(name, proved, plain) -> None:
    a, b = proved.report, plain.report
    same = (a.checked, a.passed, a.failed, a.margin) == (b.checked, b.passed, b.failed, b.margin)
    if not (same and a.proof and a.proved == a.passed > 0 and a.unproved == 0 and not b.proof and b.proved == 0):
        raise SystemExit(f"{name}: the certified and float checks disagree: {a} / {b}")
    if not proved.solved or plain.solved:
        raise SystemExit(f"{name}: solved only when proved: {proved.solved} / {plain.solved}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each: checks the answers, not the timing")
    runs = 1 if parser.parse_args().quick else RUNS
    print(f"{runs} run(s) of each, interleaved, best taken; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    worst = 0.0
    for name in PUZZLES:
        puzzle = load_puzzle(name)
        model = load(str(solution_path(name)))
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(runs):
            plain, seconds = timed(puzzle, model, False)
            times[False].append(seconds)
            proved, seconds = timed(puzzle, model, True)
            times[True].append(seconds)
            check_answers(name, proved, plain)
        (float_wall, float_cpu), (proof_wall, proof_cpu) = (min(times[mode]) for mode in (False, True))
        ratio = proof_cpu / float_cpu
        worst = max(worst, ratio)
        report = proved.report
        print(f"{name:10} {report.checked:>7,} contexts  float64 check {float_wall:6.3f} s ({float_cpu:6.3f} s CPU)  "
              f"certified {proof_wall:6.3f} s ({proof_cpu:6.3f} s CPU)  {ratio:4.2f}x in CPU time, "
              f"{proof_wall / float_wall:4.2f}x in wall time\n{'':10} all {report.proved:,} passing contexts "
              f"proved; the widest bound {report.widest:.2e} logits")
    verdict = "meets" if worst <= TARGET else "MISSES"
    print(f"costliest proof: {worst:.2f}x the float check in CPU time ({verdict} the target: <= {TARGET}x)")


if __name__ == "__main__":
    main()
