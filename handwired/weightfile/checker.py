"""Checking a JSON document a person wrote: every problem, each with its JSON path.

One :class:`Checker` walks a parsed document and collects problems as
``json.path: what was found, what was expected`` instead of stopping at the
first, so ``weights validate`` can list them all. Weight files, puzzle
statements, the progress file and an exported folder's label file are checked
with it, so a mistake reads the same wherever it is made.

JSON paths are written as people read them: ``blocks[0].attn.c_attn.w``,
``rule.kind``, ``hints[2]``; :func:`path_steps` and :func:`locate` go back from
a path to the value it names.
"""

import difflib
import math
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from handwired.weightfile.axes import as_index, shown
from handwired.weightfile.jsonfile import HugeInteger

MAX_SIZE = 4096  # the largest count handwired reads: far beyond anything wired by hand
MAX_LABEL = 100  # characters of a label: every table that has its row or column prints it
T = TypeVar("T")


def known(value: T | None) -> T:
    """A value a checker read, once its document has no problem: each reader returns None only after recording
    one, so here it is never None (if it were, a reader broke that promise: a bug, said as one)."""
    if value is None:
        raise AssertionError("a checker returned None without recording a problem")
    return value


def describe(value: Any) -> str:
    """How JSON would name a value, for messages: ``the number 3``, ``a list of 2``, ``the string 'a'``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, HugeInteger):  # already short: its first digits and how many
        return f"the number {value}"
    if isinstance(value, (int, float)):
        text = str(value)
        return f"the number {text}" if len(text) <= 20 else "a number of more than 20 digits"
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) <= 40 else "a string"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def listed(tokens: list[str] | tuple[str, ...], most: int = 40) -> str:
    """Tokens for a message, ``a, b, c``; a long vocabulary cut short: ``a, b, … (20,000 tokens)``."""
    if len(tokens) <= most:
        return ", ".join(map(shown, tokens))
    return f"{', '.join(map(shown, tokens[:most]))}, … ({len(tokens):,} tokens)"


def join(path: str, key: str) -> str:
    """The path of ``key`` inside the object at ``path``."""
    return f"{path}.{key}" if path else key


def item(path: str, key: int | str) -> str:
    """The path of a list item (``path[3]``) or an object's entry (``path.label``)."""
    return f"{path}[{key}]" if isinstance(key, int) else join(path, key)


_PATH_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def path_steps(path: str) -> list[str | int]:
    """``"blocks[0].attn.c_attn.w"`` -> ``["blocks", 0, "attn", "c_attn", "w"]``."""
    return [int(index) if index else name for name, index in _PATH_STEP.findall(path)]


def locate(tree: Any, path: str) -> Any:
    """What a path names in a document (or in a model's parameters, laid out the same way)."""
    for step in path_steps(path):
        tree = tree[step]
    return tree


