"""Reading a JSON file a person wrote: bounded in size, UTF-8, no key given twice, every problem one line.

Weight files, puzzle statements, the progress file and the files of an
exported folder are all read here, so each is refused the same way.
"""

import json
from pathlib import Path
from typing import Any

from handwired.errors import HandwiredError

MAX_FILE_BYTES = 32 * 1024 * 1024


def read_json(path: Path) -> Any:
    """The parsed document; a HandwiredError naming the file (and line and column) if it cannot be read."""
    try:
        size = path.stat().st_size
    except OSError as error:
        raise HandwiredError(f"{path}: cannot read: {error.strerror}") from None
    if size > MAX_FILE_BYTES:
        raise HandwiredError(
            f"{path}: {size:,} bytes, far too large for a hand-written file (at most {MAX_FILE_BYTES:,})"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise HandwiredError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise HandwiredError(f"{path}: cannot read: {error.strerror}") from None
    return parse_json(text, str(path))


def parse_json(text: str, source: str) -> Any:
    """JSON text -> the document; one line naming ``source`` if it is not valid JSON for handwired."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
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


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result
