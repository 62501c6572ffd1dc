"""A puzzle statement's schema: its format, its keys and its limits, and the readers of the parts that need no
rule or domain.

Both readers of a statement use it, so there is one source of truth for what a statement may hold: the whole
reader (:mod:`.puzzle`: the rule, the domain, the examples, for show, start and check) and the list's light one
(:mod:`.listing`: only what the list shows, without loading the rule and domain machinery). The limits are far
beyond any puzzle's needs (the bundled ones use at most 12 tokens, n_ctx 9, 7 examples, 4 hints of 500
characters), small enough that nothing a stranger writes within them takes long to read, show, start or judge.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from handwired.judge.game.scores import Score, read_score
from handwired.weightfile.checker import Checker, describe, join
from handwired.weightfile.sizing import MAX_PARAMETERS, parameter_count

FORMAT = "handwired-puzzle/1"
STATEMENT_KEYS = {
    "format": True, "name": True, "level": True, "title": True, "summary": True, "story": True, "vocab": True,
    "n_ctx": True, "caps": True, "rule": True, "domain": False, "examples": True, "hints": True, "par": False,
    "record": False,
}  # key -> required; a key starting with "#" is a comment
COMMENT = "#"
CAPS_KEYS = {"n_embd": True, "n_head": True, "n_layer": True, "mlp": True}
MAX_CONTEXTS = 100_000_000  # judged contexts a statement may ask for: an exhaustive check's sanity bound
# a statement's name: a file name in any folder, never a path, nor an option on a command line ("-h-answer.json")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
MAX_VOCAB = 128  # tokens
MAX_N_CTX = 256  # positions
MAX_CAPS = {"n_embd": 1024, "n_head": 64, "n_layer": 64}
MAX_EXAMPLES = 64
MAX_HINTS = 100
MAX_TEXTS = {"title": 100, "summary": 300}  # characters, one line each
MAX_TEXT = 10_000  # characters of any other string: the story, a hint, a rule's or a domain's parameter
MAX_VALUES = 10_000  # values of every kind in the whole document
MAX_KEY = 100  # characters of a key (a misspelt one is quoted in its error)


@dataclass(frozen=True)
class Caps:
    n_embd: int  # at most
    n_head: int  # at most
    n_layer: int  # blocks, at most
    mlp: bool  # whether a block may have an MLP
    hidden: int | None = None  # an MLP's hidden units, at most; None: no cap beyond the file format's

    def text(self) -> str:
        mlp = "no MLP" if not self.mlp else "MLP allowed" if self.hidden is None else f"MLP hidden ≤ {self.hidden}"
        return f"n_embd ≤ {self.n_embd}, heads ≤ {self.n_head}, blocks ≤ {self.n_layer}, {mlp}"


def statement_top(doc: Any, check: Checker) -> dict[str, Any] | None:
    """The statement's top-level object, its comments left out, with its keys checked; None, the problem recorded
    in ``check``, when it is no statement or is larger than a statement may be.

    A document that is no statement at all (no ``format`` of a statement) is refused before any of its content
    is looked at, so no message ever quotes a file that was not meant as one; a statement's sizes are bounded
    before anything is built from it.
    """
    not_one = _not_a_statement(doc)
    if not_one:
        check.problem("", not_one)
        return None
    doc = {key: value for key, value in doc.items() if not key.startswith(COMMENT)}
    too_large = _too_large(doc)
    if too_large:
        check.problem("", too_large)
        return None
    return check.obj(doc, "", STATEMENT_KEYS)


def _not_a_statement(doc: Any) -> str | None:
    """Why ``doc`` is no statement at all, in words that quote nothing of it; None if it says it is one."""
    if not isinstance(doc, dict):
        found = "a list" if isinstance(doc, list) else "a string" if isinstance(doc, str) else "a JSON value"
        return f"expected a puzzle statement, an object with \"format\": {FORMAT!r}; found {found}"
    if "format" not in doc:
        return f"(top level): missing 'format': expected a puzzle statement, with \"format\": {FORMAT!r}"
    if doc["format"] != FORMAT:
        named = isinstance(doc["format"], str) and re.fullmatch(r"handwired[\w-]*/\d+", doc["format"])
        found = f"the string {doc['format']!r}" if named else "something else"
        return f"format: expected {FORMAT!r}; found {found}: this is not a puzzle statement"
    return None


def _too_large(doc: dict) -> str | None:
    """The first value past the sizes a statement may hold (MAX_VALUES in all, MAX_TEXT characters a string, MAX_KEY
    a key), by its JSON path; None when the whole document is within them. Looked at before anything is built."""
    pending: list[tuple[str, Any]] = [("", doc)]
    seen = 0
    while pending:
        path, value = pending.pop()
        seen += 1
        if seen > MAX_VALUES:
            return f"more than {MAX_VALUES:,} values: far more than a puzzle statement holds"
        if isinstance(value, str) and len(value) > MAX_TEXT:
            return f"{path}: {len(value):,} characters, more than a statement's text may have (at most {MAX_TEXT:,})"
        if isinstance(value, dict):
            long_key = next((key for key in value if len(key) > MAX_KEY), None)
            if long_key is not None:
                return f"{path or '(top level)'}: a key of {len(long_key):,} characters (at most {MAX_KEY})"
            pending.extend((join(path, str(key)), item) for key, item in value.items())
        elif isinstance(value, list):
            pending.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
    return None


def read_name(check: Checker, value: Any, path: Path | None) -> str | None:
    """A statement's name: a plain name (letters, digits, '-' and '_'), as a file name is made of it; a bundled
    statement's is its file's (``path``)."""
    name = check.text(value, "name")
    if name is not None and not NAME.fullmatch(name):
        check.problem("name", "expected a plain name of letters, digits, '-' and '_', at most 64 of them, the first a "
                              f"letter or digit, such as \"mirror\"; found {describe(name)}")
        return None
    if path is not None and name is not None and name != path.stem:
        check.problem("name", f"expected {path.stem!r}, the file's name; found {describe(name)}")
    return name


def read_text_field(check: Checker, value: Any, key: str) -> str | None:
    """The title, the summary (one line each) or the story, within its length."""
    text, most = check.text(value, key), MAX_TEXTS.get(key, MAX_TEXT)
    if text is not None and len(text) > most:
        check.problem(key, f"{len(text):,} characters, more than it may have (at most {most:,})")
        return None
    return text


def read_level(check: Checker, value: Any) -> int | None:
    return check.whole(value, "level")


def read_scores(check: Checker, top: dict[str, Any]) -> dict[str, Score | None]:
    """The statement's ``par`` and ``record``, those it gives."""
    return {key: read_score(check, top[key], key) for key in ("par", "record") if key in top}


