"""handwired against TransformerLens on the same exhaustive sets: the add and induction puzzles' every context.

Run:  .venv-tl/bin/python benchmarks/bench_peers.py [--quick]

(.venv-tl is the environment .ci/transformer-lens builds, with torch's CPU build and TransformerLens; this
checkout's handwired is imported whatever is installed there.) Without torch or TransformerLens it says so and
stops, exit 0.

Each puzzle's reference solution is exported (handwired's export) and loaded into TransformerLens with the
exported README's own loading code, then both evaluate the next-token logits of every context the puzzle
judges, in the same process, interleaved, medians of seven rounds (one with --quick):

* handwired: the prefix walk of the add domain (handwired.engine.walk) and of every string for induction
  (handwired.engine.parts: cut by slot, in parts on threads), as the check runs them; the float check, that walk
  with the rule's judging and the tally (submit without the proof: ``check --no-proof``), the whole set's
  verdict in float64; and the whole verdict (submit, certified) beside them;
* TransformerLens, used as well as it can be: float64, the full-length contexts in batches (a context and its
  prefixes are one row; every position's logits are read), the best of 1 and 2 torch threads and of two batch
  sizes; float32 reported beside it.

It checks its own answers: every context's logits agree between the two (float64, to 1e-9). The target: handwired's
float check at least 2x faster than TransformerLens float64 on both sets (its evaluation alone is said beside it).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's handwired
# numpy's BLAS without threads of its own, as the command line runs it (handwired/cli/__init__.py); torch's
# threads are set for each measurement below
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from handwired.engine.arithmetic.floats import float_walk  # noqa: E402
from handwired.engine.parts import every_string  # noqa: E402
from handwired.judge.checking.contexts import contexts_of  # noqa: E402
from handwired.judge.game.catalogue import load_puzzle, reference_solution  # noqa: E402
from handwired.judge.game.verdict import submit  # noqa: E402

TARGET = 2.0
RUNS = 7
BATCHES = (4096, 65536)  # TransformerLens's batch sizes tried, in rows of full-length contexts


def handwired_logits(name: str, puzzle, model) -> dict[tuple[int, ...], np.ndarray]:
    """Every judged context's logits, as handwired's check computes them."""
    visits = ((v.prefixes[v.judged], v.logits[v.judged]) for v in walked(puzzle, model) if v.judged.any())
    return {(len(row), *row.tolist()): logits for prefixes, batch in visits for row, logits in zip(prefixes, batch)}


def walked(puzzle, model):
    """The check's walk: of the domain, or of every string."""
    if puzzle.domain is not None:
        return float_walk(model, puzzle.domain)
    return every_string(model, lambda shape: float_walk(model, shape))


def handwired_work(puzzle, model):
    """The evaluation alone, as the check runs it: the walk, every batch consumed."""
    return lambda: sum(1 for _ in walked(puzzle, model))


