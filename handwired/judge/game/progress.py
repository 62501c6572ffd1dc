"""A player's progress: solved puzzles, best scores and hints revealed — nothing else.

Kept in ``progress.json`` in handwired's application directory (typer's
``get_app_dir("handwired")``, or ``$HANDWIRED_HOME`` when set). Progress is a
convenience, never a reason to stop: a file that cannot be read or makes no
sense (or is no regular file at all) is reported in one line, renamed aside
(never deleted) and replaced; one entry that makes no sense is left out with a
warning line, the other puzzles' entries kept (the file is copied aside, then
rewritten without it); a file that cannot be written is reported once and the command
goes on. Progress holds only what it can read back: a hint count is capped at
MAX_HINTS when it is written.

Two commands may run at once (``watch --puzzle`` in one terminal, ``puzzles
check`` in another): every save reads the file again under a lock
(:mod:`.progress_lock`), merges, and replaces it atomically. Progress only
grows — solved stays solved, the better score wins (on a tie, the one stored
first stays), hints only go up — so the merge never drops what either command
learnt.
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
from handwired.judge.game.progress_lock import locked
from handwired.judge.game.scores import Score, read_score
from handwired.weightfile.checker import Checker
from handwired.weightfile.jsonfile import read_json, read_text
from handwired.weightfile.writing import write_new

FORMAT = "handwired-progress/1"
FILE_NAME = "progress.json"
LOCK_SUFFIX = ".lock"
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
        return {"solved": self.solved, "best": None if self.best is None else self.best.to_json(),
                "hints": min(self.hints, MAX_HINTS)}  # never more than a later read accepts

    def merged(self, other: "Entry") -> "Entry":
        """What both entries know: solved if either is, the better best, the more hints (at most MAX_HINTS)."""
        best = other.best if other.best is not None and other.best.better_than(self.best) else self.best
        return Entry(self.solved or other.solved, best, min(max(self.hints, other.hints), MAX_HINTS))


def merge(ours: dict[str, Entry], theirs: dict[str, Entry]) -> dict[str, Entry]:
    """Every puzzle of either, each entry merged: nothing either side knows is lost."""
    return {name: ours.get(name, Entry()).merged(theirs.get(name, Entry())) for name in sorted({*ours, *theirs})}


@dataclass
class Progress:
    path: Path
    puzzles: dict[str, Entry] = field(default_factory=dict)
    writable: bool = True  # False when a bad file could not be set aside, or saving failed: stop trying
    warn: Callable[[str], None] = lambda message: None

    def solved(self, name: str) -> bool:
        return name in self.puzzles and self.puzzles[name].solved

    def best(self, name: str) -> Score | None:
        return self.puzzles[name].best if name in self.puzzles else None

    def hints(self, name: str) -> int:
        return self.puzzles[name].hints if name in self.puzzles else 0

    def record(self, name: str, score: Score) -> bool:
        """Mark a puzzle solved with this score; True if it is a new best (over every command's). Saves."""
        improved = []

        def change() -> None:
            improved.append(score.better_than(self.best(name)))
            self.puzzles = merge(self.puzzles, {name: Entry(True, score)})

        self.update(change)
        return improved[0]

    def reveal(self, name: str, count: int) -> None:
        """At least ``count`` hints are now revealed. Saves."""
        self.update(lambda: self._merge(name, Entry(hints=count)))

    def reveal_next(self, name: str, available: int, every: bool = False) -> tuple[int, int]:
        """One more hint (of ``available``), or ``every`` one: (revealed before, revealed now). Saves.

        Counted from the file as it is under the lock, so two commands asking at once reveal two hints.
        """
        before = []

        def change() -> None:
            before.append(min(self.hints(name), available))
            self._merge(name, Entry(hints=available if every else min(before[0] + 1, available)))

        self.update(change)
        return before[0], min(self.hints(name), available)

    def _merge(self, name: str, entry: Entry) -> None:
        self.puzzles = merge(self.puzzles, {name: entry})

    def to_json(self) -> dict[str, Any]:
        return document(self.puzzles)

    def update(self, change: Callable[[], None]) -> None:
        """Under the lock: read the file again and merge it in, ``change()`` the entries, replace the file atomically.

        When progress cannot be saved, ``change()`` still happens (the command shows it) and the failure is
        reported once.
        """
        changed = False
        if self.writable:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with locked(self.path.with_name(self.path.name + LOCK_SUFFIX)):
                    on_disk = _read(self.path, self.warn)
                    if on_disk is None:  # a bad file that could not be set aside: never overwrite it
                        self.writable = False
                    else:
                        self.puzzles = merge(on_disk, self.puzzles)
                        change()
                        changed = True
                        write_new(self.path, json.dumps(self.to_json(), indent=2) + "\n", force=True)
            except OSError as error:
                self._give_up(f"{self.path}: could not save progress: {error.strerror or error}")
            except HandwiredError as error:  # its message names the path already
                self._give_up(f"could not save progress: {error}")
        if not changed:
            change()

    def _give_up(self, message: str) -> None:
        self.writable = False
        self.warn(f"{message}; this session's progress will not be saved")


def load(path: Path | None = None, warn: Callable[[str], None] = lambda message: None) -> Progress:
    """Read progress; a missing file is a fresh start, a bad one is set aside with a warning."""
    path = path or home() / FILE_NAME
    progress = Progress(path, warn=warn)
    if not os.path.lexists(path):
        return progress
    try:
        with locked(path.with_name(path.name + LOCK_SUFFIX)):  # so a bad file is set aside by one command only
            entries = _read(path, warn)
    except OSError:  # no lock in a read-only folder: reading is still safe, as every save is an atomic replace
        entries = _read(path, warn, set_aside=False)
    if entries is None:
        progress.writable = False
    else:
        progress.puzzles = entries
    return progress


def document(entries: dict[str, Entry]) -> dict[str, Any]:
    """The progress file's content."""
    return {"format": FORMAT, "puzzles": {name: entry.to_json() for name, entry in sorted(entries.items())}}


def _read(path: Path, warn: Callable[[str], None], set_aside: bool = True) -> dict[str, Entry] | None:
    """The entries in the file ({} if there is none or it was set aside); None if it is bad and must stay.

    An entry that makes no sense is left out with a warning, the others kept; with ``set_aside`` (under the lock)
    the file is copied aside as it was, then rewritten without it, so it is reported once and nothing is lost.
    """
    if not os.path.lexists(path):
        return {}
    dropped: list[str] = []
    try:
        entries = parse(read_json(path), dropped)
    except HandwiredError as error:
        reason = str(error).removeprefix(f"{path}: ")
    else:
        if dropped:
            copy = _set_aside(path, copy=True) if set_aside else None
            if copy is not None:
                try:
                    write_new(path, json.dumps(document(entries), indent=2) + "\n", force=True)
                except HandwiredError:  # kept as it is: a save will report it
                    pass
            kept = f"; the file as it was is copied to {copy.name}" if copy else ""
            more = f" (and {len(dropped) - 1} more)" if len(dropped) > 1 else ""
            warn(f"{path}: {dropped[0]}{more}: left out, every other puzzle's progress kept{kept}")
        return entries
    aside = _set_aside(path) if set_aside else None
    if aside is None:
        warn(f"{path}: unreadable progress ({reason}); could not set it aside, so it is left as it is "
             "and this session's progress will not be saved")
        return None
    warn(f"{path}: unreadable progress ({reason}); set aside as {aside.name}, starting afresh")
    return {}


def parse(doc: Any, dropped: list[str] | None = None) -> dict[str, Entry]:
    """A progress document -> its entries; one HandwiredError naming the first problem.

    With ``dropped``, an entry that makes no sense is left out and its problem appended there instead: only a
    document that is no progress file at all raises.
    """
    check = Checker()
    top = check.obj(doc, "", FILE_KEYS)
    puzzles = None
    if top is not None and "format" in top and top["format"] != FORMAT:
        check.problem("format", f"expected {FORMAT!r}")
    if top is not None and "puzzles" in top:
        puzzles = check.mapping(top["puzzles"], "puzzles", "puzzle name: progress")
    if check.problems:
        raise HandwiredError(check.problems[0])
    entries: dict[str, Entry] = {}
    for name, value in (puzzles or {}).items():
        one = Checker()
        entry = _entry(one, value, f"puzzles.{name}")
        if one.problems:
            if dropped is None:
                raise HandwiredError(one.problems[0])
            dropped.append(one.problems[0])
        elif entry is not None:
            entries[name] = entry
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


def _set_aside(path: Path, copy: bool = False) -> Path | None:
    """Rename a bad file to progress.json.bad-TIMESTAMP (never over another), or ``copy`` it there; None if that
    fails."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for attempt in range(100):
        aside = path.with_name(f"{path.name}.bad-{stamp}" + (f"-{attempt}" if attempt else ""))
        if aside.exists():
            continue
        try:
            if copy:
                write_new(aside, read_text(path))
            else:
                path.rename(aside)
        except (OSError, HandwiredError):
            return None
        return aside
    return None
