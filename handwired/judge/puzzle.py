"""A puzzle: a rule for the next token, a vocabulary, a context length and caps on the architecture.

A puzzle is a statement file (format ``handwired-puzzle/1``), read with the
public checker, so a mistake in it is one line naming the JSON path. Bundled
statements carry their reference solution's figures as ``par``: data, proven
by the test suite, never computed at run time.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from handwired.errors import HandwiredError
from handwired.judge.contexts import every_length, how_many
from handwired.judge.domains import Domain, domain_from_spec
from handwired.judge.kinds import rule_from_spec
from handwired.judge.rules import DECIDED, OUT_OF_DOMAIN, Rule
from handwired.judge.scores import Score, read_score
from handwired.weightfile.checker import Checker, describe, join, known
from handwired.weightfile.jsonfile import parse_json, read_text
from handwired.weightfile.parse import MAX_PARAMETERS, parameter_count
from handwired.weightfile.starter import starter_document

FORMAT = "handwired-puzzle/1"
STATEMENT_KEYS = {
    "format": True, "name": True, "level": True, "title": True, "summary": True, "story": True, "vocab": True,
    "n_ctx": True, "caps": True, "rule": True, "domain": False, "examples": True, "hints": True, "par": False,
    "record": False,
}  # key -> required; a key starting with "#" is a comment
COMMENT = "#"
CAPS_KEYS = {"n_embd": True, "n_head": True, "n_layer": True, "mlp": True}
MLP_WIDTH = 4  # the starter's MLP has 4 × n_embd hidden units, as GPT-2's
MAX_CONTEXTS = 100_000_000  # judged contexts a statement may ask for: an exhaustive check's sanity bound
# What a statement may hold, checked before anything is built from it: far beyond any puzzle's needs (the bundled
# ones use at most 12 tokens, n_ctx 9, 7 examples, 4 hints of 500 characters), small enough that nothing a stranger
# writes within them takes long to read, show, start or judge.
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


@dataclass(frozen=True)
class Puzzle:
    name: str
    level: int
    title: str
    summary: str
    story: str
    vocab: tuple[str, ...]
    n_ctx: int
    caps: Caps
    rule_spec: dict[str, Any]
    rule: Rule
    examples: tuple[str, ...]
    hints: tuple[str, ...]
    source: Path
    domain: Domain | None = None  # the contexts judged; None: every string of length 1…n_ctx
    par: Score | None = None  # the reference solution's score, as the statement states it
    record: Score | None = None  # the leanest answer the project knows, as the statement states it
    ref: str = ""  # how a command names it: a bundled puzzle's name, or the path of a statement someone wrote
    key: str = ""  # what the player's progress is kept under: the name, and for a written one its content's hash

    @property
    def bundled(self) -> bool:
        """Whether it came with handwired (and so has a reference solution), not from a statement someone wrote."""
        return self.key == self.name

    @property
    def answer_file(self) -> str:
        """Where start writes an answer and check looks for it: NAME.json, or NAME-answer.json for a written one
        (beside its statement NAME.json)."""
        return f"{self.name}.json" if self.bundled else f"{self.name}-answer.json"

    @property
    def n_contexts(self) -> int:
        """How many contexts are judged."""
        return self.domain.size if self.domain is not None else every_length(len(self.vocab), self.n_ctx)


def read_statement(path: Path, named_by_file: bool = False) -> Puzzle:
    """Read and validate a statement file; raise HandwiredError with the first problem.

    A bundled statement's name must be its file's (the catalogue finds it by that name); one someone wrote may
    be called anything, as its path is how commands find it.
    """
    return statement_from_text(read_text(path), path, named_by_file)


def statement_from_text(text: str, path: Path, named_by_file: bool = False) -> Puzzle:
    """As :func:`read_statement`, from the file's text already read (to hash the very text it parsed)."""
    puzzle, problems = parse_statement(parse_json(text, str(path)), path, named_by_file)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise HandwiredError(f"{path}: {problems[0]}{more}")
    return known(puzzle)


