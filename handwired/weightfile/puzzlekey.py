"""A weight file's ``puzzle`` key: the name of a bundled puzzle, or a statement's path, ``#`` and the first
characters of the statement's content hash (``../mine.json#fdb37c61e3cf``).

The path leads from the weight file's own folder, so a copy written elsewhere (``weights convert``, an export, an
import) must name the same statement from its new folder: :func:`moved` rewrites it.
"""

import os
from pathlib import Path

HASH_MARK = "#"


def reference(statement: Path, digest: str, folder: Path) -> str:
    """How a weight file in ``folder`` names the statement at ``statement`` whose hash begins ``digest``."""
    try:
        path = Path(os.path.relpath(statement.resolve(), folder.resolve())).as_posix()
    except ValueError:  # on another drive: no relative path leads there
        path = statement.resolve().as_posix()
    return f"{path}{HASH_MARK}{digest}"


def moved(key: str, old: Path, new: Path) -> str:
    """``key`` as a file in folder ``old`` wrote it, for a file in folder ``new``; a bundled name stays as it is."""
    path, mark, digest = key.rpartition(HASH_MARK)
    return reference(old / path, digest, new) if mark else key
