"""How fast ``handwired check --exhaustive`` proves deep models, against the per-context path it replaced.

Run:  python benchmarks/bench_exhaustive.py          (several minutes: the old path takes most of them)
      python benchmarks/bench_exhaustive.py --quick  (smaller contexts, a few seconds; checks its answers)

Five random models, made here with a fixed seed, each checked twice in this
same run as a whole ``handwired check --exhaustive --json`` command: once as
handwired does it now (the walk of the trie of shared prefixes, engine/walk.py and engine/parts.py) and once
the way it did before (every context evaluated from scratch by the batched
forward pass, with the GELU, softmax, LayerNorm, attention and linear of that version). Both give
the same report; the script checks that. Targets (2-core machine, whole command):

* the three models with 1.4 M-2.1 M contexts: at least 8x faster than before;
* the 87,380-context two-block model: at most 2x ``handwired predict`` on it;
* the one-block model: no slower than before;
* peak memory under 500 MB for every command.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # as the handwired command does

import numpy as np  # noqa: E402
from bench_check import run_child_usage, verdict  # noqa: E402

from handwired.engine import forward  # noqa: E402
from handwired.engine.arithmetic.floats import float_walk  # noqa: E402
from handwired.engine.batch import next_logits  # noqa: E402
from handwired.engine.forward import LN_EPS, matmul, softmax  # noqa: E402
from handwired.engine.parts import every_string  # noqa: E402
from handwired.judge.checking.contexts import MAX_EXHAUSTIVE, count_contexts, exhaustive_contexts  # noqa: E402
from handwired.judge.checking.plans import Batch, Plan, exhaustive_plan  # noqa: E402
from handwired.weightfile import dumps, load  # noqa: E402

HERE = Path(__file__).resolve()


@dataclass(frozen=True)
class Shape:
    label: str
    vocab: str
    n_ctx: int
    n_layer: int
    n_head: int
    n_embd: int
    full: bool  # LayerNorm and a GELU MLP (n_hidden = 4 n_embd), or attention only
    target: str  # the file's target pattern: what the check judges against
    quick_n_ctx: int

    def describe(self, n_ctx: int) -> str:
        parts = f"{'LayerNorm + GELU MLP' if self.full else 'attention only'}"
        return (f"vocab {len(self.vocab)}, n_ctx {n_ctx}, {self.n_layer} block{'s' * (self.n_layer > 1)}, "
                f"{self.n_head} heads, n_embd {self.n_embd}, {parts}")


SHAPES = [
    Shape("one block", "ab", 16, 1, 2, 16, False, "aab", 12),
    Shape("two blocks, small", "abcd", 8, 2, 2, 24, False, "abcd", 6),
    Shape("two blocks", "abcd", 10, 2, 2, 24, False, "abcd", 7),
    Shape("two blocks + MLP", "abcd", 10, 2, 2, 16, True, "abcd", 7),
    Shape("two blocks + MLP, long", "ab", 20, 2, 2, 16, True, "aab", 12),
]


def document(shape: Shape, n_ctx: int, seed: int) -> dict:
    """Random weights of this shape, as a handwired/1 weight file."""
    rng = np.random.default_rng(seed)
    n_embd = shape.n_embd

    def linear(n_in: int, n_out: int) -> dict:
        return {"w": rng.normal(0, 1 / math.sqrt(n_in), (n_in, n_out)).tolist(),
                "b": rng.normal(0, 0.1, n_out).tolist()}

    def norm() -> dict:
        return {"g": rng.normal(1, 0.1, n_embd).tolist(), "b": rng.normal(0, 0.1, n_embd).tolist()}

    blocks = []
    for _ in range(shape.n_layer):
        block = {"attn": {"c_attn": linear(n_embd, 3 * n_embd), "c_proj": linear(n_embd, n_embd)}}
        if shape.full:
            block.update(ln_1=norm(), ln_2=norm(), mlp={"c_fc": linear(n_embd, 4 * n_embd),
                                                        "c_proj": linear(4 * n_embd, n_embd)})
        blocks.append(block)
    doc = {"format": "handwired/1", "name": shape.label, "vocab": list(shape.vocab), "n_ctx": n_ctx, "n_embd": n_embd,
           "n_head": shape.n_head, "target": shape.target, "example": (shape.target * n_ctx)[:n_ctx],
           "wte": rng.normal(0, 1, (len(shape.vocab), n_embd)).tolist(),
           "wpe": rng.normal(0, 1, (n_ctx, n_embd)).tolist(), "blocks": blocks}
    if shape.full:
        doc["ln_f"] = norm()
    return doc


# ---------------------------------------------------------------- the path before the prefix tree


def gelu_before(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax_before(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def layer_norm_before(x, g, b, eps=LN_EPS):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    return g * (x - mean) / np.sqrt(variance + eps) + b


def linear_before(x, w, b):
    return matmul(x, w) + b if b.any() else matmul(x, w)


def attention_before(q, k, v, mask, hook=None):  # without a hook: the intermediates in arrays of their own
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    masked = scores + mask
    pattern = softmax(masked)
    if hook is not None:
        hook("scores_before_mask", scores)
        hook("hook_attn_scores", masked)
        hook("hook_pattern", pattern)
    return pattern @ v


PREFIX_PLAN = exhaustive_plan


def per_context_plan(model, rule, min_length: int = 1, limit: int = MAX_EXHAUSTIVE, proof: bool = True) -> Plan:
    """The exhaustive plan as it was: batches of contexts, each evaluated from scratch by run_plan, in float64
    alone (there was no proof then, so ``proof`` is taken and not used)."""
    prefix_plan = PREFIX_PLAN(model, rule, min_length, limit, proof=False)  # its checks and description; never run

    def batches():
        for contexts in exhaustive_contexts(model, min_length):
            yield Batch(contexts, rule.judge(contexts))

    return Plan(prefix_plan.description, prefix_plan.rule, prefix_plan.total, batches)


def run_before(argv: list[str]) -> None:
    """``handwired ARGS…`` as it ran before the prefix tree: the per-context plan and the old elementwise
    functions."""
    forward.gelu, forward.softmax, forward.layer_norm = gelu_before, softmax_before, layer_norm_before
    forward.linear, forward.attention = linear_before, attention_before
    from handwired.cli import app
    from handwired.judge.checking import plans

    plans.exhaustive_plan = per_context_plan  # the plan the check command builds (through plans.chosen_plan)

    app(argv, prog_name="handwired")


# ---------------------------------------------------------------- measuring


def command(*args: str, before: bool = False) -> list[str]:
    if before:
        return [sys.executable, str(HERE), "--run-before", *args]
    return [sys.executable, "-m", "handwired", *args]


@dataclass(frozen=True)
class Timing:
    seconds: float  # wall time, median of the runs
    cpu: float  # CPU time (user + system, every thread), median of the runs
    peak: float  # MB, the largest of the runs
    stdout: str


def timed_command(args: list[str], repeat: int) -> Timing:
    walls, cpus, peaks = [], [], []
    for _ in range(repeat):
        # check exits with 1 when a context fails, as random models do: an answer, not an error
        seconds, usage, stdout = run_child_usage(args, allowed=(0, 1))
        walls.append(seconds)
        cpus.append(usage.ru_utime + usage.ru_stime)
        peaks.append(usage.ru_maxrss / 1024)
    return Timing(sorted(walls)[len(walls) // 2], sorted(cpus)[len(cpus) // 2], max(peaks), stdout)


def same_report(now: dict, before: dict) -> None:
    """The two commands' JSON verdicts agree: counts exactly, logits and margins to 1e-12 (relative)."""
    for key in ("total", "contexts", "passed", "failed", "ambiguous", "out_of_domain", "ok", "shortest_failure"):
        assert now[key] == before[key], (key, now[key], before[key])
    assert [f["context"] for f in now["failures"]] == [f["context"] for f in before["failures"]]
    for a, b in zip(now["failures"], before["failures"]):
        np.testing.assert_allclose(a["logits"], b["logits"], rtol=1e-12, atol=1e-12)
    assert (now["margin"] is None) == (before["margin"] is None)
    if now["margin"] is not None:
        assert math.isclose(now["margin"]["logits"], before["margin"]["logits"], rel_tol=1e-12, abs_tol=1e-12)
        assert now["margin"]["context"] == before["margin"]["context"]


