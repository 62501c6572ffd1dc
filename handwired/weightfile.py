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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from handwired.errors import HandwiredError
from handwired.expr import NAME_PATTERN, ExpressionError, evaluate

FORMAT = "handwired/1"
MAX_FILE_BYTES = 32 * 1024 * 1024
# Far beyond anything wired by hand; keeps a typo like n_embd 80000 from allocating gigabytes.
MAX_SIZE = 4096
DEFAULT_MODEL = "aab"

TOP_KEYS = {
    "format": True, "name": False, "description": False, "vocab": True, "n_ctx": True,
    "n_embd": True, "n_head": False, "constants": False, "dims": False, "example": False,
    "target": False, "wte": True, "wpe": True, "blocks": True, "ln_f": False,
}  # key -> required
BLOCK_KEYS = {"attn": True, "ln_1": False, "ln_2": False, "mlp": False}
ATTN_KEYS = {"c_attn": True, "c_proj": True}
MLP_KEYS = {"c_fc": True, "c_proj": True}
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


def bundled_dir() -> Path:
    """Where the bundled models are: inside the installed package, or weights/ in a checkout."""
    package = Path(__file__).resolve().parent  # a plain path: importlib.resources would cost every command ~3 ms
    packaged = package / "weights"
    return packaged if packaged.is_dir() else package.parent / "weights"


def bundled_models() -> dict[str, Path]:
    folder = bundled_dir()
    if not folder.is_dir():
        return {}
    return {path.stem: path for path in sorted(folder.glob("*.json"))}


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

    def vector(self, value: Any, path: str, length: int | None, meaning: str) -> np.ndarray | None:
        if not isinstance(value, list):
            self.problem(path, f"expected a list of {length or 'some'} numbers ({meaning}); found {_kind(value)}")
            return None
        if length is not None and len(value) != length:
            self.problem(path, f"{len(value)} numbers, expected {length} ({meaning})")
            return None
        entries = [self.number(entry, f"{path}[{i}]") for i, entry in enumerate(value)]
        if any(entry is None for entry in entries):
            return None
        return np.array(entries, dtype=np.float64)

    def matrix(
        self, value: Any, path: str, rows: int | None, cols: int | None, row_meaning: str, col_meaning: str
    ) -> np.ndarray | None:
        if not isinstance(value, list):
            self.problem(path, f"expected a list of {rows or 'some'} rows ({row_meaning}); found {_kind(value)}")
            return None
        if rows is not None and len(value) != rows:
            self.problem(path, f"{len(value)} rows, expected {rows} ({row_meaning})")
            return None
        if not value:
            self.problem(path, f"no rows, expected at least one ({row_meaning})")
            return None
        if cols is None and isinstance(value[0], list):
            cols = len(value[0])  # free width (an MLP's hidden size): the first row decides
        parsed = [self.vector(row, f"{path}[{i}]", cols, col_meaning) for i, row in enumerate(value)]
        if any(row is None for row in parsed):
            return None
        return np.array(parsed, dtype=np.float64).reshape(len(parsed), cols or 0)

    def linear(self, value: Any, path: str, n_in: int | None, n_out: int | None, in_meaning: str, out_meaning: str):
        """``{w: [n_in][n_out], b: [n_out]}``; a missing b means zeros."""
        spec = self.obj(value, path, LINEAR_KEYS)
        if spec is None or "w" not in spec:
            return None
        w = self.matrix(spec["w"], _join(path, "w"), n_in, n_out, in_meaning, out_meaning)
        if w is None:
            return None
        if "b" not in spec:
            return {"w": w, "b": np.zeros(w.shape[1])}
        b = self.vector(spec["b"], _join(path, "b"), w.shape[1], out_meaning)
        return None if b is None else {"w": w, "b": b}

    def norm(self, value: Any, path: str, n_embd: int | None):
        spec = self.obj(value, path, NORM_KEYS)
        if spec is None or "g" not in spec:
            return None
        g = self.vector(spec["g"], _join(path, "g"), n_embd, "one per residual dim")
        b = self.vector(spec["b"], _join(path, "b"), n_embd, "one per residual dim") if "b" in spec else None
        if g is None or ("b" in spec and b is None):
            return None
        return {"g": g, "b": np.zeros_like(g) if b is None else b}


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
    n_vocab = len(vocab) if vocab else None
    example = _token_string(check, top.get("example"), "example", vocab)
    target = _token_string(check, top.get("target"), "target", vocab)

    params: dict[str, Any] = {}
    if "wte" in top:
        params["wte"] = check.matrix(top["wte"], "wte", n_vocab, n_embd, "one per vocab token", "one per residual dim")
    if "wpe" in top:
        params["wpe"] = check.matrix(top["wpe"], "wpe", n_ctx, n_embd, "one per position, n_ctx", "one per residual dim")
    blocks = top.get("blocks", [])
    if not isinstance(blocks, list):
        check.problem("blocks", f"expected a list of blocks; found {_kind(blocks)}")
        blocks = []
    params["blocks"] = [_block(check, block, f"blocks[{i}]", n_embd) for i, block in enumerate(blocks)]
    if "ln_f" in top:
        params["ln_f"] = check.norm(top["ln_f"], "ln_f", n_embd)

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
    for i, label in enumerate(value):
        if not isinstance(label, str) or not label.strip():
            check.problem(f"dims[{i}]", f"expected a non-empty label; found {_kind(label)}")
            return None
        if label in value[:i]:
            check.problem(f"dims[{i}]", f"{label!r} appears twice")
            return None
    return value


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


