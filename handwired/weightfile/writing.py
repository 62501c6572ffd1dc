"""Writing files people read: JSON laid out like its matrices, written atomically, never over a file by accident."""

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from handwired.errors import HandwiredError


def dumps(doc: Any) -> str:
    """JSON with each matrix row (dense list or sparse object) on one line, so a file reads like its matrices."""

    def inline(value: Any) -> bool:
        return not isinstance(value, (list, dict))

    def render(value: Any, indent: int) -> str:
        pad = "  " * (indent + 1)
        if isinstance(value, dict):
            if all(inline(item) for item in value.values()):  # a sparse row, or {} for all zeros
                return "{" + ", ".join(f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(item, ensure_ascii=False)}"
                                       for key, item in value.items()) + "}"
            items = [f"{pad}{json.dumps(key, ensure_ascii=False)}: {render(item, indent + 1)}"
                     for key, item in value.items()]
            return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
        if isinstance(value, list):
            if all(inline(item) for item in value):
                return "[" + ", ".join(json.dumps(item, ensure_ascii=False) for item in value) + "]"
            return "[\n" + ",\n".join(pad + render(item, indent + 1) for item in value) + "\n" + "  " * indent + "]"
        return json.dumps(value, ensure_ascii=False)

    return render(doc, 0) + "\n"


def check_writable(path: Path, force: bool = False) -> None:
    """Refuse an output path before any work: an existing file (without ``force``), a folder, no such folder."""
    if path.is_dir():
        raise HandwiredError(f"{path}: is a folder; give a file name")
    if path.exists() and not force:
        raise HandwiredError(f"{path}: already exists; use {{force}} to replace it", ("force",))
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise HandwiredError(f"{path}: folder {folder} does not exist")


def umask_mode(full: int) -> int:
    """``full`` (0o666 for a file, 0o777 for a folder) less the user's umask: the mode ``open`` would give."""
    mask = os.umask(0)  # the only way to read the umask is to set it: put it straight back
    os.umask(mask)
    return full & ~mask


def write_new(path: Path, text: str, force: bool = False) -> None:
    """Write a file atomically; refuse to replace an existing one unless ``force``.

    A new file gets the mode the user's umask gives (mkstemp's own is private); a replaced one keeps its mode.
    """
    check_writable(path, force)
    mode = path.stat().st_mode & 0o777 if path.exists() else umask_mode(0o666)
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                        dir=path.parent if str(path.parent) else ".")
    except OSError as error:  # a read-only folder
        raise HandwiredError(f"{path}: cannot write: {error.strerror or error}") from None
    try:
        os.chmod(temp, mode)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException as error:
        Path(temp).unlink(missing_ok=True)
        if isinstance(error, OSError):  # a full disk, a path that became a folder
            raise HandwiredError(f"{path}: cannot write: {error.strerror or error}") from None
        raise
