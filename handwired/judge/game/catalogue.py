"""Finding puzzles: the bundled statements and their reference solutions, by name, in level order.

The list (:func:`listing`) reads each bundled statement light (:mod:`.listing`), so this module loads the whole
reader (:mod:`.puzzle`, with the rule and domain machinery) and the weight file's parser only in the functions
that read a statement or a solution whole.
"""

import hashlib
import os
import re
import stat
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from handwired.errors import HandwiredError
from handwired.judge.game.listing import Listed, listed, read_listed
from handwired.weightfile.checker import describe
from handwired.weightfile.jsonfile import check_path, kind_of, read_text
from handwired.weightfile.locations import bundled_folder, json_files
from handwired.weightfile.puzzlekey import HASH_MARK, beside, reference

if TYPE_CHECKING:
    from handwired.judge.game.puzzle import Puzzle
    from handwired.weightfile.model import Model

FOLDER_VARIABLE = "HANDWIRED_PUZZLES"


def puzzles_dir() -> Path:
    """Where the puzzles are: $HANDWIRED_PUZZLES (a folder laid out like puzzles/, for people writing
    new puzzles), else the bundled ones: inside the installed package, or puzzles/ in a checkout."""
    if os.environ.get(FOLDER_VARIABLE):
        return Path(os.environ[FOLDER_VARIABLE])
    return bundled_folder("puzzles")


def bundled_puzzles() -> dict[str, Path]:
    """Name -> statement file, for every bundled puzzle."""
    return json_files(puzzles_dir())


def solution_path(name: str) -> Path | None:
    """The bundled reference solution of a puzzle, if it has one."""
    path = puzzles_dir() / "solutions" / f"{name}.json"
    return path if path.is_file() else None


def reference_solution(puzzle: "Puzzle") -> "Model | None":
    """The puzzle's bundled reference solution, loaded; None if it has none."""
    from handwired.weightfile.files import load  # the parser and numpy: never for the list

    path = solution_path(puzzle.name)
    return None if path is None else load(str(path))


def load_puzzle(name: str) -> "Puzzle":
    """A bundled puzzle by name, or a statement someone wrote by its path (``my-puzzle.json``).

    A wrong name is one line listing the valid ones. A written statement's progress is kept under its name and
    a hash of its content, so an edited statement is a new puzzle and never takes an old one's progress.
    """
    found = bundled_puzzles()
    if name in found:
        return _bundled(found[name])
    check_path(name)
    path = Path(name)
    if name.endswith(".json") or path.exists():
        if not path.is_file():
            raise HandwiredError(f"{path}: no such file" if not path.exists() else f"{path}: is not a file")
        from handwired.judge.game.puzzle import statement_from_text  # the whole reader: never for the list

        text = read_text(path)  # read once: the hash is of the very text the puzzle is made from
        puzzle = statement_from_text(text, path)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        return replace(puzzle, ref=str(path), key=f"{puzzle.name}{HASH_MARK}{digest}")
    names = ", ".join(p.name for p in catalogue()) or "none are installed"
    raise HandwiredError(f"no puzzle named {name!r} (puzzles: {names}; or give a statement's path, NAME.json)")


def catalogue() -> list["Puzzle"]:
    """Every bundled puzzle, by level, then name."""
    puzzles = [_bundled(path) for path in bundled_puzzles().values()]
    return sorted(puzzles, key=lambda p: (p.level, p.name))


def listing() -> list[Listed]:
    """Every puzzle as the list shows it, by level, then name. The bundled statements are read light, only what
    the list shows; a folder given by $HANDWIRED_PUZZLES (statements someone is writing) is read whole, so that
    the list refuses a broken statement there in the very line ``puzzles show`` gives, whatever part is wrong."""
    whole = bool(os.environ.get(FOLDER_VARIABLE))
    entries = [listed(_bundled(path)) if whole else _listed(path) for path in bundled_puzzles().values()]
    return sorted(entries, key=lambda p: (p.level, p.name))


def _listed(path: Path) -> Listed:
    entry, problems = read_listed(path)
    if entry is None:  # the whole reader says what is wrong, in the words (and the count) it always has
        _bundled(path)
        raise HandwiredError(f"{path}: {problems[0]}")  # not reached: both readers check these parts alike
    return entry