def parse_statement(doc: Any, path: Path, named_by_file: bool = True) -> tuple[Puzzle | None, list[str]]:
    """Validate a parsed statement; return the puzzle (None if invalid) and every problem found.

    A document that is no statement at all (no ``format`` of a statement) is refused before any of its content
    is looked at, so no message ever quotes a file that was not meant as one; a statement's sizes are bounded
    before anything is built from it.
    """
    check = Checker()
    not_one = _not_a_statement(doc)
    if not_one:
        return None, [not_one]
    doc = {key: value for key, value in doc.items() if not key.startswith(COMMENT)}
    too_large = _too_large(doc)
    if too_large:
        return None, [too_large]
    top = check.obj(doc, "", STATEMENT_KEYS)
    if top is None:  # never: it is an object
        return None, check.problems
    name = _name(check, top["name"], path if named_by_file else None) if "name" in top else None
    level = check.whole(top["level"], "level") if "level" in top else None
    texts = {key: _text(check, top[key], key) for key in ("title", "summary", "story") if key in top}
    vocab = check.vocab(top["vocab"]) if "vocab" in top else None
    if vocab is not None and len(vocab) > MAX_VOCAB:
        check.problem("vocab", f"{len(vocab):,} tokens, more than a puzzle may have (at most {MAX_VOCAB})")
        vocab = None
    n_ctx = check.whole(top["n_ctx"], "n_ctx", 1, MAX_N_CTX) if "n_ctx" in top else None
    caps = _caps(check, top["caps"]) if "caps" in top else None
    rule = rule_from_spec(top["rule"], vocab, check) if vocab is not None and "rule" in top else None
    domain = None
    if "domain" in top and vocab is not None:
        domain = domain_from_spec(top["domain"], tuple(vocab), rule, n_ctx, check)
    elif vocab is not None and n_ctx is not None and every_length(len(vocab), n_ctx) > MAX_CONTEXTS:
        check.problem("n_ctx", f"{how_many(every_length(len(vocab), n_ctx))} contexts, more than the {MAX_CONTEXTS:,} "
                               "a check enumerates")
    examples = _examples(check, top.get("examples"), vocab, n_ctx, domain) if "examples" in top else None
    hints = _hints(check, top["hints"]) if "hints" in top else None
    scores = {key: read_score(check, top[key], key) for key in ("par", "record") if key in top}
    if check.problems:
        return None, check.problems
    puzzle = Puzzle(
        name=known(name), level=known(level), title=known(texts["title"]), summary=known(texts["summary"]),
        story=known(texts["story"]), vocab=tuple(known(vocab)), n_ctx=known(n_ctx), caps=known(caps),
        rule_spec=top["rule"], rule=known(rule), examples=tuple(known(examples)), hints=tuple(known(hints)),
        source=path, domain=domain, par=scores.get("par"), record=scores.get("record"),
    )
    return puzzle, []


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


def _name(check: Checker, value: Any, path: Path | None) -> str | None:
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


def _text(check: Checker, value: Any, key: str) -> str | None:
    text, most = check.text(value, key), MAX_TEXTS.get(key, MAX_TEXT)
    if text is not None and len(text) > most:
        check.problem(key, f"{len(text):,} characters, more than it may have (at most {most:,})")
        return None
    return text


def _hints(check: Checker, value: Any) -> list[str] | None:
    if isinstance(value, list) and len(value) > MAX_HINTS:
        check.problem("hints", f"{len(value):,} hints, more than a puzzle may have (at most {MAX_HINTS})")
        return None
    return check.strings(value, "hints")