def read_hints(check: Checker, value: Any) -> list[str] | None:
    if isinstance(value, list) and len(value) > MAX_HINTS:
        check.problem("hints", f"{len(value):,} hints, more than a puzzle may have (at most {MAX_HINTS})")
        return None
    return check.strings(value, "hints")


def read_caps(check: Checker, value: Any) -> Caps | None:
    spec = check.obj(value, "caps", CAPS_KEYS)
    if spec is None or any(key not in spec for key in CAPS_KEYS):
        return None
    n_embd, n_head, n_layer = (check.whole(spec[key], f"caps.{key}", 1, MAX_CAPS[key])
                               for key in ("n_embd", "n_head", "n_layer"))
    mlp, hidden = _mlp_cap(check, spec["mlp"])
    if n_embd is None or n_head is None or n_layer is None or mlp is None:
        return None
    if n_embd % n_head:
        check.problem("caps", f"n_embd {n_embd} is not divisible by n_head {n_head}, so no starter fits both caps")
        return None
    size = parameter_count(0, 0, n_embd, n_layer)
    if size > MAX_PARAMETERS:
        check.problem("caps", f"{size:,} weights at n_embd {n_embd} with {n_layer} blocks: more than a weight file "
                              f"may hold ({MAX_PARAMETERS:,})")
        return None
    return Caps(n_embd, n_head, n_layer, mlp, hidden)


def _mlp_cap(check: Checker, value: Any) -> tuple[bool | None, int | None]:
    """``"mlp"``: false (no MLP), true (an MLP allowed), or a number (allowed, with at most that many hidden units)."""
    if isinstance(value, bool):
        return value, None
    if not isinstance(value, (int, float)):
        check.problem("caps.mlp", "expected true, false or the largest number of hidden units; "
                                  f"found {describe(value)}")
        return None, None
    hidden = check.whole(value, "caps.mlp")
    return (None, None) if hidden is None else (True, hidden)