def full_rows(puzzle, model) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The full-length contexts whose prefixes are the judged contexts, [rows, n], and which (row, position)
    pairs are judged contexts (the context is the row's first position + 1 tokens)."""
    if puzzle.domain is None:
        rows = contexts_of(model.n_ctx, 0, model.n_vocab ** model.n_ctx, model.n_vocab).astype(np.int64)
        return rows, []  # every position of every row
    contexts = puzzle.domain.contexts
    longest = contexts[-1].astype(np.int64)  # for add, each sum with two digits of its answer
    return longest, [(length - 1) for length in sorted({c.shape[1] for c in contexts})]


def transformer_lens_work(tl_model, rows, batch: int, threads: int, torch):
    def work():
        torch.set_num_threads(threads)
        with torch.inference_mode():
            for start in range(0, len(rows), batch):
                tl_model(torch.from_numpy(rows[start:start + batch]), return_type="logits").numpy()
    return work


def agree(tl_model, rows, positions, ours, torch) -> float:
    """The largest difference between TransformerLens's logits and handwired's over every judged context."""
    with torch.inference_mode():
        logits = np.concatenate([tl_model(torch.from_numpy(rows[s:s + 8192]), return_type="logits").numpy()
                                 for s in range(0, len(rows), 8192)])  # [rows, n, n_vocab]
    worst, seen = 0.0, set()
    for r, row in enumerate(rows):
        for p in positions or range(rows.shape[1]):
            key = (p + 1, *row[:p + 1].tolist())
            if key in ours:
                worst = max(worst, float(np.abs(logits[r, p] - ours[key]).max()))
                seen.add(key)
    assert len(seen) == len(ours), (len(seen), len(ours))  # every judged context was compared
    return worst


def median_of(work, runs: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(runs):
        start = clock()
        work()
        times.append(clock() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, answers checked, no timing judged")
    runs = 1 if parser.parse_args().quick else RUNS
    try:
        import torch
        import transformer_lens  # noqa: F401  (only whether it is there)
    except ImportError as error:
        print(f"torch or TransformerLens is not installed here ({error}): nothing compared; build .venv-tl with "
              "bash .ci/transformer-lens 4.3.0 and run this with .venv-tl/bin/python")
        return
    from handwired.interop import export_folder

    print(f"{runs} round(s), interleaved; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"torch {torch.__version__}, TransformerLens {transformer_lens_version()}")
    missed = []
    for name in ("add", "induction"):
        puzzle = load_puzzle(name)
        model = reference_solution(puzzle)
        with tempfile.TemporaryDirectory() as folder:
            export_folder(model, Path(folder) / "export")
            tl64 = load_in_transformer_lens(Path(folder) / "export", "float64")
            tl32 = load_in_transformer_lens(Path(folder) / "export", "float32")
        rows, positions = full_rows(puzzle, model)
        worst = agree(tl64, rows, positions, handwired_logits(name, puzzle, model), torch)
        assert worst < 1e-9, (name, worst)
        ours, verdict = handwired_work(puzzle, model), (lambda p=puzzle, m=model: submit(p, m))
        checked = lambda p=puzzle, m=model: submit(p, m, proof=False)  # noqa: E731
        for work in (ours, checked, verdict):
            work()
        setups = {f"{threads} thread{'s' * (threads > 1)}, batch {batch:,}": (threads, batch)
                  for threads in (1, 2) for batch in BATCHES}
        times: dict[str, list[float]] = {key: [] for key in ["ours", "ours cpu", "check", "check cpu", "verdict",
                                                        *setups, "float32"]}
        for _ in range(runs):
            times["ours"].append(median_of(ours, 1))
            times["ours cpu"].append(median_of(ours, 1, time.process_time))  # load disturbs it less
            times["check"].append(median_of(checked, 1))
            times["check cpu"].append(median_of(checked, 1, time.process_time))
            times["verdict"].append(median_of(verdict, 1))
            for key, (threads, batch) in setups.items():
                times[key].append(median_of(transformer_lens_work(tl64, rows, batch, threads, torch), 1))
        best = min(setups, key=lambda key: statistics.median(times[key]))
        threads, batch = setups[best]
        for _ in range(runs):
            times["float32"].append(median_of(transformer_lens_work(tl32, rows, batch, threads, torch), 1))
        median = {key: statistics.median(taken) for key, taken in times.items()}
        ratio = median[best] / median["check"]
        judged = len(handwired_logits(name, puzzle, model))
        print(f"\n{name}: {judged:,} contexts ({len(rows):,} full-length rows for TransformerLens); logits agree "
              f"to {worst:.1e}")
        print(f"  {'handwired, the evaluation':48} {median['ours']:7.4f} s ({median['ours cpu']:.4f} s of CPU time)")
        print(f"  {'handwired, the float check (submit, no proof)':48} {median['check']:7.4f} s "
              f"({median['check cpu']:.4f} s of CPU time)")
        print(f"  {'handwired, the whole verdict (submit)':48} {median['verdict']:7.4f} s")
        for key in [*setups, "float32"]:
            what = "TransformerLens " + (f"float32, {best}" if key == "float32" else f"float64, {key}")
            print(f"  {what:48} {median[key]:7.4f} s  {median[key] / median['check']:5.2f}x the float check, "
                  f"{median[key] / median['ours']:5.2f}x the evaluation")
        meets = ratio >= TARGET
        print(f"  TransformerLens float64 at its best takes {ratio:.2f}x the float check's time and "
              f"{median[best] / median['ours']:.2f}x the evaluation's ({'meets' if meets else 'MISSES'} the "
              f"target: >= {TARGET}x the float check)")
        missed += [] if meets else [name]
    if missed and runs > 1:
        print(f"\nmissed on {', '.join(missed)}")


def transformer_lens_version() -> str:
    from importlib.metadata import version
    return version("transformer-lens")


def load_in_transformer_lens(folder: Path, dtype: str):
    """The exported README's own loading code, run as a user would (in ``dtype``)."""
    from handwired.interop.readme import LOAD_V3, LOAD_V4
    namespace: dict = {}
    major = transformer_lens_version().split(".")[0]
    exec((LOAD_V4 if major == "4" else LOAD_V3).replace("torch.float64", f"torch.{dtype}"), namespace)
    return namespace["load_handwired"](str(folder))


if __name__ == "__main__":
    main()