class Checker:
    """Collects every problem of one document, each with its JSON path."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def problem(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}" if path else message)

    def obj(self, value: Any, path: str, keys: dict[str, bool]) -> dict[str, Any] | None:
        """An object whose keys are among ``keys`` (key -> required), the required ones present."""
        if not isinstance(value, dict):
            self.problem(path, f"expected an object with {', '.join(keys)}; found {describe(value)}")
            return None
        for key in value:
            if key not in keys:
                close = difflib.get_close_matches(key, list(keys), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                self.problem(join(path, key), f"unknown key {key!r} ({hint}valid keys: {', '.join(keys)})")
        for key, required in keys.items():
            if required and key not in value:
                self.problem(path or "(top level)", f"missing {key!r}")
        return value

    def mapping(self, value: Any, path: str, what: str) -> dict[str, Any] | None:
        """An object whose keys are names the document chooses (``what`` says what they map to)."""
        if not isinstance(value, dict):
            self.problem(path, f"expected an object of {what}; found {describe(value)}")
            return None
        return value

    def whole(self, value: Any, path: str, minimum: int = 1, maximum: int = MAX_SIZE) -> int | None:
        """A whole number from ``minimum`` to ``maximum`` (1.0 counts as 1)."""
        is_whole = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
        if not is_whole:
            self.problem(path, f"expected a whole number ≥ {minimum}; found {describe(value)}")
            return None
        value = int(value)
        if value < minimum:
            self.problem(path, f"expected a whole number ≥ {minimum}; found {value}")
            return None
        if value > maximum:
            self.problem(path, f"{describe(value).removeprefix('the number ')} is more than handwired supports "
                               f"(at most {maximum:,})")
            return None
        return value

    def finite(self, value: Any, path: str, what: str = "a finite number") -> float | None:
        """A JSON number that float64 holds (an integer of 400 digits does not)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problem(path, f"expected {what}; found {describe(value)}")
            return None
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            self.problem(path, f"expected {what}; found {describe(value)}")
            return None
        return number

    def text(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str):
            self.problem(path, f"expected a string; found {describe(value)}")
            return None
        return value

    def flag(self, value: Any, path: str) -> bool | None:
        if not isinstance(value, bool):
            self.problem(path, f"expected true or false; found {describe(value)}")
            return None
        return value

    def one_of(self, value: Any, path: str, choices: tuple[str, ...] | list[str]) -> str | None:
        if not isinstance(value, str) or value not in choices:
            self.problem(path, f"expected one of {', '.join(choices)}; found {describe(value)}")
            return None
        return value

    def labels(self, value: Any, path: str, count: int | None = None, what: str = "labels") -> list[str] | None:
        """Labels for an axis: non-empty strings, each once; one that is a number must be its own index
        (in a sparse matrix it would otherwise mean two things). ``count``: how many there must be."""
        if not isinstance(value, list) or (count is not None and len(value) != count):
            wanted = f"a list of {count} {what}" if count is not None else f"a list of {what}"
            self.problem(path, f"expected {wanted}; found {describe(value)}")
            return None
        seen: set[str] = set()  # not value[:i]: a list of a million labels must not take hours
        for i, label in enumerate(value):
            if not isinstance(label, str) or not label.strip():
                self.problem(f"{path}[{i}]", f"expected a non-empty label; found {describe(label)}")
                return None
            if len(label) > MAX_LABEL:
                self.problem(f"{path}[{i}]", f"a label of {len(label):,} characters, more than a table shows "
                                             f"(at most {MAX_LABEL})")
                return None
            if label in seen:
                self.problem(f"{path}[{i}]", f"{label!r} appears twice")
                return None
            number = as_index(label)
            if number is not None and number != i:
                self.problem(f"{path}[{i}]", f"{label!r} is a number but labels entry {i}; "
                                             f"in a sparse matrix {label!r} would mean two things")
                return None
            seen.add(label)
        return value

    def vocab(self, value: Any, path: str = "vocab") -> list[str] | None:
        """A non-empty list of distinct single-character tokens."""
        if not isinstance(value, list) or not value:
            self.problem(path, "expected a list of single-character tokens such as [\"a\", \"b\"]; "
                               f"found {describe(value)}")
            return None
        seen: set[str] = set()
        for i, token in enumerate(value):
            if not isinstance(token, str) or len(token) != 1:
                self.problem(f"{path}[{i}]", f"expected a single character; found {describe(token)}")
                return None
            if token in seen:
                self.problem(f"{path}[{i}]", f"{token!r} appears twice")
                return None
            seen.add(token)
        return value

    def tokens(self, value: Any, path: str, vocab: list[str] | tuple[str, ...] | None,
               longest: int | None = None) -> str | None:
        """A non-empty string of vocabulary tokens, at most ``longest`` of them."""
        if not isinstance(value, str) or not value:
            self.problem(path, f"expected a non-empty string of vocabulary tokens; found {describe(value)}")
            return None
        if vocab:
            known = set(vocab)
            for position, char in enumerate(value):
                if char not in known:
                    self.problem(path, f"{char!r} (position {position}) is not in the vocabulary "
                                       f"{listed(vocab)}")
                    return None
        if longest is not None and len(value) > longest:
            self.problem(path, f"{len(value)} tokens, longer than n_ctx {longest}")
            return None
        return value

    def token(self, value: Any, path: str, vocab: list[str] | tuple[str, ...]) -> str | None:
        """One token of the vocabulary."""
        if not isinstance(value, str) or len(value) != 1 or value not in vocab:
            self.problem(path, f"expected one token of the vocabulary {listed(vocab)}; "
                               f"found {describe(value)}")
            return None
        return value

    def kind(self, value: Any, path: str, kinds: Mapping[str, tuple[str, ...] | dict[str, bool]]) -> str | None:
        """An object ``{"kind": K, …}`` whose K is one of ``kinds``, with K's parameters beside it and nothing else.

        ``kinds`` maps each kind to its parameters: a tuple (all required) or a dict (parameter -> required).
        Returns the kind's name, or None after reporting what is wrong.
        """
        def parameters(kind: str) -> dict[str, bool]:
            spec = kinds[kind]
            return spec if isinstance(spec, dict) else dict.fromkeys(spec, True)

        if not isinstance(value, dict) or "kind" not in value:
            example = next((kind for kind in kinds if not parameters(kind)), next(iter(kinds)))
            found = "an object without 'kind'" if isinstance(value, dict) else describe(value)
            self.problem(path, f"expected an object such as {{\"kind\": \"{example}\"}}; found {found}")
            return None
        kind = self.one_of(value["kind"], join(path, "kind"), list(kinds))
        if kind is None:
            return None
        ok = True
        for key in value:
            if key != "kind" and key not in parameters(kind):
                allowed = ", ".join(parameters(kind)) or "none"
                self.problem(join(path, key), f"not a parameter of kind {kind!r} (its parameters: {allowed})")
                ok = False
        for key, required in parameters(kind).items():
            if required and key not in value:
                self.problem(path, f"kind {kind!r} needs {key!r}")
                ok = False
        return kind if ok else None

    def strings(self, value: Any, path: str) -> list[str] | None:
        """A non-empty list of non-empty strings."""
        if not isinstance(value, list) or not value:
            self.problem(path, f"expected a non-empty list of strings; found {describe(value)}")
            return None
        for i, entry in enumerate(value):
            if not isinstance(entry, str) or not entry.strip():
                self.problem(f"{path}[{i}]", f"expected a non-empty string; found {describe(entry)}")
                return None
        return value
