"""Reading a JSON file a person wrote: bounded in size, UTF-8, no key given twice, every problem one line.

Weight files, puzzle statements, the progress file and the files of an
exported folder are all read here, so each is refused the same way.
"""

import json
import os
import stat
from pathlib import Path
from typing import Any

from handwired.errors import HandwiredError

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_NAME_BYTES = 255  # a file or folder name, on every common file system
MAX_PATH_BYTES = 4096  # a whole path (Linux's PATH_MAX)


def read_json(path: Path) -> Any:
    """The parsed document; a HandwiredError naming the file (and line and column) if it cannot be read."""
    return parse_json(read_text(path), str(path))


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, for messages: ``a folder``, ``a FIFO``, ``a device``."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def check_path(path: Path | str) -> None:
    """Refuse, before the file system is asked, a path no file system holds: a name in it of more than
    MAX_NAME_BYTES bytes, or more than MAX_PATH_BYTES in all (the operating system would say only "File name too
    long")."""
    text = str(path)
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > MAX_PATH_BYTES:
        raise HandwiredError(f"{_short(text)}: a path of {size:,} bytes, more than a file system allows "
                             f"(at most {MAX_PATH_BYTES:,})")
    for part in Path(text).parts:
        size = len(part.encode("utf-8", "surrogateescape"))
        if size > MAX_NAME_BYTES:
            raise HandwiredError(f"{_short(text)}: a name in this path is {size:,} bytes, more than a file system "
                                 f"allows (at most {MAX_NAME_BYTES})")


def _short(text: str) -> str:
    """A path for a message: a long one cut to its start and end."""
    return text if len(text) <= 80 else f"{text[:40]}…{text[-30:]} ({len(text):,} characters)"


def read_text(path: Path) -> str:
    """A regular file's UTF-8 text, at most MAX_FILE_BYTES; a FIFO or device is never opened (it could block)."""
    limit = MAX_FILE_BYTES
    check_path(path)
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):
            raise HandwiredError(f"{path}: is {kind_of(status.st_mode)}, not a file to read")
        _refuse_size(path, status.st_size, limit)
        # O_NONBLOCK: if a FIFO took the file's place since the stat, the open must not wait for a writer
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as error:
        raise HandwiredError(f"{path}: cannot read: {error.strerror or error}") from None
    with os.fdopen(handle, "rb") as file:
        try:
            mode = os.fstat(handle).st_mode
            if not stat.S_ISREG(mode):
                raise HandwiredError(f"{path}: is {kind_of(mode)}, not a file to read")
            data = file.read(limit + 1)
        except OSError as error:
            raise HandwiredError(f"{path}: cannot read: {error.strerror or error}") from None
    _refuse_size(path, len(data), limit)  # it grew since the stat
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise HandwiredError(f"{path}: not UTF-8 text (byte {error.start})") from None


def parse_json(text: str, source: str) -> Any:
    """JSON text -> the document; one line naming ``source`` if it is not valid JSON for handwired."""
    try:
        return loads(text)
    except json.JSONDecodeError as error:
        raise HandwiredError(
            f"{source}: not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    except _DuplicateKey as error:
        raise HandwiredError(
            f"{source}: not valid JSON for handwired: key {error.args[0]!r} appears twice in one object"
        ) from None
    except RecursionError:
        raise HandwiredError(f"{source}: not valid JSON for handwired: nested too deeply") from None


def _refuse_size(path: Path, size: int, limit: int) -> None:
    if size > limit:
        raise HandwiredError(f"{path}: {size:,} bytes, far too large for a hand-written file (at most {limit:,})")


def loads(text: str) -> Any:
    """``json.loads`` for handwired: no key twice in an object, and an integer too long for a float is a
    :class:`HugeInteger` (Python refuses to read integers of more than 4,300 digits)."""
    return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_int=_integer)


MAX_DIGITS = 308  # so every int read converts to a float64 (at most 1.8e308) without an OverflowError


class HugeInteger(float):
    """An integer literal beyond float range: infinite as a number, so every check that wants a finite
    number or a whole count refuses it with its path; printed short, as its first digits and length."""

    literal: str  # the digits as the file wrote them

    def __new__(cls, literal: str) -> "HugeInteger":
        number = super().__new__(cls, "-inf" if literal.startswith("-") else "inf")
        number.literal = literal
        return number

    def __repr__(self) -> str:
        return f"{self.literal[:6]}…({len(self.literal.lstrip('-')):,} digits)"

    __str__ = __repr__


def _integer(literal: str) -> int | float:
    return HugeInteger(literal) if len(literal.lstrip("-")) > MAX_DIGITS else int(literal)


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result
