"""Every heavy job's estimate against what it used: CPU time and peak memory, shape by shape.

Run:  python benchmarks/bench_estimates.py [--quick]

For each shape of work (a wide model, a deep one, a long target, many variants of a sweep, a big puzzle domain, with
the proof and without, a sample) it asks handwired for its estimate the way a user meets it, by allowing almost
nothing (`--max-seconds 1e-9`, then `--max-memory 1K`) and reading the figure from the refusal; then it runs the
work with a generous allowance as a whole command in a child process of its own and reads the child's CPU time
(user + system) and peak resident memory (ru_maxrss). Memory estimates count a job's arrays, not the interpreter:
the peak compared is the child's less that of a command that does nothing heavy (`handwired predict a`), measured in
the same run. It prints each figure and the ratio (measured / estimated); the target is a ratio between 0.5 and 2
for every shape. With --quick the shapes are small and only the answers are checked.
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


def run(args: list[str], env: dict[str, str]) -> tuple[int, float, float, str]:
    """(exit code, CPU seconds, peak MB, stderr) of one command, run in a child of its own."""
    with tempfile.TemporaryFile("w+") as said:
        child = subprocess.Popen([sys.executable, "-m", "handwired", *args], env=env, stdout=subprocess.DEVNULL,
                                 stderr=said, text=True)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own usage, not all children's
        child.returncode = os.waitstatus_to_exitcode(status)
        said.seek(0)
        return child.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, said.read()


def estimate(args: list[str], env: dict[str, str]) -> tuple[float | None, float | None]:
    """The (seconds, MB) handwired's refusals state for the work, when it refuses on that resource."""
    seconds = megabytes = None
    _, _, _, said = run([*args, "--max-seconds", "1e-9"], env)
    found = re.search(r"about ([\d,.]+) (seconds?|minutes?|hours?)", said)
    if found:
        seconds = float(found[1].replace(",", "")) * UNITS[found[2]]
    _, _, _, said = run([*args, "--max-memory", "1K"], env)
    found = re.search(r"about ([\d,.]+) (MB|GB)", said)
    if found:
        megabytes = float(found[1].replace(",", "")) * (1024 if found[2] == "GB" else 1)
    return seconds, megabytes


def shapes(folder: Path, quick: bool) -> list[tuple[str, list[str]]]:
    """(name, the command's arguments) of each shape of work, its files written into ``folder``."""
    aab = json.loads((ROOT / "weights" / "aab.json").read_text(encoding="utf-8"))

    def write(name: str, doc: dict) -> str:
        path = folder / f"{name}.json"
        path.write_text(json.dumps(doc))
        return str(path)

    rng = np.random.default_rng(0)
    wide = params_to_document(random_params(rng, n_vocab=3, n_ctx=6 if quick else 9, n_embd=64 if quick else 256,
                                            n_layer=1), 4, "abc", 6 if quick else 9)
    deep = params_to_document(random_params(rng, n_vocab=2, n_ctx=8, n_embd=8, n_layer=20 if quick else 200,
                                            n_hidden=8), 1, "ab", 8)
    long_target = {**aab, "target": "".join(rng.choice(["a", "b"], 1000 if quick else 100_000))}
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
    return [
        ("wide: check --exhaustive", ["check", write("wide", {**wide, "target": "abc"}), "--exhaustive"]),
        ("deep: check --exhaustive", ["check", write("deep", {**deep, "target": "ab"}), "--exhaustive", "--json"]),
        ("long target: check", ["check", write("long", long_target), "--json"]),
        ("many variants: sweep", ["sweep", str(add), "Lg=1..9", "--steps", "5" if quick else "60", "--puzzle", "add",
                                  "--json"]),
        ("big domain: puzzles check", ["puzzles", "check", statement, model_path, "--json"]),
        ("big domain, no proof", ["puzzles", "check", statement, model_path, "--json", "--no-proof"]),
        ("sample: check --sample", ["check", write("wide2", {**wide, "target": "abc"}), "--sample",
                                    "2000" if quick else "200000", "--json"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes: check the answers only")
    quick = parser.parse_args().quick
    env = {**os.environ, "HANDWIRED_HOME": tempfile.mkdtemp(), "NO_COLOR": "1"}
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        _, _, floor, _ = run(["predict", "a"], env)
        print(f"the interpreter alone: {floor:.0f} MB (subtracted from each peak)")
        print(f"{'shape':<28} {'est. s':>8} {'CPU s':>8} {'ratio':>6} {'est. MB':>8} {'MB':>8} {'ratio':>6}")
        misses = 0
        for name, args in shapes(folder, quick):
            seconds, megabytes = estimate(args, env)
            code, cpu, peak, said = run([*args, "--max-seconds", "1e6", "--max-memory", "100G"], env)
            if code not in (0, 1):
                raise SystemExit(f"{name}: exit code {code}: {said.strip()}")
            used = max(peak - floor, 1.0)
            time_ratio = cpu / seconds if seconds else float("nan")
            memory_ratio = used / megabytes if megabytes else float("nan")
            misses += sum(not 0.5 <= r <= 2 for r in (time_ratio, memory_ratio) if r == r)
            print(f"{name:<28} {seconds or float('nan'):>8.1f} {cpu:>8.1f} {time_ratio:>6.2f} "
                  f"{megabytes or float('nan'):>8.0f} {used:>8.0f} {memory_ratio:>6.2f}")
        print(f"{misses} figure(s) outside 0.5-2x" + (" (quick: small shapes, not judged)" if quick else ""))


if __name__ == "__main__":
    main()
