"""Rules for the right next token, used to judge a model's predictions.

A rule looks at a batch of contexts and says, for each, which next tokens are
acceptable and whether the context decides the answer at all:

* ``DECIDED``: the acceptable tokens are known; the model passes if one of
  them beats every other token.
* ``AMBIGUOUS``: the context fits the rule in ways that disagree on the next
  token (``a`` alone, for ``aab``: the next token may be ``a`` or ``b``).
* ``OUT_OF_DOMAIN``: the context can never occur under the rule (``bb``, for ``aab``).

Neither of the last two is ever counted as a failure. The rule *kinds* a puzzle
names in its statement (``{"kind": "previous"}``) are implemented here, once,
each vectorised over a batch of contexts of one length; :func:`rule_from_spec`
builds one from a statement. Anything with a ``description`` and a ``judge``
method fits as a rule, and :class:`FunctionRule` wraps a plain Python function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from handwired.weightfile.checker import Checker, join

DECIDED, AMBIGUOUS, OUT_OF_DOMAIN = 0, 1, 2


@dataclass(frozen=True)
class Judgement:
    status: np.ndarray  # [n] int8: DECIDED, AMBIGUOUS or OUT_OF_DOMAIN
    acceptable: np.ndarray  # [n, n_vocab] bool: the tokens that would be right (for AMBIGUOUS: the candidates)


class Rule(Protocol):
    description: str

    def judge(self, contexts: np.ndarray) -> Judgement:
        """[n, n_seq] token ids (one length per batch) -> a judgement per context."""
        ...


def _status_from_counts(acceptable: np.ndarray) -> np.ndarray:
    counts = acceptable.sum(axis=1)  # [n]
    return np.where(counts == 0, OUT_OF_DOMAIN, np.where(counts == 1, DECIDED, AMBIGUOUS)).astype(np.int8)


def _one_hot(tokens: np.ndarray, n_vocab: int) -> np.ndarray:
    return tokens[:, None] == np.arange(n_vocab)  # [n] -> [n, n_vocab] bool


def _decided(answer: np.ndarray, n_vocab: int, in_domain: np.ndarray | None = None) -> Judgement:
    """One right token per context ([n] ids); contexts outside ``in_domain`` are out of domain."""
    acceptable = _one_hot(answer, n_vocab)  # [n, n_vocab]
    if in_domain is not None:
        acceptable &= in_domain[:, None]
    return Judgement(_status_from_counts(acceptable), acceptable)


def _out_of_domain(n: int, n_vocab: int) -> Judgement:
    return Judgement(np.full(n, OUT_OF_DOMAIN, dtype=np.int8), np.zeros((n, n_vocab), dtype=bool))


@dataclass(frozen=True)
class PatternRule:
    """The sequence repeats ``pattern`` forever; a context may start at any phase of it."""

    pattern: np.ndarray  # token ids
    n_vocab: int
    text: str

    @property
    def description(self) -> str:
        return f"the repeating pattern {self.text!r}, at every phase the context fits"

    def judge(self, contexts: np.ndarray) -> Judgement:
        n, n_seq = contexts.shape
        period = len(self.pattern)
        acceptable = np.zeros((n, self.n_vocab), dtype=bool)
        for phase in range(period):
            expected = self.pattern[(phase + np.arange(n_seq)) % period]  # the pattern read from this phase
            fits = np.all(contexts == expected, axis=1)
            acceptable[fits, self.pattern[(phase + n_seq) % period]] = True
        # Several phases that agree on the next token still decide it.
        return Judgement(_status_from_counts(acceptable), acceptable)


@dataclass(frozen=True)
class FirstRule:
    n_vocab: int
    description: str = "the context's first token"

    def judge(self, contexts: np.ndarray) -> Judgement:
        return _decided(contexts[:, 0], self.n_vocab)  # [n]


@dataclass(frozen=True)
class PreviousRule:
    n_vocab: int
    description: str = "the token before the last one; a context of one token is out of domain"

    def judge(self, contexts: np.ndarray) -> Judgement:
        n, n_seq = contexts.shape
        if n_seq < 2:
            return _out_of_domain(n, self.n_vocab)
        return _decided(contexts[:, -2], self.n_vocab)  # [n]


@dataclass(frozen=True)
class MaxRule:
    vocab: tuple[str, ...]

    @property
    def description(self) -> str:
        return f"the latest token in the order {', '.join(self.vocab)} that the context holds"

    def judge(self, contexts: np.ndarray) -> Judgement:
        return _decided(contexts.max(axis=1), len(self.vocab))  # [n]


@dataclass(frozen=True)
class MajorityRule:
    n_vocab: int
    description: str = "the most frequent token in the context; a tie for most frequent is ambiguous"

    def judge(self, contexts: np.ndarray) -> Judgement:
        counts = (contexts[:, :, None] == np.arange(self.n_vocab)).sum(axis=1)  # [n, n_seq, n_vocab] -> [n, n_vocab]
        top = counts == counts.max(axis=1, keepdims=True)  # [n, n_vocab]: the tied leaders are the candidates
        return Judgement(_status_from_counts(top), top)


@dataclass(frozen=True)
class SameLastTwoRule:
    vocab: tuple[str, ...]
    same: int  # token id
    different: int

    @property
    def description(self) -> str:
        return (f"{self.vocab[self.same]!r} if the last two tokens are equal, else {self.vocab[self.different]!r}; "
                "a context of one token is out of domain")

    def judge(self, contexts: np.ndarray) -> Judgement:
        n, n_seq = contexts.shape
        if n_seq < 2:
            return _out_of_domain(n, len(self.vocab))
        answer = np.where(contexts[:, -1] == contexts[:, -2], self.same, self.different)  # [n]
        return _decided(answer, len(self.vocab))


@dataclass(frozen=True)
class InductionRule:
    n_vocab: int
    description: str = (
        "let t be the last token and p the latest earlier position holding t: the token at p+1 "
        "(so 'aa' → 'a', 'abcab' → 'c'); if t has not occurred before, out of domain"
    )

    def judge(self, contexts: np.ndarray) -> Judgement:
        n, n_seq = contexts.shape
        if n_seq < 2:
            return _out_of_domain(n, self.n_vocab)
        earlier = contexts[:, :-1] == contexts[:, -1:]  # [n, n_seq-1]: earlier positions holding the last token
        p = n_seq - 2 - np.argmax(earlier[:, ::-1], axis=1)  # [n]: the latest of them (meaningless if none)
        answer = contexts[np.arange(n), p + 1]  # [n]
        return _decided(answer, self.n_vocab, earlier.any(axis=1))


@dataclass(frozen=True)
class FunctionRule:
    """A rule given as a function from a context string to its answer.

    The function returns an iterable of acceptable next tokens (any of them
    passes; an empty one means out of domain), or the constant
    :data:`AMBIGUOUS` or :data:`OUT_OF_DOMAIN` to say so. One Python call per
    context: slower than a vectorised rule, and as general as Python.
    """

    function: Callable[[str], Iterable[str] | int]
    vocab: tuple[str, ...]
    description: str = "a Python rule"

    def judge(self, contexts: np.ndarray) -> Judgement:
        index = {token: i for i, token in enumerate(self.vocab)}
        acceptable = np.zeros((contexts.shape[0], len(self.vocab)), dtype=bool)
        status = np.full(contexts.shape[0], DECIDED, dtype=np.int8)
        for row, context in enumerate(contexts):
            answer = self.function("".join(self.vocab[i] for i in context))
            if isinstance(answer, int) and answer in (AMBIGUOUS, OUT_OF_DOMAIN):
                status[row] = answer
                continue
            for token in answer:  # a string is an iterable of tokens too
                acceptable[row, index[token]] = True
        status[(status == DECIDED) & ~acceptable.any(axis=1)] = OUT_OF_DOMAIN
        return Judgement(status, acceptable)


# ---------------------------------------------------------------- from a puzzle statement

KINDS: dict[str, tuple[str, ...]] = {  # kind -> its parameters, all required
    "pattern": ("pattern",),
    "first": (),
    "previous": (),
    "max": (),
    "majority": (),
    "same_last_two": ("same", "different"),
    "induction": (),
}


def rule_from_spec(spec: Any, vocab: tuple[str, ...] | list[str], check: Checker, path: str = "rule") -> Rule | None:
    """A statement's ``rule`` object, e.g. ``{"kind": "same_last_two", "same": "a", "different": "b"}`` -> a rule.

    Problems go to ``check`` with their JSON path (``rule.kind``, ``rule.same``, …); None then.
    """
    vocab = tuple(vocab)
    kind = check.kind(spec, path, KINDS)
    if kind is None:
        return None
    n_vocab = len(vocab)
    if kind == "pattern":
        text = check.tokens(spec["pattern"], join(path, "pattern"), vocab)
        return None if text is None else PatternRule(np.array([vocab.index(t) for t in text]), n_vocab, text)
    if kind == "same_last_two":
        same = check.token(spec["same"], join(path, "same"), vocab)
        different = check.token(spec["different"], join(path, "different"), vocab)
        if same is None or different is None:
            return None
        return SameLastTwoRule(vocab, vocab.index(same), vocab.index(different))
    if kind == "max":
        return MaxRule(vocab)
    return {"first": FirstRule, "previous": PreviousRule, "majority": MajorityRule,
            "induction": InductionRule}[kind](n_vocab)
