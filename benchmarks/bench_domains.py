"""Peak memory of a puzzle check as its domain grows: the add statement rewritten with wider operands.

Run:  python benchmarks/bench_domains.py [--quick]

It writes the add statement with `###+##` (400,000 contexts) and `###+###` (4,000,000) inputs and a 4-digit
answer, and a random model at add's caps (two blocks, n_embd 32, two heads, an MLP of 64), then runs
`handwired puzzles check STATEMENT MODEL --json --no-proof --max-seconds 120` on each as a whole command (the float64
walk, allowed the two minutes its estimate for `###+###`, about 34 s, is over the default 30 s) and reads its peak
resident memory (the child's ru_maxrss) and CPU time, against the same check of add itself (30,000 contexts)
measured in the same run. Targets: the 400,000-context check within 300 MB, the 4,000,000-context one within
500 MB (or refused in one line before anything is allocated). With --quick only `##+##` (40,000 contexts) runs.
It checks its own answers: the report judges every context of the domain.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from reference import params_to_document, random_params  # noqa: E402

TARGETS = {"###+##": 300, "###+###": 500}  # MB


def statement(folder: Path, template: str) -> Path:
    doc = json.loads((ROOT / "puzzles" / "add.json").read_text(encoding="utf-8"))
    name = "add" + template.replace("#", "d").replace("+", "p")
    doc |= {"name": name, "n_ctx": len(template) + 5, "rule": doc["rule"] | {"width": 4},
            "domain": doc["domain"] | {"template": template}, "examples": [template.replace("#", "0") + "="]}
    for key in ("par", "record"):
        doc.pop(key)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


def model(folder: Path, n_ctx: int) -> Path:
    params = random_params(np.random.default_rng(1), n_vocab=12, n_ctx=n_ctx, n_embd=32, n_layer=2, n_hidden=64)
    path = folder / f"model-{n_ctx}.json"
    path.write_text(json.dumps(params_to_document(params, 2, "0123456789+=", n_ctx)))
    return path


def check(args: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, peak MB, stdout) of one command, run in a child of its own."""
    code = ("import resource, subprocess, sys, json; r = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
            "u = resource.getrusage(resource.RUSAGE_CHILDREN); print(json.dumps([r.returncode, u.ru_maxrss, "
            "u.ru_utime + u.ru_stime, r.stdout, r.stderr]))")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    returncode, peak_kb, cpu, stdout, stderr = json.loads(done.stdout)
    if returncode not in (0, 1, 2):
        raise SystemExit(f"{' '.join(args)} failed ({returncode}):\n{stderr}")
    return wall, cpu, peak_kb // 1024, stdout if returncode != 2 else stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small domain only")
    templates = ["##+##"] if parser.parse_args().quick else list(TARGETS)
    command = [sys.executable, "-m", "handwired", "puzzles", "check", "--no-proof", "--max-seconds", "120"]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        env = {**os.environ, "HANDWIRED_HOME": str(folder / "home")}
        wall, cpu, base, _ = check([*command, "add", str(ROOT / "puzzles" / "solutions" / "add.json"), "--json"], env)
        print(f"{'baseline: puzzles check add (30,000 contexts)':52} {cpu:7.2f} s CPU {base:6,} MB")
        for template in templates:
            path = statement(folder, template)
            n_ctx = len(template) + 5
            wall, cpu, peak, out = check([*command, str(path), str(model(folder, n_ctx)), "--json"], env)
            if out.startswith("error:"):
                print(f"{template}: refused: {out.strip()} ({peak} MB)")
                continue
            report = json.loads(out)
            contexts = 10 ** template.count("#") * 4
            assert report["contexts"] == report["passed"] + report["failed"] == contexts, report
            target = TARGETS.get(template)
            verdict = "" if target is None else f" ({'meets' if peak <= target else 'MISSES'} <= {target} MB)"
            print(f"{'puzzles check ' + template + f' ({contexts:,} contexts)':52} {cpu:7.2f} s CPU {peak:6,} MB "
                  f"{peak / base:5.2f}x the baseline's memory{verdict}; {wall:.1f} s wall")


if __name__ == "__main__":
    main()
