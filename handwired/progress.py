"""A player's progress: solved puzzles, best scores and hints revealed (and each puzzle's par, remembered).

Kept in ``progress.json`` in handwired's application directory (typer's
``get_app_dir("handwired")``, or ``$HANDWIRED_HOME`` when set). Progress is a
convenience, never a reason to stop: a file that cannot be read or makes no
sense is reported in one line, renamed aside (never deleted) and replaced; a
file that cannot be written is reported and the command goes on.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from handwired.errors import HandwiredError
from handwired.puzzles import Puzzle, Score, par_source
from handwired.puzzles import par as compute_par
from handwired.weightfile import write_new

FORMAT = "handwired-progress/1"
FILE_NAME = "progress.json"
HOME_VARIABLE = "HANDWIRED_HOME"


def home() -> Path:
    """The folder progress lives in."""
    if os.environ.get(HOME_VARIABLE):
        return Path(os.environ[HOME_VARIABLE])
    import typer  # click's rules for each platform's application folder

    return Path(typer.get_app_dir("handwired"))


@dataclass
class Entry:
    solved: bool = False
    best: Score | None = None
    hints: int = 0  # how many hints have been revealed

    def to_json(self) -> dict[str, Any]:
        return {"solved": self.solved, "best": None if self.best is None else self.best.to_json(), "hints": self.hints}

    @classmethod
    def from_json(cls, data: Any) -> Entry:
        if not isinstance(data, dict) or not set(data) <= {"solved", "best", "hints"}:
            raise ValueError("expected an object with solved, best, hints")
        solved, hints, best = data.get("solved", False), data.get("hints", 0), data.get("best")
        if not isinstance(solved, bool):
            raise ValueError("'solved' is not true or false")
        if isinstance(hints, bool) or not isinstance(hints, int) or hints < 0:
            raise ValueError("'hints' is not a whole number")
        return cls(solved, None if best is None else Score.from_json(best), hints)


@dataclass
class Progress:
    path: Path
    puzzles: dict[str, Entry] = field(default_factory=dict)
    # Par takes a whole check of the reference solution; it is kept with the fingerprint of what it came from.
    pars: dict[str, tuple[str, Score]] = field(default_factory=dict)  # name -> (puzzles.par_source, par)
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

    def par(self, puzzle: Puzzle) -> Score | None:
        """The puzzle's par, from the last time it was computed if nothing it depends on has changed."""
        source = par_source(puzzle)
        if source is None:
            return None
        if puzzle.name in self.pars and self.pars[puzzle.name][0] == source:
            return self.pars[puzzle.name][1]
        score = compute_par(puzzle)
        if score is not None:
            self.pars[puzzle.name] = (source, score)
            self.save()
        return score

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "puzzles": {name: entry.to_json() for name, entry in sorted(self.puzzles.items())},
            "par": {name: {"source": source, "score": score.to_json()} for name, (source, score) in sorted(self.pars.items())},
        }

    def save(self) -> None:
        """Write atomically; a failure is reported, not raised."""
        if not self.writable:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_new(self.path, json.dumps(self.to_json(), indent=2) + "\n", force=True)
        except (OSError, HandwiredError) as error:
            self.warn(f"{self.path}: could not save progress: {getattr(error, 'strerror', None) or error}")


def load(path: Path | None = None, warn: Callable[[str], None] = lambda message: None) -> Progress:
    """Read progress; a missing file is a fresh start, a bad one is set aside with a warning."""
    path = path or home() / FILE_NAME
    progress = Progress(path, warn=warn)
    if not path.exists():
        return progress
    try:
        progress.puzzles, progress.pars = _parse(path)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
        reason = getattr(error, "strerror", None) or str(error)
        aside = _set_aside(path)
        if aside is None:
            progress.writable = False
            warn(f"{path}: unreadable progress ({reason}); could not set it aside, so it is left as it is "
                 "and this session's progress will not be saved")
        else:
            warn(f"{path}: unreadable progress ({reason}); set aside as {aside.name}, starting afresh")
            progress.save()
    return progress


def _parse(path: Path) -> tuple[dict[str, Entry], dict[str, tuple[str, Score]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("puzzles"), dict):
        raise ValueError(f"expected {{\"format\": \"{FORMAT}\", \"puzzles\": {{…}}}}")
    if not set(data) <= {"format", "puzzles", "par"}:
        raise ValueError("expected only format, puzzles and par")
    puzzles, pars = {}, {}
    for name, entry in data["puzzles"].items():
        try:
            puzzles[name] = Entry.from_json(entry)
        except ValueError as error:
            raise ValueError(f"puzzles.{name}: {error}") from None
    # par is only a cache of the reference solutions' scores: a bad entry is recomputed, never worth the player's progress
    cache = data.get("par", {})
    for name, entry in (cache.items() if isinstance(cache, dict) else ()):
        try:
            if not isinstance(entry, dict) or set(entry) != {"source", "score"} or not isinstance(entry["source"], str):
                raise ValueError(entry)
            pars[name] = (entry["source"], Score.from_json(entry["score"]))
        except (ValueError, TypeError, KeyError):
            continue
    return puzzles, pars


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