def _block(check: _Checker, value: Any, path: str, n_embd: int | None) -> dict[str, Any] | None:
    spec = check.obj(value, path, BLOCK_KEYS)
    if spec is None:
        return None
    block: dict[str, Any] = {}
    width = 3 * n_embd if n_embd else None
    attn = check.obj(spec.get("attn"), f"{path}.attn", ATTN_KEYS) if "attn" in spec else None
    if attn is not None:
        block["attn"] = {
            "c_attn": check.linear(attn.get("c_attn"), f"{path}.attn.c_attn", n_embd, width,
                                   "one per residual dim", "q, k, v: 3 × n_embd")
            if "c_attn" in attn else None,
            "c_proj": check.linear(attn.get("c_proj"), f"{path}.attn.c_proj", n_embd, n_embd,
                                   "one per attention output dim", "one per residual dim")
            if "c_proj" in attn else None,
        }
    for norm in ("ln_1", "ln_2"):
        if norm in spec:
            block[norm] = check.norm(spec[norm], f"{path}.{norm}", n_embd)
    if "mlp" in spec:
        mlp = check.obj(spec["mlp"], f"{path}.mlp", MLP_KEYS)
        if mlp is not None and "c_fc" in mlp and "c_proj" in mlp:
            c_fc = check.linear(mlp["c_fc"], f"{path}.mlp.c_fc", n_embd, None, "one per residual dim", "one per hidden unit")
            hidden = c_fc["w"].shape[1] if c_fc else None
            c_proj = check.linear(mlp["c_proj"], f"{path}.mlp.c_proj", hidden, n_embd,
                                  "one per hidden unit, as c_fc has columns", "one per residual dim")
            block["mlp"] = {"c_fc": c_fc, "c_proj": c_proj}
    elif "ln_2" in spec:
        check.problem(f"{path}.ln_2", "given, but the block has no mlp for it to feed")
    return block


# ---------------------------------------------------------------- writing


def starter_document(vocab: str, n_ctx: int, n_embd: int, n_head: int = 1, n_layer: int = 1) -> dict[str, Any]:
    """A zero-filled weight document that validates: a blank to wire by hand."""
    zeros = lambda rows, cols: [[0] * cols for _ in range(rows)]  # noqa: E731
    tokens = list(dict.fromkeys(vocab))
    entries = (len(tokens) + n_ctx) * n_embd + n_layer * (4 * n_embd * n_embd + 4 * n_embd)
    if entries * len("0, ") > MAX_FILE_BYTES:
        raise HandwiredError(
            f"{entries:,} weights would make a file larger than handwired reads ({MAX_FILE_BYTES:,} bytes); "
            "choose a smaller --embd, --ctx or --blocks"
        )
    example = "".join(tokens[i % len(tokens)] for i in range(n_ctx))
    return {
        "format": FORMAT,
        "name": "starter",
        "description": "All zeros: every token is equally likely until you wire it.",
        "vocab": tokens,
        "n_ctx": n_ctx,
        "n_embd": n_embd,
        "n_head": n_head,
        "constants": {},
        "dims": [f"d{i}" for i in range(n_embd)],
        "example": example,
        "wte": zeros(len(tokens), n_embd),
        "wpe": zeros(n_ctx, n_embd),
        "blocks": [
            {
                "attn": {
                    "c_attn": {"w": zeros(n_embd, 3 * n_embd), "b": [0] * (3 * n_embd)},
                    "c_proj": {"w": zeros(n_embd, n_embd), "b": [0] * n_embd},
                }
            }
            for _ in range(n_layer)
        ],
    }


def dumps(doc: Any) -> str:
    """JSON with each matrix row on one line, so a file reads like the matrices it holds."""

    def inline(value: Any) -> bool:
        return not isinstance(value, (list, dict))

    def render(value: Any, indent: int) -> str:
        pad = "  " * (indent + 1)
        if isinstance(value, dict):
            if not value:
                return "{}"
            items = [f"{pad}{json.dumps(key, ensure_ascii=False)}: {render(item, indent + 1)}" for key, item in value.items()]
            return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
        if isinstance(value, list):
            if all(inline(item) for item in value):
                return "[" + ", ".join(json.dumps(item, ensure_ascii=False) for item in value) + "]"
            return "[\n" + ",\n".join(pad + render(item, indent + 1) for item in value) + "\n" + "  " * indent + "]"
        return json.dumps(value, ensure_ascii=False)

    return render(doc, 0) + "\n"


def write_new(path: Path, text: str, force: bool = False) -> None:
    """Write a file atomically; refuse to replace an existing one unless ``force``."""
    if path.exists() and not force:
        raise HandwiredError(f"{path}: already exists; use --force to replace it")
    if path.is_dir():
        raise HandwiredError(f"{path}: is a folder")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise HandwiredError(f"{path}: folder {folder} does not exist")
    import tempfile  # here: only writing needs it, and every command starts faster without

    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
