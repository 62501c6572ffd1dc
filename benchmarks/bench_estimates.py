"""Every heavy job's estimate against what it used: CPU time and peak memory, shape by shape.

Run:  python benchmarks/bench_estimates.py [--quick] [--only TEXT] [--runs N]

For each shape of work (every string of a wide model and of a deep one, with the proof and without; a long target's
stream, with and without; many variants of a sweep; an ablation; a big puzzle domain, with and without; a sample,
with and without) it asks handwired for its estimate the way a user meets it, by allowing almost nothing
(`--max-seconds 1e-9`, then `--max-memory 1K`) and reading the figure from the refusal (from its "allow it" figure,
twice the estimate in seconds and 1.25 times it in memory, to two digits, where it has one); then it runs the work
with a generous allowance as a whole command in a child process of its own and reads the child's CPU time (user +
system), the least of ``--runs`` runs (the machine may be shared), and in one more run its peak memory as
tracemalloc traces it (numpy's arrays with the rest). Estimates count a job's work, not the interpreter's start, its
imports or the reading of its files: the CPU time compared is the child's less that of the same command refused for
its time before any work, and the peak is from the moment the command first asks the budget what it may spend (every
refusal asks, its files read and before any work), less what it held then. It prints each figure and the ratio
(measured / estimated); the target is a ratio between 0.5 and 2 for every shape. With --quick the shapes are small
and only the answers are checked.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from reference import params_to_document, random_params  # noqa: E402

UNITS = {"second": 1, "seconds": 1, "minute": 60, "minutes": 60, "hour": 3600, "hours": 3600}


# A command with tracemalloc on (numpy's arrays are traced too), which says on its last line of stderr what was
# traced when it first asked the budget what it may spend (its files read, before any work: every refusal asks) and
# its peak from then on.
TRACED = """
import atexit, sys, tracemalloc
tracemalloc.start()
from handwired import budget
held = []
def marked(ask):
    def asked(*args, **kwargs):
        if not held:
            held.append(tracemalloc.get_traced_memory()[0])
            tracemalloc.reset_peak()
        return ask(*args, **kwargs)
    return asked
budget.seconds, budget.memory = marked(budget.seconds), marked(budget.memory)
atexit.register(lambda: sys.stderr.write("\\ntraced %d %d\\n" % (held[0] if held else 0,
                                                                  tracemalloc.get_traced_memory()[1])))
