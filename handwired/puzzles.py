"""Puzzles: a rule for the next token, a vocabulary, a context length and caps on the architecture.

A puzzle is a statement file (format ``handwired-puzzle/1``) in the bundled
``puzzles/`` folder, with a hand-wired reference solution beside it in
``puzzles/solutions/``. A player's weight file must fit the puzzle (the same
vocab in the same order, the same ``n_ctx``, ``n_embd``, heads and blocks at
most the caps, an MLP only where allowed) and is then judged on every context
of length 1…n_ctx by the puzzle's rule, through :mod:`handwired.check`.

A solved puzzle gets a :class:`Score`; the best score is the one with the
fewest non-zero parameters, then the narrowest residual stream, then the
fewest blocks, then the fewest heads, then the largest margin.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from handwired import __version__
from handwired import check as checking
from handwired.errors import HandwiredError
from handwired.rules import DECIDED, OUT_OF_DOMAIN, Rule, rule_from_spec
from handwired.weightfile import (
    MAX_SIZE, Model, _Checker, _kind, _vocab, bundled_folder, json_files, load, read_json, starter_document,
)

FORMAT = "handwired-puzzle/1"
STATEMENT_KEYS = {
    "format": True, "name": True, "level": True, "title": True, "summary": True, "story": True, "vocab": True,
    "n_ctx": True, "caps": True, "rule": True, "examples": True, "hints": True,
}  # key -> required
CAPS_KEYS = {"n_embd": True, "n_head": True, "n_layer": True, "mlp": True}
FOLDER_VARIABLE = "HANDWIRED_PUZZLES"
MLP_WIDTH = 4  # the starter's MLP has 4 × n_embd hidden units, as GPT-2's


@dataclass(frozen=True)
class Caps:
    n_embd: int  # at most
    n_head: int  # at most
    n_layer: int  # blocks, at most
    mlp: bool  # whether a block may have an MLP

    def text(self) -> str:
        return (f"n_embd ≤ {self.n_embd}, heads ≤ {self.n_head}, blocks ≤ {self.n_layer}, "
                f"{'MLP allowed' if self.mlp else 'no MLP'}")


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

    @property
    def n_contexts(self) -> int:
        return sum(len(self.vocab) ** length for length in range(1, self.n_ctx + 1))


# ---------------------------------------------------------------- finding puzzles


def puzzles_dir() -> Path:
    """Where the puzzles are: $HANDWIRED_PUZZLES (a folder laid out like puzzles/, for people writing
    new puzzles), else the bundled ones: inside the installed package, or puzzles/ in a checkout."""
    if os.environ.get(FOLDER_VARIABLE):
        return Path(os.environ[FOLDER_VARIABLE])
    return bundled_folder("puzzles")


def bundled_puzzles() -> dict[str, Path]:
    """Name -> statement file, for every bundled puzzle."""
    return json_files(puzzles_dir())


def solution_path(name: str) -> Path | None:
    """The bundled reference solution of a puzzle, if it has one."""
    path = puzzles_dir() / "solutions" / f"{name}.json"
    return path if path.is_file() else None


def load_puzzle(name: str) -> Puzzle:
    """A bundled puzzle by name; a wrong name is one line listing the valid ones."""
    found = bundled_puzzles()
    if name not in found:
        names = ", ".join(p.name for p in catalogue()) or "none are installed"
        raise HandwiredError(f"no puzzle named {name!r} (puzzles: {names})")
    return read_statement(found[name])


def catalogue() -> list[Puzzle]:
    """Every bundled puzzle, by level, then name."""
    puzzles = [read_statement(path) for path in bundled_puzzles().values()]
    return sorted(puzzles, key=lambda p: (p.level, p.name))


def read_statement(path: Path) -> Puzzle:
    """Read and validate a statement file; raise HandwiredError with the first problem."""
    puzzle, problems = parse_statement(read_json(path), path)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise HandwiredError(f"{path}: {problems[0]}{more}")
    return puzzle


def parse_statement(doc: Any, path: Path) -> tuple[Puzzle | None, list[str]]:
    """Validate a parsed statement; return the puzzle (None if invalid) and every problem found."""
    checker = _Checker()
    top = checker.obj(doc, "", STATEMENT_KEYS)
    if top is None:
        return None, checker.problems
    if "format" in top and top["format"] != FORMAT:
        checker.problem("format", f"expected {FORMAT!r}; found {_kind(top['format'])}")
    name = checker.text(top["name"], "name") if "name" in top else None
    if name is not None and name != path.stem:
        checker.problem("name", f"expected {path.stem!r}, the file's name; found {_kind(name)}")
    level = checker.whole(top["level"], "level") if "level" in top else None
    texts = {key: checker.text(top[key], key) for key in ("title", "summary", "story") if key in top}
    vocab = _vocab(checker, top["vocab"]) if "vocab" in top else None
    n_ctx = checker.whole(top["n_ctx"], "n_ctx") if "n_ctx" in top else None
    caps = _caps(checker, top["caps"]) if "caps" in top else None
    rule = None
    if vocab is not None and "rule" in top:
        try:
            rule = rule_from_spec(top["rule"], tuple(vocab))
        except HandwiredError as error:
            checker.problem("", str(error))
    examples = _strings(checker, top.get("examples"), "examples", vocab, n_ctx) if "examples" in top else None
    hints = _strings(checker, top.get("hints"), "hints") if "hints" in top else None
    if vocab is not None and n_ctx is not None:
        total = sum(len(vocab) ** length for length in range(1, n_ctx + 1))
        if total > checking.MAX_EXHAUSTIVE:
            checker.problem("n_ctx", f"{total:,} contexts, more than the {checking.MAX_EXHAUSTIVE:,} a check enumerates")
    if checker.problems:
        return None, checker.problems
    puzzle = Puzzle(
        name=name, level=level, title=texts["title"], summary=texts["summary"], story=texts["story"],
        vocab=tuple(vocab), n_ctx=n_ctx, caps=caps, rule_spec=top["rule"], rule=rule,
        examples=tuple(examples), hints=tuple(hints), source=path,
    )
    return puzzle, []


def _caps(checker: _Checker, value: Any) -> Caps | None:
    spec = checker.obj(value, "caps", CAPS_KEYS)
    if spec is None or any(key not in spec for key in CAPS_KEYS):
        return None
    sizes = [checker.whole(spec[key], f"caps.{key}") for key in ("n_embd", "n_head", "n_layer")]
    if not isinstance(spec["mlp"], bool):
        checker.problem("caps.mlp", f"expected true or false; found {_kind(spec['mlp'])}")
        return None
    if None in sizes:
        return None
    n_embd, n_head, n_layer = sizes
    if n_embd % n_head:
        checker.problem("caps", f"n_embd {n_embd} is not divisible by n_head {n_head}, so no starter fits both caps")
        return None
    return Caps(n_embd, n_head, n_layer, spec["mlp"])


def _strings(checker: _Checker, value: Any, path: str, vocab=None, n_ctx=None) -> list[str] | None:
    """A non-empty list of non-empty strings; with a vocab, each a context the model can see."""
    if not isinstance(value, list) or not value:
        checker.problem(path, f"expected a non-empty list of strings; found {_kind(value)}")
        return None
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            checker.problem(f"{path}[{i}]", f"expected a non-empty string; found {_kind(item)}")
            return None
        if vocab is not None:
            bad = [char for char in item if char not in vocab]
            if bad:
                checker.problem(f"{path}[{i}]", f"{bad[0]!r} is not in the vocabulary {', '.join(vocab)}")
                return None
            if n_ctx is not None and len(item) > n_ctx:
                checker.problem(f"{path}[{i}]", f"{len(item)} tokens, longer than n_ctx {n_ctx}")
                return None
    return value


# ---------------------------------------------------------------- a player's file


def fit_problems(puzzle: Puzzle, model: Model) -> list[str]:
    """How a weight file breaks the puzzle's fixed vocab and n_ctx or its caps, in words."""
    problems = []
    if model.vocab != puzzle.vocab:
        order = " (in this order)" if sorted(model.vocab) == sorted(puzzle.vocab) else ""
        problems.append(f"vocab {', '.join(puzzle.vocab)}{order}, the file has {', '.join(model.vocab)}")
    if model.n_ctx != puzzle.n_ctx:
        problems.append(f"n_ctx {puzzle.n_ctx}, the file has {model.n_ctx}")
    caps = puzzle.caps
    for what, cap, has in (("n_embd", caps.n_embd, model.n_embd), ("n_head", caps.n_head, model.n_head),
                           ("blocks", caps.n_layer, model.n_layer)):
        if has > cap:
            problems.append(f"{what} at most {cap}, the file has {has}")
    with_mlp = [f"blocks[{i}]" for i, block in enumerate(model.params["blocks"]) if "mlp" in block]
    if with_mlp and not caps.mlp:
        problems.append(f"no MLP, the file has one in {', '.join(with_mlp)}")
    return problems


