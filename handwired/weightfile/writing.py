"""Writing files people read: JSON laid out like its matrices, written atomically, never over a file by accident."""

import json
import os
import stat
from pathlib import Path
from typing import Any

from handwired.errors import HandwiredError
from handwired.weightfile.axes import CONTROL
from handwired.weightfile.jsonfile import check_path, kind_of


def _json_escape(char: str) -> str:  # one character -> its JSON escape (an astral one as its UTF-16 surrogates)
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(data: Any, indent: int | None = None) -> str:
    """``data`` as JSON, unicode as it is but every control character (C0, DEL, C1) and invisible format character
    (a bidi override, a zero-width space: :data:`~handwired.weightfile.axes.CONTROL`) as a ``\\u`` escape, so a
    string from a file printed as JSON can never drive a terminal nor hide or reorder what it shows."""
    text = json.dumps(data, indent=indent, ensure_ascii=False)  # escapes C0 but writes DEL, C1 and the rest as is
    return CONTROL.sub(lambda match: _json_escape(match[0]), text)  # only in strings: JSON's syntax is ASCII


def dumps(doc: Any) -> str:
    """JSON with each matrix row (dense list or sparse object) on one line, so a file reads like its matrices."""

    def inline(value: Any) -> bool:
        return not isinstance(value, (list, dict))

    def render(value: Any, indent: int) -> str:
        pad = "  " * (indent + 1)
        if isinstance(value, dict):
            if all(inline(item) for item in value.values()):  # a sparse row, or {} for all zeros
                return "{" + ", ".join(f"{json_text(key)}: {json_text(item)}"
                                       for key, item in value.items()) + "}"
            items = [f"{pad}{json_text(key)}: {render(item, indent + 1)}"
                     for key, item in value.items()]
            return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
        if isinstance(value, list):
            if all(inline(item) for item in value):
                return "[" + ", ".join(json_text(item) for item in value) + "]"
            return "[\n" + ",\n".join(pad + render(item, indent + 1) for item in value) + "\n" + "  " * indent + "]"
        return json_text(value)

    return render(doc, 0) + "\n"


def target(path: Path) -> Path:
    """Where writing ``path`` lands: a symbolic link is written through to the file it points to (made if missing)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def check_writable(path: Path, force: bool = False) -> None:
    """Refuse an output path before any work: an existing file (without ``force``), anything but a regular file
    (a folder, a device, a FIFO: even with ``force``), no such folder, a path no file system holds."""
    check_path(path)
    where = target(path)
    through = f" (a link to {where})" if where != path else ""
    try:
        mode = where.stat().st_mode
    except OSError:
        mode = None  # nothing there yet
    if mode is not None and stat.S_ISDIR(mode):
        raise HandwiredError(f"{path}{through}: is a folder; give a file name")
    if mode is not None and not stat.S_ISREG(mode):
        raise HandwiredError(f"{path}{through}: is {kind_of(mode)}; handwired writes only regular files, "
                             "never replacing anything else")
    if mode is not None and not force:
        raise HandwiredError(f"{path}{through}: already exists; use {{force}} to replace it", ("force",))
    folder = where.parent if str(where.parent) else Path(".")
    if not folder.is_dir():
        raise HandwiredError(f"{path}{through}: folder {folder} does not exist")


def umask_mode(full: int) -> int:
    """``full`` (0o666 for a file, 0o777 for a folder) less the user's umask: the mode ``open`` would give."""
    mask = os.umask(0)  # the only way to read the umask is to set it: put it straight back
    os.umask(mask)
    return full & ~mask


def write_new(path: Path, text: str, force: bool = False) -> None:
    """Write a file atomically; refuse to replace an existing one unless ``force``, and anything but a regular file.

    A new file gets the mode the user's umask gives, as any program's would; a replaced file keeps its own
    mode. A symbolic link is written through: the file it points to is replaced, the link stays.
    """
    check_writable(path, force)
    where = target(path)
    folder = where.parent if str(where.parent) else Path(".")
    try:
        old_mode = stat.S_IMODE(where.stat().st_mode)
    except OSError:
        old_mode = None
    try:
        temp, handle = _create_temporary(folder, where.name)
    except OSError as error:  # a read-only folder
        raise HandwiredError(f"{path}: cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        if old_mode is not None:
            os.chmod(temp, old_mode)
        os.replace(temp, where)
    except BaseException as error:
        temp.unlink(missing_ok=True)
        if isinstance(error, OSError):  # a full disk, a path that became a folder
            raise HandwiredError(f"{path}: cannot write: {error.strerror or error}") from None
        raise


def _create_temporary(folder: Path, name: str) -> tuple[Path, int]:
    """A new, empty file beside the one to write, created with mode 0o666 for the umask to narrow
    (tempfile.mkstemp's are always 0o600, which would make every written file private)."""
    for _ in range(100):
        temp = folder / f".{name}.{os.urandom(4).hex()}.tmp"  # os, not secrets: hashlib costs predict 3 ms
        try:
            return temp, os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(17, "could not find a free temporary name", str(folder))