sys.argv[0] = "handwired"
from handwired.cli import main
main()
"""


def run(args: list[str], env: dict[str, str], traced: bool = False) -> tuple[int, float, tuple[float, float], str]:
    """(exit code, CPU seconds, (MB, MB), stderr) of one command, run in a child of its own; the MB are what was
    traced before its work and at the work's peak (``traced``: its CPU time is then tracemalloc's too), else its peak
    resident memory twice."""
    start = ["-c", TRACED] if traced else ["-m", "handwired"]
    with tempfile.TemporaryFile("w+") as said:
        child = subprocess.Popen([sys.executable, *start, *args], env=env, stdout=subprocess.DEVNULL,
                                 stderr=said, text=True)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own usage, not all children's
        child.returncode = os.waitstatus_to_exitcode(status)
        said.seek(0)
        text = said.read()
        found = re.search(r"traced (\d+) (\d+)\s*$", text)
        megabytes = (int(found[1]) / 2**20, int(found[2]) / 2**20) if found else (usage.ru_maxrss / 1024,) * 2
        return child.returncode, usage.ru_utime + usage.ru_stime, megabytes, text


def estimate(args: list[str], env: dict[str, str]) -> tuple[float | None, float | None, float]:
    """The (seconds, MB) handwired's refusals state for the work, when it refuses on that resource: the figure to
    allow (twice the estimate, 1.25 times for memory; two digits) where the refusal has one, else its "about"; and
    and the CPU seconds of the command refused before any work."""
    seconds = megabytes = None
    _, cpu, _, said = run([*args, "--max-seconds", "1e-9"], env)
    found = re.search(r"about ([\d,.]+) (seconds?|minutes?|hours?)", said)
    if found:
        seconds = float(found[1].replace(",", "")) * UNITS[found[2]]
        allow = re.search(r"allow it: --max-seconds ([\d.]+)\)", said)
        if allow and float(allow[1]) > 1:  # below 1 the figure is rounded up to 1
            seconds = float(allow[1]) / 2
    _, _, _, said = run([*args, "--max-memory", "1K"], env)
    found = re.search(r"about ([\d,.]+) (MB|GB)", said)
    if found:
        megabytes = float(found[1].replace(",", "")) * (1024 if found[2] == "GB" else 1)
        allow = re.search(r"allow it: --max-memory ([\d.]+)([MG])\)", said)
        if allow and float(allow[1]) > 1:
            megabytes = float(allow[1]) * (1024 if allow[2] == "G" else 1) / 1.25
    return seconds, megabytes, cpu


def shapes(folder: Path, quick: bool) -> list[tuple[str, list[str]]]:
    """(name, the command's arguments) of each shape of work, its files written into ``folder``."""
    aab = json.loads((ROOT / "weights" / "aab.json").read_text(encoding="utf-8"))

    def write(name: str, doc: dict) -> str:
        path = folder / f"{name}.json"
        path.write_text(json.dumps(doc))
        return str(path)

    rng = np.random.default_rng(0)
    wide = params_to_document(random_params(rng, n_vocab=3, n_ctx=6 if quick else 10, n_embd=64 if quick else 256,
                                            n_layer=1), 4, "abc", 6 if quick else 10)
    deep = params_to_document(random_params(rng, n_vocab=2, n_ctx=8 if quick else 10, n_embd=8,
                                            n_layer=20 if quick else 200, n_hidden=8), 1, "ab", 8 if quick else 10)
    long_target = {**aab, "target": "".join(rng.choice(["a", "b"], 1000 if quick else 400_000))}
    add = ROOT / "puzzles" / "solutions" / "add.json"
    domain = json.loads((ROOT / "puzzles" / "add.json").read_text(encoding="utf-8"))
    domain |= {"name": "wideadd", "n_ctx": 12 if quick else 13, "rule": domain["rule"] | {"width": 4},
               "domain": domain["domain"] | {"template": "##+##" if quick else "###+##"},
               "examples": ["00+00=" if quick else "000+00="]}
    for key in ("par", "record"):
        domain.pop(key)
    statement = write("wideadd", domain)
    model = params_to_document(random_params(rng, n_vocab=12, n_ctx=domain["n_ctx"], n_embd=32, n_layer=2,
                                             n_hidden=64), 2, "0123456789+=", domain["n_ctx"])
    model_path = write("addmodel", model)
    wide_file, deep_file = write("wide", {**wide, "target": "abc"}), write("deep", {**deep, "target": "ab"})
    long_file = write("long", long_target)
    sample = ["--sample", "2000" if quick else "100000", "--json"]
    return [
        ("wide: check --exhaustive", ["check", wide_file, "--exhaustive", "--json"]),
        ("wide, no proof", ["check", wide_file, "--exhaustive", "--json", "--no-proof"]),
        ("deep: check --exhaustive", ["check", deep_file, "--exhaustive", "--json"]),
        ("deep, no proof", ["check", deep_file, "--exhaustive", "--json", "--no-proof"]),
        ("long target: check (stream)", ["check", long_file, "--json"]),
        ("long target, no proof", ["check", long_file, "--json", "--no-proof"]),
        ("many variants: sweep", ["sweep", str(add), "Lg=1..1000", "--steps", "5" if quick else "60", "--puzzle", "add",
                                  "--json"]),
        ("ablate --entries", ["ablate", str(add), "--entries", "--puzzle", "add", "--json"]),
        ("big domain: puzzles check", ["puzzles", "check", statement, model_path, "--json"]),
        ("big domain, no proof", ["puzzles", "check", statement, model_path, "--json", "--no-proof"]),
        ("sample: check --sample", ["check", write("wide2", {**wide, "target": "abc"}), *sample]),
        ("sample, no proof", ["check", write("wide3", {**wide, "target": "abc"}), *sample, "--no-proof"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes: check the answers only")
    parser.add_argument("--only", default="", help="only the shapes whose name holds this text")
    parser.add_argument("--runs", type=int, default=1, help="runs of each shape; the least CPU time and peak count")
    options = parser.parse_args()
    env = {**os.environ, "HANDWIRED_HOME": tempfile.mkdtemp(), "NO_COLOR": "1"}
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; each figure less the command's "
              "refused before any work")
        print(f"{'shape':<28} {'est. s':>8} {'CPU s':>8} {'ratio':>6} {'est. MB':>8} {'MB':>8} {'ratio':>6}")
        misses = 0
        for name, args in shapes(folder, options.quick):
            if options.only not in name:
                continue
            seconds, megabytes, cpu_floor = estimate(args, env)
            allowed = [*args, "--max-seconds", "1e6", "--max-memory", "100G"]
            runs = [run(allowed, env) for _ in range(options.runs)] + [run(allowed, env, traced=True)]
            for code, _, _, said in runs:
                if code not in (0, 1):
                    raise SystemExit(f"{name}: exit code {code}: {said.strip()}")
            cpu = max(min(r[1] for r in runs[:-1]) - cpu_floor, 0.01)
            held, peak = runs[-1][2]
            used = max(peak - held, 0.1)
            time_ratio = cpu / seconds if seconds else float("nan")
            memory_ratio = used / megabytes if megabytes else float("nan")
            misses += sum(not 0.5 <= r <= 2 for r in (time_ratio, memory_ratio) if r == r)
            misses += (seconds is None) + (megabytes is None)
            print(f"{name:<28} {seconds or float('nan'):>8.2f} {cpu:>8.2f} {time_ratio:>6.2f} "
                  f"{megabytes or float('nan'):>8.0f} {used:>8.0f} {memory_ratio:>6.2f}", flush=True)
        print(f"{misses} figure(s) outside 0.5-2x or not estimated"
              + (" (quick: small shapes, not judged)" if options.quick else ""))


if __name__ == "__main__":
    main()