def same_logits(model) -> float:
    """Largest difference between the walk's logits and the per-context forward pass's, over every context."""
    worst = 0.0
    for visit in every_string(model, lambda shape: float_walk(model, shape)):
        expected = next_logits(model, visit.prefixes)
        worst = max(worst, float(np.max(np.abs(visit.logits - expected) / np.maximum(1, np.abs(expected)))))
    assert worst < 1e-12, worst
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small contexts, for a smoke test that checks answers")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each new command (the median is shown)")
    parser.add_argument("--only", type=int, action="append", help="only model N (1-5; repeatable)")
    options = parser.parse_args()
    seed = 2026
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        predict_seconds = None
        for i, shape in enumerate(SHAPES):
            if options.only and i + 1 not in options.only:
                continue
            n_ctx = shape.quick_n_ctx if options.quick else shape.n_ctx
            path = Path(folder) / f"model{i}.json"
            path.write_text(dumps(document(shape, n_ctx, seed + i)), encoding="utf-8")
            model = load(str(path))
            total = count_contexts(model)
            print(f"{shape.describe(n_ctx)}: {total:,} contexts", flush=True)
            if options.quick:
                print(f"  the walk's logits equal the per-context forward pass's (largest relative difference "
                      f"{same_logits(model):.1e})", flush=True)
            args = ("check", "--exhaustive", "--json", "-w", str(path), "--max-seconds", "3600")  # (model 5's
            # estimate, about 34 s, is over the 30 s a check is allowed by default)
            now = timed_command(command(*args), options.repeat)
            before = timed_command(command(*args, before=True), 1)
            same_report(json.loads(now.stdout), json.loads(before.stdout))
            print(f"  now     {now.seconds:7.2f} s (CPU {now.cpu:6.2f} s)  {total / now.seconds:>10,.0f} contexts/s  "
                  f"peak {now.peak:4.0f} MB")
            print(f"  before  {before.seconds:7.2f} s (CPU {before.cpu:6.2f} s)  "
                  f"{total / before.seconds:>10,.0f} contexts/s  "
                  f"peak {before.peak:4.0f} MB   -> {before.seconds / now.seconds:4.1f}x faster "
                  f"(CPU time {before.cpu / now.cpu:4.1f}x), same report", flush=True)
            if i == 1:
                predict = timed_command(command("predict", model.example, "--weights", str(path)), options.repeat)
                predict_seconds = predict.seconds
                print(f"  handwired predict on it: {predict.seconds:.2f} s -> check is "
                      f"{now.seconds / predict.seconds:.2f}x predict")
            rows.append((shape, n_ctx, total, now, before))

    print("\n| model | contexts | now | contexts/s | before | ratio (wall) | ratio (CPU) | peak memory |")
    print("|---|---|---|---|---|---|---|---|")
    for shape, n_ctx, total, now, before in rows:
        print(f"| {shape.describe(n_ctx)} | {total:,} | {now.seconds:.2f} s | {total / now.seconds:,.0f} | "
              f"{before.seconds:.2f} s | {before.seconds / now.seconds:.1f}x | {before.cpu / now.cpu:.1f}x | "
              f"{now.peak:.0f} MB |")
    if options.quick or options.only:
        return
    print()
    big = [row for row in rows if row[2] >= 1_000_000]
    print(f"models with 1.4 M-2.1 M contexts at least 8x faster: "
          f"{verdict(all(before.seconds / now.seconds >= 8 for _, _, _, now, before in big))}")
    print(f"87,380-context model at most 2x predict: {verdict(rows[1][3].seconds <= 2 * predict_seconds)}")
    print(f"one-block model no slower than before: {verdict(rows[0][3].seconds <= rows[0][4].seconds)}")
    print(f"peak memory under 500 MB: {verdict(max(max(now.peak, before.peak) for *_, now, before in rows) < 500)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run-before"]:
        run_before(sys.argv[2:])
    else:
        main()
