"""A weight file's ``puzzle`` key: the name of a bundled puzzle, or a statement beside the weight file, named by its
file name, ``#`` and the first characters of the statement's content hash (``mine.json#fdb37c61e3cf``).

A key never leads out of the weight file's folder: no folder in it, no ``..``, no absolute path, so a file from
a stranger cannot make handwired read anything but a statement lying beside it. A copy written in another folder
(``weights convert``, an export, an import) keeps the key only when the statement is beside the copy too:
:func:`moved` says which.
"""

from pathlib import Path

HASH_MARK = "#"
MAX_PART_BYTES = 255  # a file name's longest on every common file system


def reference(statement: Path, digest: str, folder: Path) -> str | None:
    """How a weight file in ``folder`` names the statement at ``statement`` whose hash begins ``digest``:
    ``NAME.json#digest``; None when the statement is not in that folder (a key never names another folder)."""
    if statement.resolve().parent != folder.resolve():
        return None
    return f"{statement.name}{HASH_MARK}{digest}"


def moved(key: str, old: Path, new: Path) -> str | None:
    """``key`` as a file in folder ``old`` wrote it, for a file in folder ``new`` (None: the statement is not beside
    the new file, so it names none); a bundled name stays as it is."""
    path, mark, digest = key.rpartition(HASH_MARK)
    if not mark:
        return key
    return reference(old / path, digest, new) if beside(path) else None


def beside(path: str) -> bool:
    """Whether a key's path names a file in the weight file's own folder: a plain file name, nothing more."""
    return (bool(path) and path not in (".", "..") and "/" not in path and "\\" not in path and ":" not in path
            and len(path.encode("utf-8", "surrogatepass")) <= MAX_PART_BYTES)