def check_fits(puzzle: Puzzle, model: Model) -> None:
    """Raise one line saying what the puzzle expects and what the file has, if the file breaks it."""
    problems = fit_problems(puzzle, model)
    if problems:
        raise HandwiredError(f"{model.source}: does not fit puzzle {puzzle.name!r}: it expects " + "; ".join(problems))


def plan(puzzle: Puzzle, model: Model) -> checking.Plan:
    """Every context of length 1…n_ctx, judged by the puzzle's rule (after the caps check)."""
    check_fits(puzzle, model)
    return checking.exhaustive_plan(model, puzzle.rule)


def judge(puzzle: Puzzle, model: Model, show: int = 10, progress=None,
          should_stop: Callable[[], bool] = lambda: False) -> checking.Report:
    return checking.run(model, plan(puzzle, model), show, progress, should_stop)


def starter(puzzle: Puzzle) -> dict[str, Any]:
    """A weight document at the puzzle's caps, all zeros: it fits, and fails every judged context."""
    caps = puzzle.caps
    doc = starter_document("".join(puzzle.vocab), puzzle.n_ctx, caps.n_embd, caps.n_head, caps.n_layer)
    doc["name"] = puzzle.name
    doc["description"] = f"A start on puzzle {puzzle.name!r}: {puzzle.summary} " + doc["description"]
    doc["example"] = max(puzzle.examples, key=len)
    if puzzle.rule_spec.get("kind") == "pattern":
        doc["target"] = puzzle.rule_spec["pattern"]
    if caps.mlp:
        for block in doc["blocks"]:
            block["mlp"] = {"hidden": MLP_WIDTH * caps.n_embd, "c_fc": {"w": {}}, "c_proj": {"w": {}}}
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
    """What the puzzle's rule says follows one context."""
    ids = np.array([[puzzle.vocab.index(token) for token in context]])  # [1, n_seq]
    judgement = puzzle.rule.judge(ids)
    tokens = tuple(puzzle.vocab[i] for i in np.flatnonzero(judgement.acceptable[0]))
    return Answer(context, int(judgement.status[0]), tokens)