def _bundled(path: Path) -> "Puzzle":
    from handwired.judge.game.puzzle import read_statement  # the whole reader: never for the list

    puzzle = read_statement(path, named_by_file=True)
    return replace(puzzle, ref=puzzle.name, key=puzzle.name)


def puzzle_reference(puzzle: "Puzzle", folder: Path) -> str | None:
    """What a weight file in ``folder`` writes as its ``puzzle``: a bundled puzzle's name, or the statement's
    file name, ``#`` and its content's hash (as progress keeps it), so an edited statement is noticed; None for a
    statement that is not in ``folder`` (a weight file names only a statement beside it)."""
    return puzzle.name if puzzle.bundled else reference(Path(puzzle.ref), puzzle.key.rpartition(HASH_MARK)[2], folder)


def named_puzzle(model: "Model") -> tuple["Puzzle | None", str | None]:
    """The puzzle a weight file names (None if it names none), and a note when its statement has changed since."""
    if model.puzzle is None:
        return None, None
    where = f"{model.source}: puzzle"
    path, mark, digest = model.puzzle.rpartition(HASH_MARK)
    if not mark:
        if model.puzzle not in bundled_puzzles():
            names = ", ".join(p.name for p in catalogue()) or "none are installed"
            raise HandwiredError(f"{where}: no puzzle named {describe(model.puzzle).removeprefix('the string ')} "
                                 f"(puzzles: {names}; a statement you "
                                 "wrote is named by its file name and hash, beside the weight file, as handwired "
                                 "puzzles start writes it)")
        return load_puzzle(model.puzzle), None
    if not beside(path) or not re.fullmatch(r"[0-9a-f]{1,64}", digest):
        raise HandwiredError(f"{where}: {describe(model.puzzle)} is not a statement beside the file; a weight file "
                             "names only a statement in its own folder, as NAME.json#HASH (or give the puzzle with "
                             "{puzzle})", ("puzzle",))
    statement = Path(model.source).parent / path
    _refuse_other_than_a_file(where, statement, model.puzzle)
    try:
        puzzle = load_puzzle(str(statement))
    except HandwiredError:  # never quote a file the weight file chose: it may be anything beside it
        raise HandwiredError(f"{where}: {statement} is not a puzzle statement handwired can read (handwired puzzles "
                             f"show {statement} says why); give the puzzle with {{puzzle}}", ("puzzle",)) from None
    now = puzzle.key.rpartition(HASH_MARK)[2]
    note = None if now == digest else (f"{model.source} was started on {statement} as it was ({HASH_MARK}{digest}); "
                                       f"it has changed since ({HASH_MARK}{now}): judged as it is now")
    return puzzle, note


def _refuse_other_than_a_file(where: str, statement: Path, named: str) -> None:
    """A statement a weight file names must be a regular file beside it: not gone, not a folder, FIFO or device, and
    not a symbolic link (which could lead anywhere)."""
    try:
        mode = statement.lstat().st_mode
    except OSError:
        raise HandwiredError(f"{where}: the statement {statement} is not there any more (the file names "
                             f"{named!r}); give the puzzle with {{puzzle}}", ("puzzle",)) from None
    if not stat.S_ISREG(mode):
        what = "a symbolic link" if stat.S_ISLNK(mode) else kind_of(mode)
        raise HandwiredError(f"{where}: {statement} is {what}, not a statement file (the file names {named!r}; a "
                             "weight file names only a regular file beside it); give the puzzle with {puzzle}",
                             ("puzzle",))


def other_puzzle(model: "Model", puzzle: "Puzzle") -> str | None:
    """The puzzle the file names (as it writes it) when that is not ``puzzle``; None when it names none or that one."""
    if model.puzzle is None:
        return None
    path, mark, _ = model.puzzle.rpartition(HASH_MARK)
    if not mark:
        same = puzzle.bundled and puzzle.name == model.puzzle
    else:
        same = (not puzzle.bundled and beside(path)
                and (Path(model.source).parent / path).resolve() == Path(puzzle.ref).resolve())
    return None if same else model.puzzle
