"""The list's light reader of a statement: only what ``puzzles list`` shows.

It reads a statement's name, level, title, summary, caps, how many hints it
has, its par and its record, with the very checks the whole reader
(:mod:`.puzzle`) makes of them (:mod:`.statement`, which both use): the same
test that the file is a statement at all, the same bounds on its sizes and
keys, the same messages. It loads nothing of the rule kinds, the domains, the
engine or numpy, and never looks inside the rule, the domain or the examples:
``puzzles show`` reads those.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from handwired.judge.game.scores import Score
from handwired.judge.game.statement import (
    Caps,
    read_caps,
    read_hints,
    read_level,
    read_name,
    read_scores,
    read_text_field,
    statement_top,
)
from handwired.weightfile.checker import Checker, known
from handwired.weightfile.jsonfile import parse_json, read_text

if TYPE_CHECKING:  # a whole puzzle is listed too (see listed); reading one is the other reader's work
    from handwired.judge.game.puzzle import Puzzle


@dataclass(frozen=True)
class Listed:
    """A puzzle as the list shows it: the figures :class:`~handwired.judge.game.puzzle.Puzzle` has of the same names."""

    name: str
    level: int
    title: str
    summary: str
    caps: Caps
    n_hints: int
    par: Score | None = None
    record: Score | None = None
    key: str = ""  # what the player's progress is kept under (see Puzzle.key)


def read_listed(path: Path, named_by_file: bool = True) -> tuple[Listed | None, list[str]]:
    """What the list shows of the statement at ``path`` (None if it is wrong there), and every problem found in
    it; a file that is no JSON, or too large to read, raises HandwiredError as the whole reader does."""
    check = Checker()
    top = statement_top(parse_json(read_text(path), str(path)), check)
    if top is None:
        return None, check.problems
    name = read_name(check, top["name"], path if named_by_file else None) if "name" in top else None
    level = read_level(check, top["level"]) if "level" in top else None
    texts = {key: read_text_field(check, top[key], key) for key in ("title", "summary") if key in top}
    caps = read_caps(check, top["caps"]) if "caps" in top else None
    hints = read_hints(check, top["hints"]) if "hints" in top else None
    scores = read_scores(check, top)
    if check.problems:
        return None, check.problems
    entry = Listed(name=known(name), level=known(level), title=known(texts["title"]),
                   summary=known(texts["summary"]), caps=known(caps), n_hints=len(known(hints)),
                   par=scores.get("par"), record=scores.get("record"), key=known(name))
    return entry, []


def listed(puzzle: "Puzzle") -> Listed:
    """What the list shows of a puzzle read whole."""
    return Listed(name=puzzle.name, level=puzzle.level, title=puzzle.title, summary=puzzle.summary,
                  caps=puzzle.caps, n_hints=len(puzzle.hints), par=puzzle.par, record=puzzle.record, key=puzzle.key)
