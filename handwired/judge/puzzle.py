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
from handwired.weightfile.checker import Checker, describe, known
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
    """Validate a parsed statement; return the puzzle (None if invalid) and every problem found."""
    check = Checker()
    if isinstance(doc, dict):
        doc = {key: value for key, value in doc.items() if not key.startswith(COMMENT)}
    top = check.obj(doc, "", STATEMENT_KEYS)
    if top is None:
        return None, check.problems
    if "format" in top and top["format"] != FORMAT:
        check.problem("format", f"expected {FORMAT!r}; found {describe(top['format'])}")
    name = check.text(top["name"], "name") if "name" in top else None
    if named_by_file and name is not None and name != path.stem:
        check.problem("name", f"expected {path.stem!r}, the file's name; found {describe(name)}")
    level = check.whole(top["level"], "level") if "level" in top else None
    texts = {key: check.text(top[key], key) for key in ("title", "summary", "story") if key in top}
    vocab = check.vocab(top["vocab"]) if "vocab" in top else None
    n_ctx = check.whole(top["n_ctx"], "n_ctx") if "n_ctx" in top else None
    caps = _caps(check, top["caps"]) if "caps" in top else None
    rule = rule_from_spec(top["rule"], vocab, check) if vocab is not None and "rule" in top else None
    domain = None
    if "domain" in top and vocab is not None:
        domain = domain_from_spec(top["domain"], tuple(vocab), rule, n_ctx, check)
    elif vocab is not None and n_ctx is not None and every_length(len(vocab), n_ctx) > MAX_CONTEXTS:
        check.problem("n_ctx", f"{how_many(every_length(len(vocab), n_ctx))} contexts, more than the {MAX_CONTEXTS:,} "
                               "a check enumerates")
    examples = _examples(check, top.get("examples"), vocab, n_ctx, domain) if "examples" in top else None
    hints = check.strings(top["hints"], "hints") if "hints" in top else None
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


def _examples(check: Checker, value: Any, vocab, n_ctx, domain: Domain | None) -> list[str] | None:
    """Contexts to show with the rule's answers: strings of vocabulary tokens, in the domain when there is one."""
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
    n_embd, n_head, n_layer = (check.whole(spec[key], f"caps.{key}") for key in ("n_embd", "n_head", "n_layer"))
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
    if not re.fullmatch(r"[\w.-]+", name):
        raise HandwiredError(f"{name!r}: a puzzle's name is letters, digits, '_', '-' and '.'; "
                             "choose a file name made of those")
    return TEMPLATE.read_text(encoding="utf-8").replace('"name": "NAME"', f'"name": "{name}"')


def starter(puzzle: Puzzle, reference: str | None = None) -> dict[str, Any]:
    """A weight document at the puzzle's caps, all zeros: it fits, and fails every judged context.

    ``reference`` is how the file names its puzzle (see catalogue.puzzle_reference); default: the puzzle's name.
    """
    caps = puzzle.caps
    doc = starter_document("".join(puzzle.vocab), puzzle.n_ctx, caps.n_embd, caps.n_head, caps.n_layer)
    doc.pop("name")
    doc = {"format": doc.pop("format"), "name": puzzle.name, "puzzle": reference or puzzle.name, **doc}
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
