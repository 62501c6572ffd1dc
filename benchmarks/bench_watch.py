"""How soon `handwired watch` shows a save, against running explain and check again by hand.

Run:  python benchmarks/bench_watch.py          (about half a minute)
      python benchmarks/bench_watch.py --quick  (fewer repeats)

Figures, each the median of several runs, all measured in this run:

* redraw work: loading, checking and drawing one snapshot in process (what watch does per save);
* save to screen: from writing the file to the new value appearing in a real terminal (tmux,
  100 × 40), polled every 10 ms; skipped without tmux;
* the baseline: ``handwired explain`` and ``handwired check --exhaustive`` run one after the other,
  as a person without watch would after each save;
* a model of 8.4 million weights (n_embd 1024, 4,096-token example, 4 KB sparse) in tmux: from writing
  the file to the sign that the save is loading, against to its new screen.

Target (2-core machine): save to screen < 0.5 s for the bundled models, and well under the baseline;
the sign of loading the large model within 1 s.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_limits import GIANT
from rich.console import Console

from handwired.views import watch as watching
from handwired.weightfile import bundled_models


def redraw_work(path: Path, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        state = watching.State().advance(watching.load_snapshot(path))
        Console(file=io.StringIO(), width=100, height=40).print(watching.Cropped(watching.screen(state)))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def by_hand(path: Path, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for command in (["explain", "-w", str(path)], ["check", "--exhaustive", "-w", str(path)]):
            subprocess.run([sys.executable, "-m", "handwired", *command], capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def save_to_screen(path: Path, repeats: int) -> float | None:
    if shutil.which("tmux") is None:
        return None
    socket = f"handwired-bench-{os.getpid()}"
    tmux = lambda *args: subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True,  # noqa: E731
                                        check=True).stdout
    doc = json.loads(path.read_text(encoding="utf-8"))
    tmux("new-session", "-d", "-s", "w", "-x", "100", "-y", "40",
         f"env -u COLUMNS -u LINES {sys.executable} -m handwired watch {path}")
    try:
        wait(lambda: "PASS" in tmux("capture-pane", "-p", "-t", "w"), "the first verdict")
        times = []
        for i in range(repeats):
            length = 2 + i % 2  # each save changes the example, which the screen's context line shows
            doc["example"] = doc["vocab"][0] * length
            started = time.perf_counter()
            path.write_text(json.dumps(doc), encoding="utf-8")
            wait(lambda n=length: f"({n} tokens)" in tmux("capture-pane", "-p", "-t", "w"), "the save", every=0.01)
            times.append(time.perf_counter() - started)
            time.sleep(0.2)
        return statistics.median(times)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


def save_to_loading_sign(path: Path, repeats: int) -> tuple[float, float] | None:
    """A large model in tmux: (save to "loading the save of", save to the new screen), medians."""
    if shutil.which("tmux") is None:
        return None
    socket = f"handwired-bench-large-{os.getpid()}"
    tmux = lambda *args: subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True,  # noqa: E731
                                        check=True).stdout
    screen = lambda: " ".join(tmux("capture-pane", "-p", "-t", "w").split())  # noqa: E731  it wraps
    path.write_text(json.dumps(GIANT), encoding="utf-8")
    tmux("new-session", "-d", "-s", "w", "-x", "100", "-y", "40",
         f"env -u COLUMNS -u LINES {sys.executable} -m handwired watch {path}")
    try:
        wait(lambda: "4,096 tokens at n_embd 1024: about" in screen() and "loaded in" in screen(), "the refusal")
        signs, screens = [], []
        for i in range(repeats):
            length = 6 + 2 * (i % 2)  # each save changes the example, which the screen's context line shows
            started = time.perf_counter()
            path.write_text(json.dumps({**GIANT, "example": "ab" * (length // 2)}), encoding="utf-8")
            wait(lambda: "loading the save of" in screen(), "the sign of loading", every=0.01)
            signs.append(time.perf_counter() - started)
            wait(lambda n=length: f"({n} tokens)" in screen() and "loading" not in screen(), "the new screen")
            screens.append(time.perf_counter() - started)
        return statistics.median(signs), statistics.median(screens)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


def wait(condition, what: str, every: float = 0.05) -> None:
    """Until ``condition()``; a minute without it ends the benchmark (a safety net: no timing is judged)."""
    deadline = time.monotonic() + 60
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"watch never showed {what} within 60 s")
        time.sleep(every)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    print(f"{'model':<10} {'redraw work':>12} {'save to screen':>15} {'explain + check':>16} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as folder:
        for name, source in bundled_models().items():
            path = Path(folder) / f"{name}.json"
            doc = json.loads(source.read_text(encoding="utf-8"))
            doc["example"] = doc["vocab"][0] * 4
            path.write_text(json.dumps(doc), encoding="utf-8")
            work = redraw_work(path, repeats)
            screen = save_to_screen(path, repeats)
            baseline = by_hand(path, repeats)
            shown = "no tmux" if screen is None else f"{screen * 1000:.0f} ms"
            ratio = "" if screen is None else f"{baseline / screen:.1f}x"
            print(f"{name:<10} {work * 1000:>9.0f} ms {shown:>15} {baseline * 1000:>13.0f} ms {ratio:>7}")
        large = save_to_loading_sign(Path(folder) / "large.json", repeats)
        if large is not None:
            print(f"8.4 million weights: save to the sign of loading {large[0] * 1000:.0f} ms, to the new screen "
                  f"{large[1] * 1000:.0f} ms ({large[1] / large[0]:.1f}x)")


if __name__ == "__main__":
    main()
