"""A player's progress: solved puzzles, best scores and hints revealed — nothing else.

Kept in ``progress.json`` in handwired's application directory (typer's
``get_app_dir("handwired")``, or ``$HANDWIRED_HOME`` when set). Progress is a
convenience, never a reason to stop: a file that cannot be read or makes no
sense is reported in one line, renamed aside (never deleted) and replaced; a
file that cannot be written is reported and the command goes on.
"""

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from handwired.errors import HandwiredError
from handwired.judge.scores import Score, read_score
from handwired.weightfile.checker import Checker
from handwired.weightfile.jsonfile import read_json
from handwired.weightfile.writing import write_new

FORMAT = "handwired-progress/1"
FILE_NAME = "progress.json"
HOME_VARIABLE = "HANDWIRED_HOME"
FILE_KEYS = {"format": True, "puzzles": True, "par": False}  # "par": a cache earlier versions kept; read and dropped
ENTRY_KEYS = {"solved": False, "best": False, "hints": False}
MAX_HINTS = 1000


def home() -> Path:
    """The folder progress lives in."""
    if os.environ.get(HOME_VARIABLE):
        return Path(os.environ[HOME_VARIABLE])
    return Path(typer.get_app_dir("handwired"))  # click's rules for each platform's application folder


@dataclass
class Entry:
    solved: bool = False
    best: Score | None = None
    hints: int = 0  # how many hints have been revealed

    def to_json(self) -> dict[str, Any]:
        return {"solved": self.solved, "best": None if self.best is None else self.best.to_json(), "hints": self.hints}


@dataclass
class Progress:
    path: Path
    puzzles: dict[str, Entry] = field(default_factory=dict)
    writable: bool = True  # False when a bad file could not be set aside: never overwrite it
    warn: Callable[[str], None] = lambda message: None

    def entry(self, name: str) -> Entry:
        return self.puzzles.setdefault(name, Entry())

    def solved(self, name: str) -> bool:
        return name in self.puzzles and self.puzzles[name].solved

    def best(self, name: str) -> Score | None:
        return self.puzzles[name].best if name in self.puzzles else None

    def hints(self, name: str) -> int:
        return self.puzzles[name].hints if name in self.puzzles else 0

    def record(self, name: str, score: Score) -> bool:
        """Mark a puzzle solved with this score; True if it is a new best. Saves."""
        entry = self.entry(name)
        entry.solved = True
        improved = score.better_than(entry.best)
        if improved:
            entry.best = score
        self.save()
        return improved

    def reveal(self, name: str, count: int) -> None:
        """At least ``count`` hints are now revealed. Saves."""
        entry = self.entry(name)
        if count > entry.hints:
            entry.hints = count
            self.save()

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "puzzles": {name: entry.to_json() for name, entry in sorted(self.puzzles.items())}}

    def save(self) -> None:
        """Write atomically; a failure is reported, not raised."""
        if not self.writable:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_new(self.path, json.dumps(self.to_json(), indent=2) + "\n", force=True)
        except OSError as error:
            self.warn(f"{self.path}: could not save progress: {error.strerror or error}")
        except HandwiredError as error:
            self.warn(f"could not save progress: {error}")


def load(path: Path | None = None, warn: Callable[[str], None] = lambda message: None) -> Progress:
    """Read progress; a missing file is a fresh start, a bad one is set aside with a warning."""
    path = path or home() / FILE_NAME
    progress = Progress(path, warn=warn)
    if not path.exists():
        return progress
    try:
        progress.puzzles = parse(read_json(path))
    except HandwiredError as error:
        reason = str(error).removeprefix(f"{path}: ")
        aside = _set_aside(path)
        if aside is None:
            progress.writable = False
            warn(f"{path}: unreadable progress ({reason}); could not set it aside, so it is left as it is "
                 "and this session's progress will not be saved")
        else:
            warn(f"{path}: unreadable progress ({reason}); set aside as {aside.name}, starting afresh")
            progress.save()
    return progress


def parse(doc: Any) -> dict[str, Entry]:
    """A progress document -> its entries; one HandwiredError naming the first problem."""
    check = Checker()
    top = check.obj(doc, "", FILE_KEYS)
    entries: dict[str, Entry] = {}
    if top is not None and "format" in top and top["format"] != FORMAT:
        check.problem("format", f"expected {FORMAT!r}")
    if top is not None and "puzzles" in top:
        puzzles = check.mapping(top["puzzles"], "puzzles", "puzzle name: progress")
        for name, value in (puzzles or {}).items():
            entry = _entry(check, value, f"puzzles.{name}")
            if entry is not None:
                entries[name] = entry
    if check.problems:
        raise HandwiredError(check.problems[0])
    return entries


def _entry(check: Checker, value: Any, path: str) -> Entry | None:
    spec = check.obj(value, path, ENTRY_KEYS)
    if spec is None:
        return None
    solved = check.flag(spec.get("solved", False), f"{path}.solved")
    hints = check.whole(spec.get("hints", 0), f"{path}.hints", 0, MAX_HINTS)
    best = None if spec.get("best") is None else read_score(check, spec["best"], f"{path}.best")
    if solved is None or hints is None or (spec.get("best") is not None and best is None):
        return None
    return Entry(solved, best, hints)


def _set_aside(path: Path) -> Path | None:
    """Rename a bad file to progress.json.bad-TIMESTAMP (never over another); None if that fails."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for attempt in range(100):
        aside = path.with_name(f"{path.name}.bad-{stamp}" + (f"-{attempt}" if attempt else ""))
        if aside.exists():
            continue
        try:
            path.rename(aside)
        except OSError:
            return None
        return aside
    return None