def _examples(check: Checker, value: Any, vocab, n_ctx, domain: Domain | None) -> list[str] | None:
    """Contexts to show with the rule's answers: strings of vocabulary tokens, in the domain when there is one."""
    if isinstance(value, list) and len(value) > MAX_EXAMPLES:
        check.problem("examples", f"{len(value):,} examples, more than a puzzle may show (at most {MAX_EXAMPLES})")
        return None
    if check.strings(value, "examples") is None:
        return None
    examples = [check.tokens(example, f"examples[{i}]", vocab, n_ctx) for i, example in enumerate(value)]
    if domain is not None and vocab is not None:
        for i, example in enumerate(examples):
            if example is not None and not domain.holds([vocab.index(t) for t in example]):
                check.problem(f"examples[{i}]", f"{example!r} is not one of the domain's contexts")
    read = [example for example in examples if example is not None]
    return read if len(read) == len(examples) else None  # one that could not be read is a problem already


def _caps(check: Checker, value: Any) -> Caps | None:
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


TEMPLATE = Path(__file__).resolve().parent / "template.json"


def template(name: str) -> str:
    """A statement to start from (``puzzles new``): a small puzzle that plays, every part commented."""
    if not NAME.fullmatch(name):
        raise HandwiredError(f"{name!r}: a puzzle's name is letters, digits, '_' and '-', at most 64 of them, the "
                             "first a letter or digit; "
                             "choose a file name made of those")
    return TEMPLATE.read_text(encoding="utf-8").replace('"name": "NAME"', f'"name": "{name}"')


def starter(puzzle: Puzzle, reference: str | None = None) -> dict[str, Any]:
    """A weight document at the puzzle's caps, all zeros: it fits, and fails every judged context.

    ``reference`` is how the file names its puzzle (see catalogue.puzzle_reference); default: a bundled puzzle's
    name; a statement someone wrote is named only by a reference (none: the file names no puzzle).
    """
    caps = puzzle.caps
    doc = starter_document("".join(puzzle.vocab), puzzle.n_ctx, caps.n_embd, caps.n_head, caps.n_layer)
    doc.pop("name")
    named = reference or (puzzle.name if puzzle.bundled else None)
    doc = {"format": doc.pop("format"), "name": puzzle.name, **({"puzzle": named} if named else {}), **doc}
    doc["description"] = f"A start on puzzle {puzzle.name!r}: {puzzle.summary} " + doc["description"]
    doc["example"] = max(puzzle.examples, key=len)
    if puzzle.rule_spec.get("kind") == "pattern":
        doc["target"] = puzzle.rule_spec["pattern"]
    if caps.mlp:
        for block in doc["blocks"]:
            width = MLP_WIDTH * caps.n_embd if caps.hidden is None else min(MLP_WIDTH * caps.n_embd, caps.hidden)
            block["mlp"] = {"hidden": width, "c_fc": {"w": {}}, "c_proj": {"w": {}}}
    return doc


@dataclass(frozen=True)
class Answer:
    context: str
    status: int  # DECIDED, AMBIGUOUS or OUT_OF_DOMAIN
    tokens: tuple[str, ...]  # the acceptable next tokens when decided; the candidates when ambiguous

    def text(self) -> str:
        if self.status == DECIDED:
            return " or ".join(self.tokens)
        if self.status == OUT_OF_DOMAIN:
            return "out of domain (not judged)"
        return f"ambiguous: {' or '.join(self.tokens)} (not judged)" if self.tokens else "ambiguous (not judged)"


def answer(puzzle: Puzzle, context: str) -> Answer:
    """What the puzzle's rule says follows one context; a context outside its domain is not judged."""
    ids = np.array([[puzzle.vocab.index(token) for token in context]])  # [1, n_seq]
    if puzzle.domain is not None and not puzzle.domain.holds(list(ids[0])):
        return Answer(context, OUT_OF_DOMAIN, ())
    judgement = puzzle.rule.judge(ids)
    tokens = tuple(puzzle.vocab[i] for i in np.flatnonzero(judgement.acceptable[0]))
    return Answer(context, int(judgement.status[0]), tokens)
