"""What proof by cases saves: max-of-k at the compact-proofs size (maxk64: 64 tokens, k = 4, 16,777,216 contexts),
proved by cases, against the certified walk of its contexts, in the same run.

Run:  python benchmarks/bench_cases.py [--quick]

The domain is too large for a check to walk (more than 1,000,000 inputs), so the walk is timed on the contexts that
start with each of a few tokens (64^3 = 262,144 each, the certified walk of a listed set, as a proof by walk judges
them), and its time for all 16.8 M is that times 64 over the tokens timed: the walk's estimate. Proof by cases runs
on the whole domain, the reference's and the record's. Both in CPU time, the best of three runs (one with
--quick, on one token). It checks its own answers: every case proof proves all 16,777,216 contexts, and the walked
contexts are all proved. Target: proof by cases at least 10× faster than the walk's estimate (it is
about 100× on a 2-core machine: a sharp head is proved in some 1,500 cases).
"""

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported

import numpy as np

from handwired.engine.arithmetic.certified import certified_walk
from handwired.engine.walk import Listed
from handwired.judge.checking import cases
from handwired.judge.game.catalogue import load_puzzle, solution_path
from handwired.weightfile import load

RECORD = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "records", "maxk64.json")
TARGET = 10.0


def prove(puzzle, model):  # -> (CPU seconds, the proof)
    space = cases.space_of(puzzle.domain, model.n_vocab, model.n_ctx)
    started = time.process_time()
    proof = cases.prove(model, puzzle.rule, space, puzzle.name, cases.size(space))
    seconds = time.process_time() - started
    if not proof.proved or proof.report.proved != 64**4:
        raise SystemExit(f"{puzzle.name}: not proved by cases: {proof}")
    return seconds, proof


def walk(puzzle, model, first: int) -> float:  # -> CPU seconds of the certified walk of the contexts starting so
    grid = np.stack(np.meshgrid(*[np.arange(64)] * 3, indexing="ij"), -1).reshape(-1, 3)
    contexts = np.concatenate([np.full((len(grid), 1), first), grid], axis=1)
    started, passed = time.process_time(), 0
    for visit in certified_walk(model, Listed([contexts], model.n_vocab)):
        if visit.logits is not None and visit.judged.any():
            answer = visit.prefixes[visit.judged].max(axis=1)  # the rule's: the largest token
            passed += int((cases.certified_leads(visit.logits[visit.judged], answer, model.n_vocab)[0] > 0).sum())
    seconds = time.process_time() - started
    if passed != len(contexts):
        raise SystemExit(f"{puzzle.name}: the walk passed {passed} of {len(contexts)}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run, one token walked: checks the answers")
    quick = parser.parse_args().quick
    runs, firsts = (1, [63]) if quick else (3, [0, 31, 63])
    print(f"{runs} run(s), best taken; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    puzzle = load_puzzle("maxk64")
    worst = np.inf
    for label, path in (("reference", str(solution_path("maxk64"))), ("record", RECORD)):
        model = load(path)
        by_cases = min(prove(puzzle, model)[0] for _ in range(runs))
        _, proof = prove(puzzle, model)
        walked = min(sum(walk(puzzle, model, first) for first in firsts) for _ in range(runs))
        estimate = walked * 64 / len(firsts)
        ratio = estimate / by_cases
        worst = min(worst, ratio)
        print(f"maxk64 {label}: by cases {by_cases:.2f} s CPU ({proof.cases:,} cases, {proof.leaves:,} single "
              f"contexts, deepest split {proof.deepest}); the certified walk {walked:.2f} s for "
              f"{len(firsts) * 64**3:,} contexts, {estimate:.0f} s estimated for all 16,777,216: {ratio:.0f}× faster")
    if not quick and worst < TARGET:
        raise SystemExit(f"proof by cases only {worst:.1f}× faster than the walk (target {TARGET}×)")


if __name__ == "__main__":
    main()