# ---------------------------------------------------------------- scores


@dataclass(frozen=True)
class Score:
    parameters: int  # non-zero numbers in the weight file
    n_embd: int
    n_head: int
    n_layer: int  # blocks
    margin: float  # logits: the smallest lead of the right token over the best wrong one

    def key(self) -> tuple:
        """Smaller is better: fewest non-zero parameters, then n_embd, blocks, heads; then the larger margin."""
        return (self.parameters, self.n_embd, self.n_layer, self.n_head, -self.margin)

    def better_than(self, other: Score | None) -> bool:
        return other is None or self.key() < other.key()

    def text(self) -> str:
        return (f"{self.parameters} non-zero parameters, n_embd {self.n_embd}, {self.n_head} "
                f"head{'s' if self.n_head != 1 else ''}, {self.n_layer} block{'s' if self.n_layer != 1 else ''}, "
                f"margin {format_margin(self.margin)}")

    def to_json(self) -> dict[str, Any]:
        return {"parameters": self.parameters, "n_embd": self.n_embd, "n_head": self.n_head,
                "n_layer": self.n_layer, "margin": self.margin}

    @classmethod
    def from_json(cls, data: Any) -> Score:
        """The inverse of to_json; raises ValueError on anything else."""
        if not isinstance(data, dict) or set(data) != {"parameters", "n_embd", "n_head", "n_layer", "margin"}:
            raise ValueError("expected parameters, n_embd, n_head, n_layer, margin")
        whole = [data[key] for key in ("parameters", "n_embd", "n_head", "n_layer")]
        if any(isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_SIZE**3 for v in whole):
            raise ValueError("expected whole numbers")
        margin = data["margin"]
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not np.isfinite(margin):
            raise ValueError("expected a finite margin")
        return cls(*whole, float(margin))


def format_margin(margin: float) -> str:
    """A margin as people read it: 1023, 2.5, 0.125."""
    return f"{margin:.0f}" if margin == round(margin) else f"{margin:.3f}".rstrip("0")


def nonzero_parameters(model: Model) -> int:
    """How many numbers in the model's parameters are not zero (a missing bias counts as zeros)."""

    def count(value: Any) -> int:
        if isinstance(value, dict):
            return sum(count(item) for item in value.values())
        if isinstance(value, list):
            return sum(count(item) for item in value)
        return int(np.count_nonzero(value))

    return count(model.params)


def score(model: Model, report: checking.Report) -> Score | None:
    """The score of a solved puzzle; None when the report is not a solution."""
    if not report.ok or report.margin is None:
        return None
    return Score(nonzero_parameters(model), model.n_embd, model.n_head, model.n_layer, report.margin.value)


def reference_solution(puzzle: Puzzle) -> Model | None:
    """The puzzle's bundled reference solution, loaded; None if it has none."""
    path = solution_path(puzzle.name)
    return None if path is None else load(str(path))


def par_source(puzzle: Puzzle) -> str | None:
    """A fingerprint of everything par depends on (statement, reference, handwired's version); None without a reference."""
    path = solution_path(puzzle.name)
    if path is None:
        return None
    digest = hashlib.sha256(__version__.encode())
    for part in (puzzle.source, path):
        digest.update(part.read_bytes())
    return digest.hexdigest()


def par(puzzle: Puzzle) -> Score | None:
    """The reference solution's score: the figures to beat. None if there is no working reference."""
    model = reference_solution(puzzle)
    if model is None or fit_problems(puzzle, model):
        return None
    return score(model, judge(puzzle, model, show=1))
