"""A puzzle: a rule for the next token, a vocabulary, a context length and caps on the architecture.

A puzzle is a statement file (format ``handwired-puzzle/1``), read with the
public checker, so a mistake in it is one line naming the JSON path; its schema
and limits are :mod:`.statement`'s, shared with the list's light reader. Bundled
statements carry their reference solution's figures as ``par``: data, proven
by the test suite, never computed at run time.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from handwired.errors import HandwiredError
from handwired.judge.checking.contexts import every_length, how_many
from handwired.judge.game.scores import Score
from handwired.judge.game.statement import (
    MAX_CONTEXTS,
    MAX_EXAMPLES,
    MAX_N_CTX,
    MAX_VOCAB,
    NAME,
    Caps,
    read_caps,
    read_hints,
    read_level,
    read_name,
    read_scores,
    read_text_field,
    statement_top,
)
from handwired.judge.kinds.domains import Domain, TooLargeToWalk, domain_from_spec
from handwired.judge.kinds.rules import DECIDED, OUT_OF_DOMAIN, Rule
from handwired.judge.kinds.spec import rule_from_spec
from handwired.weightfile.checker import Checker, known
from handwired.weightfile.jsonfile import parse_json, read_text
from handwired.weightfile.starter import starter_document

MLP_WIDTH = 4  # the starter's MLP has 4 × n_embd hidden units, as GPT-2's


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
        """How many contexts are judged: a domain too large to walk counted by its cases when its rule can say over
        them (it is proved by cases), else TooLargeToWalk, naming the statement."""
        if self.domain is None:
            return every_length(len(self.vocab), self.n_ctx)
        try:
            return self.domain.size
        except TooLargeToWalk as error:
            counted = self.by_cases_size()
            if counted is None:
                raise TooLargeToWalk(f"{self.source}: {error.problem}") from None
            return counted

    def by_cases_size(self) -> int | None:
        """The contexts of a domain proved by cases, counted by its cases; None when its rule cannot say over them."""
        # loaded here: only a domain too large to walk needs the proof by cases
        from handwired.judge.checking.cases import size, space_of
        from handwired.judge.checking.proving import can_say

        space = space_of(self.domain, len(self.vocab), self.n_ctx)
        return size(space) if can_say(self.rule, space) else None


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
    top = statement_top(doc, check)
    if top is None:
        return None, check.problems
    name = read_name(check, top["name"], path if named_by_file else None) if "name" in top else None
    level = read_level(check, top["level"]) if "level" in top else None
    texts = {key: read_text_field(check, top[key], key) for key in ("title", "summary", "story") if key in top}
    vocab = check.vocab(top["vocab"]) if "vocab" in top else None
    if vocab is not None and len(vocab) > MAX_VOCAB:
        check.problem("vocab", f"{len(vocab):,} tokens, more than a puzzle may have (at most {MAX_VOCAB})")
        vocab = None
    elif vocab is not None and len(vocab) < 2:
        check.problem("vocab", f"{len(vocab)} token: a puzzle needs at least two (with one, every next token is right "
                               "and nothing is judged)")
        vocab = None
    n_ctx = check.whole(top["n_ctx"], "n_ctx", 1, MAX_N_CTX) if "n_ctx" in top else None
    caps = read_caps(check, top["caps"]) if "caps" in top else None
    rule = rule_from_spec(top["rule"], vocab, check) if vocab is not None and "rule" in top else None
    domain = None
    if "domain" in top and vocab is not None:
        domain = domain_from_spec(top["domain"], tuple(vocab), rule, n_ctx, check)
    elif vocab is not None and n_ctx is not None and every_length(len(vocab), n_ctx) > MAX_CONTEXTS:
        check.problem("n_ctx", f"{how_many(every_length(len(vocab), n_ctx))} contexts, more than the {MAX_CONTEXTS:,} "
                               "a check enumerates")
    examples = _examples(check, top.get("examples"), vocab, n_ctx, domain) if "examples" in top else None
    hints = read_hints(check, top["hints"]) if "hints" in top else None
    scores = read_scores(check, top)
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
