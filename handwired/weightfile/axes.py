"""The labelled sides of a model's matrices, and labels as they are printed.

Every matrix in a weight file has labelled rows and columns: the residual
dims (``dims``), vocab tokens, positions, the q/k/v columns of ``c_attn``, the
``z`` rows of ``c_proj``, MLP hidden units. A sparse entry names its row and
column by these labels (or by an index written as a string); views, errors and
``diff`` print the same labels.
"""

import re
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Axis:
    """One side of a matrix: what it is, and the labels a sparse entry may name it by."""

    meaning: str  # for messages: "one per residual dim"
    labels: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.labels)

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {label: i for i, label in enumerate(self.labels)}

    def find(self, key: str) -> int | None:
        """A label, or an index written as a string ("3"), -> its position; None if it is neither."""
        if key in self._positions:
            return self._positions[key]
        index = as_index(key)
        return index if index is not None and index < len(self.labels) else None

    def describe(self) -> str:
        """The valid labels, runs folded: ``q0…q7, k0…k7, v0…v7, or an index 0…23``."""
        return self._described

    @cached_property
    def _described(self) -> str:  # once per axis: a file may name a thousand wrong labels
        indices = f"0…{len(self.labels) - 1}" if len(self.labels) > 2 else ", ".join(map(str, range(len(self.labels))))
        if all(label == str(i) for i, label in enumerate(self.labels)):
            return indices
        parts = _folded(self.labels)
        if len(parts) > MOST_SHOWN:  # a vocab of 20,000 tokens: the first few, then how many
            parts = [*parts[:MOST_SHOWN], f"… ({len(self.labels):,} labels)"]
        return f"{', '.join(parts)}, or an index {indices}"


MOST_SHOWN = 40  # labels (or folded runs) an error message lists


def fold_labels(labels: tuple[str, ...] | list[str]) -> str:
    """``q0, q1, q2, k0`` -> ``q0…q2, k0``: runs of a prefix with consecutive numbers folded."""
    return ", ".join(_folded(labels))


def _folded(labels: tuple[str, ...] | list[str]) -> list[str]:
    parts: list[str] = []
    run: list[str] = []

    def flush() -> None:
        parts.extend([f"{run[0]}…{run[-1]}"] if len(run) > 2 else run)
        run.clear()

    for label in labels:
        match = _NUMBERED.fullmatch(label)
        if run and match:
            last = _NUMBERED.fullmatch(run[-1])
            if last and last[1] == match[1] and int(last[2]) + 1 == int(match[2]):
                run.append(label)
                continue
        flush()
        run.append(shown(label))
    flush()
    return parts


_NUMBERED = re.compile(r"(.*?)(\d+)")


def as_index(key: str) -> int | None:
    """ "3" -> 3; anything that is not a plain non-negative whole number -> None."""
    if key.isascii() and key.isdigit() and (key == "0" or not key.startswith("0")):
        return int(key)
    return None


def shown(text: str) -> str:
    """Text as it may be printed inside one line: unchanged, unless a control character
    (a newline, a tab) would break or hide it — then quoted and escaped: ``'\\n'``."""
    return text if text.isprintable() else repr(text)


# What a terminal obeys or a reader cannot see: C0 but the newline, DEL and C1; and Unicode's invisible format
# characters (category Cf: the bidi overrides and isolates U+202A-202E and U+2066-2069 that reorder text, zero-width
# spaces and joiners, the soft hyphen, the byte-order mark, tag characters) and line and paragraph separators (Zl, Zp)
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
                     "\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
                     "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
                     "\U000e0001\U000e0020-\U000e007f]")


def escaped(text: str) -> str:
    """Text from a file as it may be shown on a terminal: each control character but the newline written as its
    escape (``\\x1b``, ``\\x9b``), so the text is shown and never obeyed; paragraphs keep their line breaks."""
    return CONTROL.sub(lambda match: repr(match[0])[1:-1], text) if CONTROL.search(text) else text


def printable(text: str) -> str:
    """A message with every control character escaped (a newline in a token becomes ``\\n``), so it is one line."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() or char == " " else repr(char)[1:-1] for char in text)
