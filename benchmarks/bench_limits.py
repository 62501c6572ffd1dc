"""How long handwired takes to refuse work that would take too long or too much memory, against a start-up.

Run:  python benchmarks/bench_limits.py          (about a minute)
      python benchmarks/bench_limits.py --quick  (one run of each: checks every answer, judges no timing)

Each case is a whole command on a file of a few bytes or kilobytes that declares a large model, or a flag
asking for hours of work; each must be refused in one line (exit code 2) before the work, and its time is
set against `handwired predict aabaa` (start-up, reading a model, one forward pass) measured in the same
run, interleaved, medians. `diff` of two models of 8.4 million weights is not refused: it compares them as
arrays (entry by entry, it took 35 s and 5 GB); its baseline is `predict` on the same model, which reads it
once. In process, checking a list of hidden-unit labels for repeats is timed at two lengths: linear work
takes about 2x as long for twice the labels (rescanning would take 4x).

Targets (what the unit tests asserted in seconds before they stopped reading clocks): each refusal of a
few-byte file or a flag within 1 s, each refusal that reads a model of millions of weights within 5 s,
the diff within 15 s, and 2x the labels within 3x the time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench_startup import handwired_command

from handwired.weightfile import parse

GIANT = {"format": "handwired/1", "vocab": ["a", "b"], "n_ctx": 4096, "n_embd": 1024, "target": "ab",
         "example": "ab" * 2048, "wte": {"a": {"0": 1}}, "wpe": {"0": {"1": 1}},
         "blocks": [{"attn": {"c_attn": {"w": {"0": {"q0": 1}}}, "c_proj": {"w": {"z0": {"0": 1}}}}}]}
EMPTY = {"w": {}}


def files(folder: Path) -> dict[str, Path]:
    """The inputs: the 316-byte file of n_embd 4096, 20,000 blocks, a 4 KB model of 8.4 million weights (and
    an edit of it), and the same shape with 8 heads."""
    docs = {
        "tiny": {"format": "handwired/1", "vocab": [], "n_ctx": 1, "n_embd": 4096, "wte": {}, "wpe": {},
                 "blocks": [{"attn": {"c_attn": EMPTY, "c_proj": EMPTY}}] * 4},
        "blocks": {"format": "handwired/1", "vocab": ["a"], "n_ctx": 1, "n_embd": 1, "wte": [[0]], "wpe": [[0]],
                   "blocks": [{"attn": {"c_attn": {"w": [[0, 0, 0]]}, "c_proj": {"w": [[0]]}},
                               "mlp": {"hidden": 4096, "c_fc": EMPTY, "c_proj": EMPTY}}] * 20_000},
        "giant": GIANT,
        "edited": {**GIANT, "wte": {"a": {"0": 1}, "b": {"3": -1}}},
        "heads": {**GIANT, "n_head": 8},
    }
    paths = {name: folder / f"{name}.json" for name in docs}
    for name, doc in docs.items():
        paths[name].write_text(json.dumps(doc), encoding="utf-8")
    return paths


def cases(paths: dict[str, Path]) -> dict[str, tuple[list[str], int, str]]:
    """name: (arguments, the exit code expected, the start of its one line on stderr (2), or a part of stdout (0))."""
    six_thousand = ",".join(str(i % 7) for i in range(6000))
    giant, refused = str(paths["giant"]), 2
    return {
        "predict aabaa (baseline)": (["predict", "aabaa"], 0, "aabaa → b"),
        "check --sample 10^20": (["check", "--sample", str(10**20)], refused, "error: --sample 100,000,000,000,"),
        "check --length 10^9": (["check", "--length", str(10**9)], refused, "error: --length 1,000,000,000: about"),
        "attend, 6,000 queries": (["attend", "--x", six_thousand], refused, "error: 6,000 queries × 6,000 keys"),
        "predict, 316-byte file of n_embd 4096": (["predict", "a", "-w", str(paths["tiny"])], refused,
                                                  f"error: {paths['tiny']}: 268,505,088 weights"),
        "predict, 20,000 blocks (2.6 MB)": (["predict", "a", "-w", str(paths["blocks"])], refused,
                                            f"error: {paths['blocks']}: 20,000 blocks"),
        "predict abab, 8.4M weights (reads them)": (["predict", "abab", "-w", giant], 0, "abab → "),
        "explain, 8.4M weights, 4,096 tokens": (["explain", "-w", giant], refused, "error: 4,096 tokens at n_embd"),
        "weights show --all, 8.4M weights": (["weights", "show", giant, "--all"], refused,
                                             "error: 8,394,752 numbers to draw"),
        "predict, 8 heads of 4,096 tokens": (["predict", "ab" * 2048, "-w", str(paths["heads"])], refused,
                                             "error: 4,096 tokens at n_embd 1024, 8 heads, 1 block: about 3.6 GB"),
        "diff of two 8.4M-weight models": (["diff", giant, str(paths["edited"]), "--sample", "1", "--json"], 0, "{"),
    }


def run(arguments: list[str], code: int, start: str, env: dict[str, str]) -> tuple[float, float]:
    """One whole command: (wall-clock seconds, CPU seconds of the child); its answer checked."""
    cpu = os.times().children_user + os.times().children_system
    started = time.perf_counter()
    child = subprocess.Popen([*handwired_command(), *arguments], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, text=True)
    stdout, stderr = child.communicate()
    wall = time.perf_counter() - started
    cpu = os.times().children_user + os.times().children_system - cpu
    answer = stderr.strip() if code == 2 else stdout[stdout.find(start):]  # a refusal: one line; else its answer
    if child.returncode != code or not answer.startswith(start) or (code == 2 and len(answer.splitlines()) != 1):
        raise SystemExit(f"handwired {' '.join(arguments)[:80]}: expected exit {code} and {start!r}; "
                         f"found exit {child.returncode}:\n{stdout[-500:]}{stderr[-500:]}")
    if arguments[0] == "diff" and json.loads(stdout)["weights"] != [{"label": "wte.b.d3", "old": 0.0, "new": -1.0}]:
        raise SystemExit(f"diff found other changes than wte.b.d3: {stdout[:500]}")
    return wall, cpu


def labels_seconds(count: int) -> float:
    """In process: parsing a model whose MLP names ``count`` hidden units, the last a repeat of the first."""
    doc = {"format": "handwired/1", "vocab": ["a"], "n_ctx": 1, "n_embd": 1, "wte": [[0]], "wpe": [[0]],
           "blocks": [{"attn": {"c_attn": {"w": [[0, 0, 0]]}, "c_proj": {"w": [[0]]}},
                       "mlp": {"hidden": [f"h{i}" for i in range(count - 1)] + ["h0"], "c_fc": EMPTY,
                               "c_proj": EMPTY}}]}
    started = time.perf_counter()
    _, problems = parse(doc)
    took = time.perf_counter() - started
    if f"blocks[0].mlp.hidden[{count - 1}]: 'h0' appears twice" not in problems:
        raise SystemExit(f"the repeated label was not reported: {problems}")
    return took


def timed(runs: int, env: dict[str, str], paths: dict[str, Path]) -> dict[str, tuple[list[float], list[float]]]:
    """Every case ``runs`` times, interleaved: wall-clock and CPU seconds of each run."""
    table = cases(paths)
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in table}
    for _ in range(runs):
        for name, (arguments, code, start) in table.items():
            wall, cpu = run(arguments, code, start, env)
            times[name][0].append(wall)
            times[name][1].append(cpu)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each, smaller label lists")
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (default 5)")
    options = parser.parse_args()
    runs, labels = (1, 30_000) if options.quick else (options.runs, 300_000)
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "300"}
    with tempfile.TemporaryDirectory() as folder:
        times = timed(runs, env, files(Path(folder)))
    print(f"{runs} run(s) of each, interleaved; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    base = statistics.median(times["predict aabaa (baseline)"][0])
    for name, (walls, cpus) in times.items():
        wall = statistics.median(walls)
        print(f"  {name:<42} wall {wall:6.2f} s  {wall / base:5.1f}x baseline   CPU {statistics.median(cpus):6.2f} s")
    one, two = (statistics.median(labels_seconds(n) for _ in range(runs)) for n in (labels, 2 * labels))
    print(f"  checking {labels:,} labels for repeats: {one:.3f} s; {2 * labels:,}: {two:.3f} s ({two / one:.1f}x)")


if __name__ == "__main__":
    main()
