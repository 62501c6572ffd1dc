"""The weight file (format ``handwired/1``): reading, validating, writing.

A weight file is JSON a person writes by hand. Reading it checks every part and
reports problems as ``file: json.path: what was found, what was expected``; a
valid file becomes a :class:`Model` whose ``params`` hold float64 arrays in
picoGPT's layout (``params["blocks"][0]["attn"]["c_attn"]["w"]`` and so on).
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from handwired.errors import HandwiredError
from handwired.expr import NAME_PATTERN, ExpressionError, evaluate

FORMAT = "handwired/1"
MAX_FILE_BYTES = 32 * 1024 * 1024
# Far beyond anything wired by hand; keeps a typo like n_embd 80000 from allocating gigabytes.
MAX_SIZE = 4096
MAX_PARAMETERS = 10_000_000  # about what a 32 MB dense file holds; a sparse file could ask for more in a line
DEFAULT_MODEL = "aab"

TOP_KEYS = {
    "format": True, "name": False, "description": False, "vocab": True, "n_ctx": True,
    "n_embd": True, "n_head": False, "constants": False, "dims": False, "example": False,
    "target": False, "wte": True, "wpe": True, "blocks": True, "ln_f": False,
}  # key -> required
BLOCK_KEYS = {"attn": True, "ln_1": False, "ln_2": False, "mlp": False}
ATTN_KEYS = {"c_attn": True, "c_proj": True}
MLP_KEYS = {"hidden": False, "c_fc": True, "c_proj": True}
LINEAR_KEYS = {"w": True, "b": False}
NORM_KEYS = {"g": True, "b": False}


@dataclass(frozen=True)
class Model:
    """A validated weight file: metadata plus float64 parameters."""

    source: str
    vocab: tuple[str, ...]
    n_ctx: int
    n_embd: int
    n_head: int
    dims: tuple[str, ...]
    params: dict[str, Any]
    name: str = ""
    description: str = ""
    constants: dict[str, float] = field(default_factory=dict)
    example: str | None = None
    target: str | None = None
    # Each parameter's entries as the file wrote them (numbers or expressions such as "2*Lg"),
    # keyed by JSON path ("wte", "blocks[0].attn.c_attn.w" …); what views and conversion show.
    written: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    axes: dict[str, tuple["Axis", ...]] = field(default_factory=dict, repr=False)  # the same keys: each one's labels
    document: dict[str, Any] = field(default_factory=dict, repr=False)  # the parsed file, as written

    @property
    def n_vocab(self) -> int:
        return len(self.vocab)

    @property
    def d_head(self) -> int:
        return self.n_embd // self.n_head

    @property
    def n_layer(self) -> int:
        return len(self.params["blocks"])

    def encode(self, text: str, what: str = "input") -> np.ndarray:
        """Text -> token ids, one character a token."""
        if text == "":
            raise HandwiredError(f"{what}: empty; give at least one token from the vocabulary {', '.join(self.vocab)}")
        index = {token: i for i, token in enumerate(self.vocab)}
        for position, char in enumerate(text):
            if char not in index:
                raise HandwiredError(
                    f"{what} {text!r}: {char!r} (position {position}) is not in the vocabulary "
                    f"{', '.join(self.vocab)}"
                )
        return np.array([index[char] for char in text], dtype=np.intp)

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)


# ---------------------------------------------------------------- finding files


def bundled_folder(name: str) -> Path:
    """A folder of bundled files (weights, puzzles): inside the installed package, or at the top of a checkout."""
    package = Path(__file__).resolve().parent  # a plain path: importlib.resources would cost every command ~3 ms
    packaged = package / name
    return packaged if packaged.is_dir() else package.parent / name


def json_files(folder: Path) -> dict[str, Path]:
    """Name (the file's stem) -> path, for every .json file directly in ``folder``."""
    if not folder.is_dir():
        return {}
    return {path.stem: path for path in sorted(folder.glob("*.json"))}


def bundled_dir() -> Path:
    """Where the bundled models are: inside the installed package, or weights/ in a checkout."""
    return bundled_folder("weights")


def bundled_models() -> dict[str, Path]:
    return json_files(bundled_dir())


def resolve(spec: str) -> Path:
    """A ``--weights`` value -> a file: an existing path, else a bundled model's name."""
    path = Path(spec)
    if path.is_file():
        return path
    models = bundled_models()
    if spec in models:
        return models[spec]
    if path.exists():
        raise HandwiredError(f"{spec}: is not a file")
    names = ", ".join(models) or "none"
    raise HandwiredError(f"{spec}: no such file, and no bundled model of that name (bundled: {names})")


def validate(spec: str) -> tuple[Path, Model | None, list[str]]:
    """Read a weight file named by path or bundled name: its path, the model if valid, every problem."""
    path = resolve(spec)
    model, problems = parse(read_json(path), source=str(path))
    return path, model, problems


def load(spec: str = DEFAULT_MODEL) -> Model:
    """Read and validate a weight file named by path or bundled name; raise HandwiredError if it is wrong."""
    path, model, problems = validate(spec)
    if problems:
        first = problems[0]
        more = ""
        if len(problems) > 1:
            more = f" (and {len(problems) - 1} more: handwired weights validate {path})"
        raise HandwiredError(f"{path}: {first}{more}")
    return model


def read_json(path: Path) -> Any:
    try:
        size = path.stat().st_size
    except OSError as error:
        raise HandwiredError(f"{path}: cannot read: {error.strerror}") from None
    if size > MAX_FILE_BYTES:
        raise HandwiredError(
            f"{path}: {size:,} bytes, far too large for a hand-wired weight file (at most {MAX_FILE_BYTES:,})"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise HandwiredError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise HandwiredError(f"{path}: cannot read: {error.strerror}") from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as error:
        raise HandwiredError(
            f"{path}: not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    except _DuplicateKey as error:
        raise HandwiredError(f"{path}: not valid JSON for handwired: key {error.args[0]!r} appears twice in one object") from None
    except RecursionError:
        raise HandwiredError(f"{path}: not valid JSON for handwired: nested too deeply") from None


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


# ---------------------------------------------------------------- validation


def _kind(value: Any) -> str:
    """How JSON would name a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) <= 40 else "a string"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class _Checker:
    """Walks a parsed document and collects every problem with its JSON path."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.constants: dict[str, float] = {}
        self.values: dict[Any, float] = {}  # an entry as written -> its number
        self.written: dict[str, np.ndarray] = {}  # JSON path -> entries as written

    def problem(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}" if path else message)

    def obj(self, value: Any, path: str, keys: dict[str, bool]) -> dict[str, Any] | None:
        """Check an object's keys: required present, nothing unknown."""
        if not isinstance(value, dict):
            self.problem(path, f"expected an object with {', '.join(keys)}; found {_kind(value)}")
            return None
        for key in value:
            if key not in keys:
                close = difflib.get_close_matches(key, list(keys), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                self.problem(_join(path, key), f"unknown key {key!r} ({hint}valid keys: {', '.join(keys)})")
        for key, required in keys.items():
            if required and key not in value:
                self.problem(path or "(top level)", f"missing {key!r}")
        return value

    def whole(self, value: Any, path: str, minimum: int = 1) -> int | None:
        is_whole = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
        if not is_whole:
            self.problem(path, f"expected a whole number ≥ {minimum}; found {_kind(value)}")
            return None
        value = int(value)
        if value < minimum:
            self.problem(path, f"expected a whole number ≥ {minimum}; found {value}")
            return None
        if value > MAX_SIZE:
            self.problem(path, f"{value} is more than handwired supports (at most {MAX_SIZE})")
            return None
        return value

    def text(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str):
            self.problem(path, f"expected a string; found {_kind(value)}")
            return None
        return value

    def number(self, value: Any, path: str) -> float | None:
        """One matrix entry: a finite number or an expression over the constants."""
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            self.problem(path, f"expected a number or an expression such as \"-Lg\"; found {_kind(value)}")
            return None
        if isinstance(value, str):
            try:
                return evaluate(value, self.constants)
            except ExpressionError as error:
                self.problem(path, f"{value!r}: {error}")
                return None
        try:
            number = float(value)
        except OverflowError:  # a JSON integer beyond float range
            number = math.inf
        if not math.isfinite(number):
            self.problem(path, f"expected a finite number; found {value if len(str(value)) < 20 else 'a number too large'}")
            return None
        return number

    def vector(self, value: Any, path: str, axis: Axis | None) -> np.ndarray | None:
        """A bias or LayerNorm vector: a list, or an object of its non-zero entries by label."""
        entries = self._entries(value, path, axis, "entry")
        if entries is None:
            return None
        self.written[path] = entries
        return _evaluated(entries, self.values)

    def matrix(self, value: Any, path: str, rows: Axis | None, cols: Axis | None) -> np.ndarray | None:
        """A list of rows, or an object of rows by label; each row a list or an object of entries by label."""
        if isinstance(value, list):
            if rows is not None and len(value) != len(rows):
                self.problem(path, f"{len(value)} rows, expected {len(rows)} ({rows.meaning})")
                return None
            if not value:
                self.problem(path, f"no rows, expected at least one ({rows.meaning if rows else 'rows'})")
                return None
            if cols is None and isinstance(value[0], list):  # width unknown: the first row decides
                cols = Axis("as the first row", tuple(str(i) for i in range(len(value[0]))))
            keyed = [(i, i) for i in range(len(value))]
        elif isinstance(value, dict):
            if rows is None or cols is None:
                return None  # the labels depend on something already reported as wrong
            keyed = self._keys(value, path, rows, "row")
            if keyed is None:
                return None
        else:
            expected = f"{len(rows)} rows" if rows else "rows"
            self.problem(path, f"expected a list of {expected} ({rows.meaning if rows else 'rows'}) "
                               f"or an object of rows by label; found {_kind(value)}")
            return None
        n_rows = len(rows) if rows is not None else len(value)
        written = np.zeros((n_rows, len(cols) if cols is not None else 0), dtype=object)
        ok = True
        for index, key in keyed:
            row = self._entries(value[key], _index(path, key), cols, "column")
            if row is None:
                ok = False
            elif cols is not None:
                written[index] = row
        if not ok or cols is None:
            return None
        self.written[path] = written
        return _evaluated(written, self.values)

    def _entries(self, value: Any, path: str, axis: Axis | None, role: str) -> np.ndarray | None:
        """One row (role "column") or vector (role "entry") -> its entries as written, missing ones 0."""
        what = "numbers"
        if isinstance(value, list):
            if axis is not None and len(value) != len(axis):
                self.problem(path, f"{len(value)} {what}, expected {len(axis)} ({axis.meaning})")
                return None
            entries = [self.entry(entry, f"{path}[{i}]") for i, entry in enumerate(value)]
            if any(entry is None for entry in entries):
                return None
            written = np.empty(len(entries), dtype=object)
            written[:] = entries
            return written
        if isinstance(value, dict):
            if axis is None:
                return None  # the labels depend on something already reported as wrong
            keyed = self._keys(value, path, axis, role)
            if keyed is None:
                return None
            written = np.zeros(len(axis), dtype=object)
            ok = True
            for index, key in keyed:
                entry = self.entry(value[key], _join(path, key))
                ok = ok and entry is not None
                written[index] = entry
            return written if ok else None
        expected = f"a list of {len(axis)} {what} ({axis.meaning})" if axis else f"a list of {what}"
        self.problem(path, f"expected {expected} or an object of entries by label; found {_kind(value)}")
        return None

    def _keys(self, value: dict[str, Any], path: str, axis: Axis, role: str) -> list[tuple[int, str]] | None:
        """A sparse object's keys -> (index, key) pairs; unknown labels and entries given twice are problems."""
        keyed: list[tuple[int, str]] = []
        seen: dict[int, str] = {}
        ok = True
        for key in value:
            index = axis.find(key)
            if index is None:
                number = _as_index(key)
                found = f"{role} index {key} is out of range" if number is not None else f"unknown {role} label {key!r}"
                self.problem(_join(path, key), f"{found}; expected {axis.meaning}: {axis.describe()}")
                ok = False
            elif index in seen:
                self.problem(_join(path, key), f"{key!r} is the same entry as {seen[index]!r}, given twice")
                ok = False
            else:
                seen[index] = key
                keyed.append((index, key))
        return keyed if ok else None

    def entry(self, value: Any, path: str) -> float | int | str | None:
        """One entry as written, once it is known to evaluate; its number is in self.values."""
        number = self.number(value, path)
        if number is None:
            return None
        if isinstance(value, str):
            self.values[value] = number
        return value

    def linear(self, value: Any, path: str, rows: Axis | None, cols: Axis | None):
        """``{w: [n_in][n_out], b: [n_out]}``; a missing b means zeros."""
        spec = self.obj(value, path, LINEAR_KEYS)
        if spec is None or "w" not in spec:
            return None
        w = self.matrix(spec["w"], _join(path, "w"), rows, cols)
        if w is None:
            return None
        b_path = _join(path, "b")
        if "b" not in spec:
            self.written[b_path] = np.zeros(w.shape[1], dtype=object)
            return {"w": w, "b": np.zeros(w.shape[1])}
        b = self.vector(spec["b"], b_path, cols)
        return None if b is None else {"w": w, "b": b}

    def norm(self, value: Any, path: str, dims: Axis | None):
        spec = self.obj(value, path, NORM_KEYS)
        if spec is None or "g" not in spec:
            return None
        g = self.vector(spec["g"], _join(path, "g"), dims)
        b = self.vector(spec["b"], _join(path, "b"), dims) if "b" in spec else None
        if g is None or ("b" in spec and b is None):
            return None
        if b is None:
            self.written[_join(path, "b")] = np.zeros(len(g), dtype=object)
        return {"g": g, "b": np.zeros_like(g) if b is None else b}


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
        index = _as_index(key)
        return index if index is not None and index < len(self.labels) else None

    def describe(self) -> str:
        """The valid labels, runs folded: ``q0…q7, k0…k7, v0…v7, or an index 0…23``."""
        indices = f"0…{len(self.labels) - 1}" if len(self.labels) > 2 else ", ".join(map(str, range(len(self.labels))))
        if all(label == str(i) for i, label in enumerate(self.labels)):
            return indices
        return f"{fold_labels(self.labels)}, or an index {indices}"


def fold_labels(labels: tuple[str, ...] | list[str]) -> str:
    """``q0, q1, q2, k0`` -> ``q0…q2, k0``: runs of a prefix with consecutive numbers folded."""
    parts: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) > 2:
            parts.append(f"{run[0]}…{run[-1]}")
        else:
            parts.extend(run)
        run.clear()

    for label in labels:
        match = _NUMBERED.fullmatch(label)
        if run and match:
            last = _NUMBERED.fullmatch(run[-1])
            if last and last[1] == match[1] and int(last[2]) + 1 == int(match[2]):
                run.append(label)
                continue
        flush()
        run.append(label)
    flush()
    return ", ".join(parts)


_NUMBERED = re.compile(r"(.*?)(\d+)")


def _as_index(key: str) -> int | None:
    """ "3" -> 3; anything that is not a plain non-negative whole number -> None."""
    if key.isascii() and key.isdigit() and (key == "0" or not key.startswith("0")):
        return int(key)
    return None


def _evaluated(written: np.ndarray, values: dict) -> np.ndarray:
    """Entries as written -> float64, through the numbers the checker found for them."""
    flat = [values[entry] if isinstance(entry, str) else float(entry) for entry in written.ravel()]
    return np.array(flat, dtype=np.float64).reshape(written.shape)


def _index(path: str, key: int | str) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else _join(path, key)


_PATH_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def path_steps(path: str) -> list[str | int]:
    """``"blocks[0].attn.c_attn.w"`` -> ``["blocks", 0, "attn", "c_attn", "w"]``."""
    return [int(index) if index else name for name, index in _PATH_STEP.findall(path)]


def locate(tree: Any, path: str) -> Any:
    """What a parameter path names in a document or in ``Model.params``."""
    for step in path_steps(path):
        tree = tree[step]
    return tree


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def parse(doc: Any, source: str = "<weights>") -> tuple[Model | None, list[str]]:
    """Validate a parsed weight document; return the model (None if invalid) and every problem found."""
    check = _Checker()
    top = check.obj(doc, "", TOP_KEYS)
    if top is None:
        return None, check.problems

    if "format" in top and top["format"] != FORMAT:
        check.problem("format", f"expected {FORMAT!r}; found {_kind(top['format'])}")
    name = check.text(top.get("name", ""), "name") or ""
    description = check.text(top.get("description", ""), "description") or ""

    vocab = _vocab(check, top.get("vocab")) if "vocab" in top else None
    n_ctx = check.whole(top["n_ctx"], "n_ctx") if "n_ctx" in top else None
    n_embd = check.whole(top["n_embd"], "n_embd") if "n_embd" in top else None
    n_head = check.whole(top.get("n_head", 1), "n_head")
    if n_embd is not None and n_head is not None and n_embd % n_head:
        check.problem("n_head", f"n_embd {n_embd} is not divisible by n_head {n_head}")
        n_head = None

    _constants(check, top.get("constants", {}))
    dims = _dims(check, top.get("dims"), n_embd)
    example = _token_string(check, top.get("example"), "example", vocab)
    target = _token_string(check, top.get("target"), "target", vocab)

    n_layer = len(top["blocks"]) if isinstance(top.get("blocks"), list) else 0
    if vocab and n_ctx and n_embd and parameter_count(len(vocab), n_ctx, n_embd, n_layer) > MAX_PARAMETERS:
        size = parameter_count(len(vocab), n_ctx, n_embd, n_layer)
        check.problem("n_embd", f"{size:,} weights with n_embd {n_embd}, n_ctx {n_ctx} and {n_layer} blocks: "
                                f"more than handwired supports ({MAX_PARAMETERS:,})")
        return None, check.problems
    axes = _axes(vocab, n_ctx, n_embd, dims)
    params: dict[str, Any] = {}
    if "wte" in top:
        params["wte"] = check.matrix(top["wte"], "wte", axes.get("vocab"), axes.get("dims"))
    if "wpe" in top:
        params["wpe"] = check.matrix(top["wpe"], "wpe", axes.get("positions"), axes.get("dims"))
    blocks = top.get("blocks", [])
    if not isinstance(blocks, list):
        check.problem("blocks", f"expected a list of blocks; found {_kind(blocks)}")
        blocks = []
    params["blocks"] = [_block(check, block, f"blocks[{i}]", axes) for i, block in enumerate(blocks)]
    if "ln_f" in top:
        params["ln_f"] = check.norm(top["ln_f"], "ln_f", axes.get("dims"))

    if check.problems:
        return None, check.problems
    model = Model(
        source=source,
        vocab=tuple(vocab),
        n_ctx=n_ctx,
        n_embd=n_embd,
        n_head=n_head,
        dims=tuple(dims),
        params=params,
        name=name,
        description=description,
        constants=dict(check.constants),
        example=example,
        target=target,
        written=check.written,
        axes=_param_axes(check.written, axes),
        document=doc,
    )
    return model, []


def _vocab(check: _Checker, value: Any) -> list[str] | None:
    if not isinstance(value, list) or not value:
        check.problem("vocab", f"expected a list of single-character tokens such as [\"a\", \"b\"]; found {_kind(value)}")
        return None
    ok = True
    for i, token in enumerate(value):
        if not isinstance(token, str) or len(token) != 1:
            check.problem(f"vocab[{i}]", f"expected a single character; found {_kind(token)}")
            ok = False
        elif token in value[:i]:
            check.problem(f"vocab[{i}]", f"{token!r} appears twice")
            ok = False
    return value if ok else None


def _constants(check: _Checker, value: Any) -> None:
    if not isinstance(value, dict):
        check.problem("constants", f"expected an object of name: number; found {_kind(value)}")
        return
    for key, entry in value.items():
        path = f"constants.{key}"
        if not NAME_PATTERN.match(key):
            check.problem(path, "a constant's name must be letters, digits and _ and not start with a digit")
            continue
        # A constant may use the ones defined before it, e.g. {"Lg": 1024, "half": "Lg/2"}.
        number = check.number(entry, path)
        if number is not None:
            check.constants[key] = number


def _dims(check: _Checker, value: Any, n_embd: int | None) -> list[str] | None:
    if value is None:
        return [f"d{i}" for i in range(n_embd)] if n_embd else None
    if not isinstance(value, list) or (n_embd is not None and len(value) != n_embd):
        check.problem("dims", f"expected a list of {n_embd} labels (one per residual dim); found {_kind(value)}")
        return None
    return value if _labels_ok(check, value, "dims") else None


def _labels_ok(check: _Checker, labels: list[Any], path: str) -> bool:
    """Labels for an axis: non-empty strings, each once; one that is a number must be its own index."""
    for i, label in enumerate(labels):
        if not isinstance(label, str) or not label.strip():
            check.problem(f"{path}[{i}]", f"expected a non-empty label; found {_kind(label)}")
            return False
        if label in labels[:i]:
            check.problem(f"{path}[{i}]", f"{label!r} appears twice")
            return False
        number = _as_index(label)
        if number is not None and number != i:  # in a sparse matrix it would mean two things
            check.problem(f"{path}[{i}]", f"{label!r} is a number but labels entry {i}; "
                                          f"in a sparse matrix {label!r} would mean two things")
            return False
    return True


def _token_string(check: _Checker, value: Any, path: str, vocab: list[str] | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        check.problem(path, f"expected a non-empty string of vocabulary tokens; found {_kind(value)}")
        return None
    if vocab:
        for position, char in enumerate(value):
            if char not in vocab:
                check.problem(path, f"{char!r} (position {position}) is not in the vocabulary {', '.join(vocab)}")
                return None
    return value


def _axes(vocab, n_ctx, n_embd, dims) -> dict[str, Axis]:
    """The labelled axes of a model's matrices, as far as the file's header is valid."""
    axes: dict[str, Axis] = {}
    if vocab:
        axes["vocab"] = Axis("one per vocab token", tuple(vocab))
    if n_ctx:
        axes["positions"] = Axis("one per position, n_ctx", tuple(str(i) for i in range(n_ctx)))
    if n_embd and dims:
        axes["dims"] = Axis("one per residual dim", tuple(dims))
        numbered = lambda prefix: tuple(f"{prefix}{i}" for i in range(n_embd))  # noqa: E731
        axes["qkv"] = Axis("q, k, v: 3 × n_embd", numbered("q") + numbered("k") + numbered("v"))
        axes["z"] = Axis("one per attention output dim, heads concatenated", numbered("z"))
    return axes


def _param_axes(written: dict[str, np.ndarray], axes: dict[str, Axis]) -> dict[str, tuple[Axis, ...]]:
    """Each parameter's path -> the axes of its rows and columns (a vector: its one axis)."""
    result: dict[str, tuple[Axis, ...]] = {"wte": (axes["vocab"], axes["dims"]), "wpe": (axes["positions"], axes["dims"])}
    for path in written:
        if path in result:
            continue
        if ".attn.c_attn." in path:
            cols = axes["qkv"]
            rows = axes["dims"]
        elif ".attn.c_proj." in path:
            rows, cols = axes["z"], axes["dims"]
        elif ".mlp.c_fc." in path:
            rows, cols = axes["dims"], axes[path.split(".mlp.")[0] + ".mlp.hidden"]
        elif ".mlp.c_proj." in path:
            rows, cols = axes[path.split(".mlp.")[0] + ".mlp.hidden"], axes["dims"]
        else:  # LayerNorm g and b
            rows = cols = axes["dims"]
        result[path] = (rows, cols) if path.endswith(".w") else (cols,)
    return result


def _block(check: _Checker, value: Any, path: str, axes: dict[str, Axis]) -> dict[str, Any] | None:
    spec = check.obj(value, path, BLOCK_KEYS)
    if spec is None:
        return None
    block: dict[str, Any] = {}
    dims = axes.get("dims")
    attn = check.obj(spec.get("attn"), f"{path}.attn", ATTN_KEYS) if "attn" in spec else None
    if attn is not None:
        block["attn"] = {
            "c_attn": check.linear(attn["c_attn"], f"{path}.attn.c_attn", dims, axes.get("qkv")) if "c_attn" in attn else None,
            "c_proj": check.linear(attn["c_proj"], f"{path}.attn.c_proj", axes.get("z"), dims) if "c_proj" in attn else None,
        }
    for norm in ("ln_1", "ln_2"):
        if norm in spec:
            block[norm] = check.norm(spec[norm], f"{path}.{norm}", dims)
    if "mlp" in spec:
        mlp = check.obj(spec["mlp"], f"{path}.mlp", MLP_KEYS)
        if mlp is not None and "c_fc" in mlp and "c_proj" in mlp:
            hidden = _hidden(check, mlp, f"{path}.mlp")
            if hidden is not None:
                axes[f"{path}.mlp.hidden"] = hidden
            block["mlp"] = {
                "c_fc": check.linear(mlp["c_fc"], f"{path}.mlp.c_fc", dims, hidden),
                "c_proj": check.linear(mlp["c_proj"], f"{path}.mlp.c_proj", hidden, dims),
            }
    elif "ln_2" in spec:
        check.problem(f"{path}.ln_2", "given, but the block has no mlp for it to feed")
    return block


def _hidden(check: _Checker, mlp: dict[str, Any], path: str) -> Axis | None:
    """An MLP's hidden units: named by ``hidden`` (labels or a count), else as wide as a dense matrix says."""
    meaning = "one per hidden unit"
    value = mlp.get("hidden")
    if isinstance(value, list):
        if not _labels_ok(check, value, f"{path}.hidden"):
            return None
        if not value:
            check.problem(f"{path}.hidden", "expected at least one hidden unit; found an empty list")
            return None
        return Axis(meaning, tuple(value))
    if "hidden" in mlp:
        count = check.whole(value, f"{path}.hidden")
        return None if count is None else Axis(meaning, tuple(f"h{i}" for i in range(count)))
    fc_w = mlp["c_fc"].get("w") if isinstance(mlp["c_fc"], dict) else None
    proj_w = mlp["c_proj"].get("w") if isinstance(mlp["c_proj"], dict) else None
    if isinstance(fc_w, list) and fc_w and isinstance(fc_w[0], list):
        count = len(fc_w[0])  # a dense c_fc says how wide the hidden layer is
    elif isinstance(proj_w, list) and proj_w:
        count = len(proj_w)
    else:
        check.problem(path, "missing 'hidden': with sparse c_fc and c_proj, give the hidden units' labels "
                            "(e.g. \"hidden\": [\"and\", \"or\"]) or their number (\"hidden\": 4)")
        return None
    if count == 0:
        check.problem(f"{path}.c_fc.w", "rows with no numbers; expected at least one hidden unit")
        return None
    return Axis(meaning + ", as c_fc has columns", tuple(f"h{i}" for i in range(count)))


# ---------------------------------------------------------------- writing


def parameter_count(n_vocab: int, n_ctx: int, n_embd: int, n_layer: int) -> int:
    """Numbers in a model without MLPs: embeddings plus each block's c_attn and c_proj."""
    return (n_vocab + n_ctx) * n_embd + n_layer * (4 * n_embd * n_embd + 4 * n_embd)


def starter_document(vocab: str, n_ctx: int, n_embd: int, n_head: int = 1, n_layer: int = 1) -> dict[str, Any]:
    """An all-zero weight document that validates, in the sparse form: a blank to wire by hand."""
    tokens = list(dict.fromkeys(vocab))
    size = parameter_count(len(tokens), n_ctx, n_embd, n_layer)
    if size > MAX_PARAMETERS:
        raise HandwiredError(
            f"{size:,} weights: more than handwired supports ({MAX_PARAMETERS:,}); choose a smaller --embd, --ctx or --blocks"
        )
    example = "".join(tokens[i % len(tokens)] for i in range(n_ctx))
    return {
        "format": FORMAT,
        "name": "starter",
        "description": "All zeros: every token is equally likely until you wire it. Write only the non-zero "
        "entries, by label, e.g. \"wte\": {\"" + tokens[0] + "\": {\"d0\": 1}}.",
        "vocab": tokens,
        "n_ctx": n_ctx,
        "n_embd": n_embd,
        "n_head": n_head,
        "constants": {},
        "dims": [f"d{i}" for i in range(n_embd)],
        "example": example,
        "wte": {},
        "wpe": {},
        "blocks": [{"attn": {"c_attn": {"w": {}}, "c_proj": {"w": {}}}} for _ in range(n_layer)],
    }


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
            items = [f"{pad}{json.dumps(key, ensure_ascii=False)}: {render(item, indent + 1)}" for key, item in value.items()]
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
        raise HandwiredError(f"{path}: already exists; use --force to replace it")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise HandwiredError(f"{path}: folder {folder} does not exist")


def write_new(path: Path, text: str, force: bool = False) -> None:
    """Write a file atomically; refuse to replace an existing one unless ``force``."""
    check_writable(path, force)
    import tempfile  # here: only writing needs it, and every command starts faster without

    try:
        handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else ".")
    except OSError as error:  # a read-only folder
        raise HandwiredError(f"{path}: cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException as error:
        Path(temp).unlink(missing_ok=True)
        if isinstance(error, OSError):  # a full disk, a path that became a folder
            raise HandwiredError(f"{path}: cannot write: {error.strerror or error}") from None
        raise
