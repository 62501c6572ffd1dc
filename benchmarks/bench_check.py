"""How fast handwired checks a model, against the per-context loop a user would write.

Run:  python benchmarks/bench_check.py          (about a minute on a 2-core machine)
      python benchmarks/bench_check.py --quick  (smaller sizes, a few seconds)

Every figure is measured in this run and compared with the baseline measured
in this same run: one forward pass per context, then argmax, the way the
published hand-wired code tests its model. Targets (2-core machine):

* batched evaluation >= 1,000,000 contexts/s on the aab model, >= 50x the loop;
* ``handwired check --exhaustive`` on a vocab-2, n_ctx-16 model < 1 s end to end;
* 10,000,000 windows checked with peak memory < 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# As the handwired command does, for both sides alike: single-threaded BLAS (tiny matrices).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

from handwired.engine.batch import next_logits  # noqa: E402
from handwired.engine.forward import forward  # noqa: E402
from handwired.judge.checking.contexts import count_contexts  # noqa: E402
from handwired.judge.checking.plans import exhaustive_plan, pattern_rule, stream_plan  # noqa: E402
from handwired.judge.checking.report import run as run_plan  # noqa: E402
from handwired.weightfile import dumps, load, parse  # noqa: E402


def aab_document(n_ctx: int) -> dict:
    """The aab construction for any context length: one-hot positions, attend to self and the one before."""
    n_embd = n_ctx + 3  # positions, a, b, out
    a, b, out = n_ctx, n_ctx + 1, n_ctx + 2
    w = [[0] * (3 * n_embd) for _ in range(n_embd)]
    for p in range(n_ctx):
        w[p][p] = "Lg"  # q: this position ...
        if p > 0:
            w[p][p - 1] = "Lg"  # ... and the one before
        w[p][n_embd + p] = 1  # k: the one-hot position
    w[a][2 * n_embd + out] = 1  # v: a -> +1, b -> -1 in 'out'
    w[b][2 * n_embd + out] = -1
    proj = [[0] * n_embd for _ in range(n_embd)]
    proj[out][a], proj[out][b] = "-Lg", "Lg"
    bias = [0] * n_embd
    bias[a] = "Lg"
    one_hot = lambda i: [1 if j == i else 0 for j in range(n_embd)]  # noqa: E731
    return {
        "format": "handwired/1", "name": f"aab{n_ctx}", "vocab": ["a", "b"], "n_ctx": n_ctx, "n_embd": n_embd,
        "constants": {"Lg": 1024}, "dims": [f"p{i}" for i in range(n_ctx)] + ["a", "b", "out"], "target": "aab",
        "wte": [one_hot(a), one_hot(b)], "wpe": [one_hot(p) for p in range(n_ctx)],
        "blocks": [{"attn": {"c_attn": {"w": w}, "c_proj": {"w": proj, "b": bias}}}],
    }


def per_context_loop(model, contexts: np.ndarray) -> np.ndarray:
    """The baseline: one forward pass per context, as the published code does."""
    return np.array([int(np.argmax(forward(model.params, c[None, :], model.n_head)[0, -1])) for c in contexts])


def rate(seconds: float, count: int) -> str:
    return f"{count / seconds:>14,.0f} contexts/s"


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def run_child(args: list[str], allowed: tuple[int, ...] = (0,)) -> tuple[float, float, str]:
    """Run a command; return its wall time, its own peak memory in MB, and its stdout."""
    seconds, usage, stdout = run_child_usage(args, allowed)
    return seconds, usage.ru_maxrss / 1024, stdout


def run_child_usage(args: list[str], allowed: tuple[int, ...] = (0,)):
    """Run a command; return its wall time, its own resource usage (CPU time, peak memory), and its stdout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen(args, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)  # wait4, unlike wait, reports this child's own usage
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode not in allowed:
            raise SystemExit(f"{' '.join(args)} failed ({child.returncode}):\n{err.read()}")
        return seconds, usage, out.read()


def verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    options = parser.parse_args()
    windows_n = 200_000 if options.quick else 2_000_000
    loop_n = 2_000 if options.quick else 20_000
    stream_n = 1_000_000 if options.quick else 10_000_000

    model = load("aab")
    stream = np.resize(np.array([0, 0, 1], dtype=np.uint8), windows_n + model.n_ctx)
    windows = np.lib.stride_tricks.sliding_window_view(stream, model.n_ctx)[:windows_n]
    print(f"aab model, every window of 'aab'*N: {windows_n:,} windows of {model.n_ctx} tokens")

    loop_predictions, loop_seconds = timed(per_context_loop, model, windows[:loop_n])
    loop_rate = loop_n / loop_seconds
    print(f"  per-context loop ({loop_n:,} of them)  {rate(loop_seconds, loop_n)}   1.0x  (baseline)")

    logits, batch_seconds = timed(next_logits, model, windows)
    batch_rate = windows_n / batch_seconds
    assert np.array_equal(logits[:loop_n].argmax(axis=1), loop_predictions), "batched and per-context disagree"
    print(f"  batched forward pass, every window   {rate(batch_seconds, windows_n)}  {batch_rate / loop_rate:5.1f}x  "
          f"({verdict(batch_rate >= 1e6 and batch_rate >= 50 * loop_rate)}: >= 1,000,000/s and >= 50x)")

    report, check_seconds = timed(run_plan, model, stream_plan(model, "aab", windows_n + 2))
    assert report.checked == windows_n and report.passed == windows_n
    check_rate = windows_n / check_seconds
    print(f"  handwired check (judged, distinct)   {rate(check_seconds, windows_n)}  {check_rate / loop_rate:5.1f}x")

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "aab16.json"
        path.write_text(dumps(aab_document(16)), encoding="utf-8")
        big, problems = parse(json.loads(path.read_text()), str(path))
        assert not problems, problems
        total = count_contexts(big)
        print(f"\nvocab 2, n_ctx 16 model, check --exhaustive: {total:,} contexts")
        sample = np.random.default_rng(0).integers(0, 2, (loop_n // 4, 16))
        _, big_loop_seconds = timed(per_context_loop, big, sample)
        big_loop_rate = len(sample) / big_loop_seconds
        print(f"  per-context loop ({len(sample):,} of them)   "
              f"{rate(big_loop_seconds, len(sample))}   1.0x  (baseline; "
              f"all {total:,} would take {total / big_loop_rate:.1f} s)")
        report, inner_seconds = timed(run_plan, big, exhaustive_plan(big, pattern_rule(big, "aab")))
        assert report.checked == total and report.failed == 0
        print(f"  run_plan, in process                {rate(inner_seconds, total)}  "
              f"{total / inner_seconds / big_loop_rate:5.1f}x  ({inner_seconds:.3f} s)")
        command = [sys.executable, "-m", "handwired", "check", "--exhaustive", "--json", "-w", str(path)]
        times = []
        for _ in range(5):  # a whole command is at the mercy of the machine's other work: take the median of five
            seconds, _, stdout = run_child(command)
            assert json.loads(stdout)["contexts"] == total
            times.append(seconds)
        median = sorted(times)[len(times) // 2]
        print(f"  handwired check --exhaustive, whole command: median {median:.3f} s of 5 runs "
              f"(fastest {min(times):.3f} s)  ({verdict(median < 1.0)}: "
              "< 1 s end to end, start-up and imports included)")

    length = stream_n + 2
    command = [sys.executable, "-m", "handwired", "check", "--length", str(length), "--json"]
    seconds, peak, stdout = run_child(command)
    result = json.loads(stdout)
    assert result["contexts"] == stream_n and result["passed"] == stream_n
    print(f"\nhandwired check --length {length:,}: {stream_n:,} windows in {seconds:.2f} s "
          f"({stream_n / seconds:,.0f}/s), peak memory {peak:.0f} MB ({verdict(peak < 300)}: < 300 MB)")


if __name__ == "__main__":
    main()
