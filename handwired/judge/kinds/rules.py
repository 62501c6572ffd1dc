"""Rules for the right next token, used to judge a model's predictions.

A rule looks at a batch of contexts and says, for each, which next tokens are
acceptable and whether the context decides the answer at all:

* ``DECIDED``: the acceptable tokens are known; the model passes if one of
  them beats every other token.
* ``AMBIGUOUS``: the context fits the rule in ways that disagree on the next
  token (``a`` alone, for ``aab``: the next token may be ``a`` or ``b``).
* ``OUT_OF_DOMAIN``: the context can never occur under the rule (``bb``, for ``aab``).

Neither of the last two is ever counted as a failure. The rule *kinds* a puzzle
names in its statement (``{"kind": "previous"}``) are implemented here and in
:mod:`handwired.judge.kinds.answers`, once, each vectorised over a batch of contexts
of one length; :mod:`handwired.judge.kinds.spec` builds one from a statement.
Anything with a ``description`` and a ``judge`` method fits as a rule, and
:class:`FunctionRule` wraps a plain Python function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

import numpy as np

from handwired.errors import HandwiredError
from handwired.weightfile.axes import shown


class Status(IntEnum):
    """What a rule says of a context; stored in arrays as its number. A rule function returns AMBIGUOUS or
    OUT_OF_DOMAIN themselves, so that a token id it returns by mistake (1, 2) is never read as one of them."""

    DECIDED = 0
    AMBIGUOUS = 1
    OUT_OF_DOMAIN = 2


DECIDED, AMBIGUOUS, OUT_OF_DOMAIN = Status.DECIDED, Status.AMBIGUOUS, Status.OUT_OF_DOMAIN


@dataclass(frozen=True)
class Judgement:
    status: np.ndarray  # [n] int8: DECIDED, AMBIGUOUS or OUT_OF_DOMAIN
    acceptable: np.ndarray  # [n, n_vocab] bool: the tokens that would be right (for AMBIGUOUS: the candidates)
    # [n]: each DECIDED context's one acceptable token, -1 for the others, when the rule gives it (None: it does not);
    # what a check's tally reads, a token a context, instead of a pass over ``acceptable``
    answer: np.ndarray | None = None


class Rule(Protocol):
    @property
    def description(self) -> str:
        """The rule in words (read only: the rules are frozen)."""
        ...

    def judge(self, contexts: np.ndarray) -> Judgement:
        """[n, n_seq] token ids (one length per batch) -> a judgement per context."""
        ...


_BY_COUNT = np.array([OUT_OF_DOMAIN, DECIDED, AMBIGUOUS], dtype=np.int8)  # a status by acceptable tokens: 0, 1, more


def status_from_counts(acceptable: np.ndarray) -> np.ndarray:
    # counted on columns ([n_vocab, n]): a sum over a row's few tokens would be a short loop per context
    counts = np.ascontiguousarray(acceptable.T).sum(axis=0)  # [n]
    return _BY_COUNT.take(np.minimum(counts, 2))


def one_hot(tokens: np.ndarray, n_vocab: int) -> np.ndarray:
    """[n] token ids -> [n, n_vocab] bool, each row True at its token (none for an id outside the vocab): set by flat
    index (a comparison with every token would be a short loop per row)."""
    out = np.zeros((len(tokens), n_vocab), dtype=bool)
    rows = np.flatnonzero((tokens >= 0) & (tokens < n_vocab))
    out.put(rows * n_vocab + tokens[rows], True)
    return out


def first_row(hits: np.ndarray, none: int) -> np.ndarray:
    """[k, n] bool, a context's positions down each column -> [n]: the first row each column is True in (where a
    token first occurs), ``none`` in a column with none. A row of n at a time (putmask would copy one element at a
    time, a loop per context one token)."""
    first = np.full(hits.shape[1], none, dtype=np.intp)
    for i in range(len(hits) - 1, -1, -1):
        np.copyto(first, i, where=hits[i])
    return first


def decided(answer: np.ndarray, n_vocab: int, in_domain: np.ndarray | None = None) -> Judgement:
    """One right token per context ([n] ids); contexts outside ``in_domain`` are out of domain (and so is one whose
    answer is no token id, which no token would pass)."""
    answer = np.asarray(answer, dtype=np.intp)
    known = (answer >= 0) & (answer < n_vocab)  # [n]: a token id, which one token passes
    if in_domain is not None:
        known &= in_domain
    answer = np.where(known, answer, -1)
    return Judgement(np.where(known, np.int8(DECIDED), np.int8(OUT_OF_DOMAIN)), one_hot(answer, n_vocab), answer)


def out_of_domain(n: int, n_vocab: int) -> Judgement:
    return Judgement(np.full(n, OUT_OF_DOMAIN, dtype=np.int8), np.zeros((n, n_vocab), dtype=bool),
                     np.full(n, -1, dtype=np.intp))


SHORT_PATTERN = 64  # phases compared one by one; a longer pattern's windows are looked up


def _rows(rows: np.ndarray) -> np.ndarray:
    """[n, L] int64 -> [n] one value per row that sorts as the rows do, lexicographically (big-endian bytes)."""
    wide = np.ascontiguousarray((rows ^ np.int64(-2**63)).astype(">i8"))  # big-endian, the sign flipped: as bytes
    return wide.view(np.dtype((np.void, 8 * rows.shape[1]))).ravel()


@dataclass(frozen=True)
class PatternRule:
    """The sequence repeats ``pattern`` forever; a context may start at any phase of it."""

    pattern: np.ndarray  # token ids
    n_vocab: int
    text: str

    @property
    def description(self) -> str:
        return f"the repeating pattern {self.text!r}, at every phase the context fits"

    windows: dict = field(default_factory=dict, compare=False, repr=False)  # per length: see _windows

    def judge(self, contexts: np.ndarray) -> Judgement:
        n, n_seq = contexts.shape
        period = len(self.pattern)
        acceptable = np.zeros((n, self.n_vocab), dtype=bool)
        if period <= SHORT_PATTERN:  # a few phases: each compared with every context at once
            for phase in range(period):
                expected = self.pattern[(phase + np.arange(n_seq)) % period]  # the pattern read from this phase
                fits = np.all(contexts == expected, axis=1)
                acceptable[fits, self.pattern[(phase + n_seq) % period]] = True
        else:  # a long pattern: each context looked up among the pattern's windows of its length
            keys, following = self._windows(n_seq)
            mine = _rows(np.ascontiguousarray(contexts, dtype=np.int64))  # [n]
            low, high = np.searchsorted(keys, mine, "left"), np.searchsorted(keys, mine, "right")  # [n] each
            rows = np.repeat(np.arange(n), high - low)  # a context's row once per window it matches
            at = np.repeat(low - np.cumsum(high - low) + (high - low), high - low) + np.arange(len(rows))
            acceptable[rows, following[at]] = True
        # Several phases that agree on the next token still decide it.
        return Judgement(status_from_counts(acceptable), acceptable)

    def _windows(self, n_seq: int) -> tuple[np.ndarray, np.ndarray]:
        """The pattern's windows of ``n_seq`` tokens at every phase, each with the token after it, distinct and
        sorted by window (made once per length): the lookup of a long pattern."""
        if n_seq not in self.windows:
            period = len(self.pattern)
            ids = np.asarray(self.pattern, dtype=np.int64)
            tiled = np.resize(ids, period + n_seq)  # the pattern repeated: every window and the token after it
            windows = np.lib.stride_tricks.sliding_window_view(tiled[:period + n_seq - 1], n_seq)  # [period, n_seq]
            pairs = np.concatenate([windows, tiled[n_seq:n_seq + period, None]], axis=1)  # window, then what follows
            pairs = np.unique(_rows(pairs)).view(np.uint8).reshape(-1, 8 * (n_seq + 1))  # sorted, as bytes
            keys = np.ascontiguousarray(pairs[:, :8 * n_seq]).view(np.dtype((np.void, 8 * n_seq))).ravel()
            following = (pairs[:, 8 * n_seq:].copy().view(">i8").ravel() ^ np.int64(-2**63)).astype(np.int64)
            self.windows[n_seq] = (keys, following)
        return self.windows[n_seq]


@dataclass(frozen=True)
class FirstRule:
    n_vocab: int
    description: str = "the context's first token"

    def judge(self, contexts: np.ndarray) -> Judgement:
        return decided(contexts[:, 0], self.n_vocab)  # [n]

    def over_cases(self, inputs: np.ndarray, so_far: None) -> tuple[np.ndarray, None, np.ndarray]:
        """The token at position 0 over each case (sets of tokens), or -1 (see handwired.judge.kinds.case_rules)."""
        from handwired.judge.kinds.case_rules import token_at_over_cases  # (only a proof by cases loads it)

        answer, split = token_at_over_cases(inputs, 0)
        return answer, None, split


@dataclass(frozen=True)
class PreviousRule:
    n_vocab: int
    description: str = "the token before the last one; a context of one token is out of domain"

    def judge(self, contexts: np.ndarray) -> Judgement:
        n, n_seq = contexts.shape
        if n_seq < 2:
            return out_of_domain(n, self.n_vocab)
        return decided(contexts[:, -2], self.n_vocab)  # [n]

    def over_cases(self, inputs: np.ndarray, so_far: None) -> tuple[np.ndarray, None, np.ndarray]:
        """The token at position -2 over each case (sets of tokens), or -1 (see handwired.judge.kinds.case_rules)."""
        from handwired.judge.kinds.case_rules import token_at_over_cases  # (only a proof by cases loads it)

        answer, split = token_at_over_cases(inputs, -2)
        return answer, None, split


@dataclass(frozen=True)
class MaxRule:
    vocab: tuple[str, ...]

    @property
    def description(self) -> str:
        return f"the latest token in the order {', '.join(map(shown, self.vocab))} that the context holds"

    def judge(self, contexts: np.ndarray) -> Judgement:
        return decided(contexts.max(axis=1), len(self.vocab))  # [n]

    def over_cases(self, inputs: np.ndarray, so_far: None) -> tuple[np.ndarray, None, np.ndarray]:
        """The latest token over each case (sets of tokens), or -1 (see handwired.judge.kinds.case_rules)."""
        from handwired.judge.kinds.case_rules import max_over_cases  # (only a proof by cases loads it)

        answer, split = max_over_cases(inputs)
        return answer, None, split

    def split_off(self, sets: np.ndarray) -> np.ndarray:
        """A case splits on the latest token of a position's set: that token, and the rest (see case_rules)."""
        from handwired.judge.kinds.case_rules import latest_token  # (only a proof by cases loads it)

        return latest_token(sets)


@dataclass(frozen=True)
class MajorityRule:
    n_vocab: int
    description: str = "the most frequent token in the context; a tie for most frequent is ambiguous"

    def judge(self, contexts: np.ndarray) -> Judgement:
        counts = (contexts[:, :, None] == np.arange(self.n_vocab)).sum(axis=1)  # [n, n_seq, n_vocab] -> [n, n_vocab]
        top = counts == counts.max(axis=1, keepdims=True)  # [n, n_vocab]: the tied leaders are the candidates
        return Judgement(status_from_counts(top), top)


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
            return out_of_domain(n, len(self.vocab))
        answer = np.where(contexts[:, -1] == contexts[:, -2], self.same, self.different)  # [n]
        return decided(answer, len(self.vocab))


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
            return out_of_domain(n, self.n_vocab)
        earlier = contexts[:, :-1] == contexts[:, -1:]  # [n, n_seq-1]: earlier positions holding the last token
        p = n_seq - 2 - np.argmax(earlier[:, ::-1], axis=1)  # [n]: the latest of them (meaningless if none)
        answer = contexts[np.arange(n), p + 1]  # [n]
        return decided(answer, self.n_vocab, earlier.any(axis=1))


@dataclass(frozen=True)
class FunctionRule:
    """A rule given as a function from a context string to its answer.

    The function returns the acceptable next tokens, a string or an iterable
    of tokens (any of them passes; an empty one means out of domain), or
    :data:`AMBIGUOUS` or :data:`OUT_OF_DOMAIN` to say so. Anything else (a
    token id, None, a token not in the vocabulary) is one error naming what it
    returned and for which context. One Python call per context: slower than a
    vectorised rule, and as general as Python.
    """

    function: Callable[[str], Iterable[str] | int]
    vocab: tuple[str, ...]
    description: str = "a Python rule"

    def judge(self, contexts: np.ndarray) -> Judgement:
        index = {token: i for i, token in enumerate(self.vocab)}
        acceptable = np.zeros((contexts.shape[0], len(self.vocab)), dtype=bool)
        status = np.full(contexts.shape[0], DECIDED, dtype=np.int8)
        for row, context in enumerate(contexts):
            text = "".join(self.vocab[i] for i in context)
            answer = self.function(text)
            if answer is AMBIGUOUS or answer is OUT_OF_DOMAIN:
                status[row] = answer
                continue
            for token in self._tokens(text, answer):
                acceptable[row, index[token]] = True
        status[(status == DECIDED) & ~acceptable.any(axis=1)] = OUT_OF_DOMAIN
        return Judgement(status, acceptable)

    def _tokens(self, context: str, answer: object) -> list[str]:
        """The tokens an answer names; one line naming what the function returned when it is not that."""
        returned = f"{self.description}: on {context!r} the rule function returned {answer!r}"
        expected = (f"expected the acceptable next tokens (e.g. {self.vocab[0]!r} or a list of tokens), "
                    "AMBIGUOUS or OUT_OF_DOMAIN")
        if isinstance(answer, (int, np.integer)):  # a token id, most likely
            named = f" (token id {answer} is {self.vocab[int(answer)]!r})" if 0 <= answer < len(self.vocab) else ""
            raise HandwiredError(f"{returned}, a number; {expected}{named}")
        if not isinstance(answer, Iterable):
            raise HandwiredError(f"{returned}; {expected}")
        tokens = list(answer)
        unknown = [token for token in tokens if token not in self.vocab]
        if unknown:
            raise HandwiredError(f"{returned}: {unknown[0]!r} is not in the vocabulary "
                                 f"{', '.join(map(shown, self.vocab))}")
        return tokens


@dataclass(frozen=True)
class SuccessorRule:
    """The token after the last one in a cycle (``abcd``: a → b, …, d → a)."""

    order: tuple[int, ...]  # token ids, the cycle
    vocab: tuple[str, ...]

    @property
    def description(self) -> str:
        cycle = "".join(self.vocab[i] for i in self.order)
        return (f"the token after the last one in the cycle {cycle}, {self.vocab[self.order[-1]]} → "
                f"{self.vocab[self.order[0]]}")

    def judge(self, contexts: np.ndarray) -> Judgement:
        following = np.full(len(self.vocab), -1)  # token id -> the next one in the cycle; -1: not in it
        following[list(self.order)] = np.roll(self.order, -1)
        answer = following[contexts[:, -1]]  # [n]
        return decided(np.maximum(answer, 0), len(self.vocab), answer >= 0)


@dataclass(frozen=True)
class CountLastRule:
    """How many times the last token occurs in the context, as a token: ``counts[k-1]`` for k times."""

    counts: tuple[int, ...]  # token ids for 1, 2, 3, …
    vocab: tuple[str, ...]

    @property
    def description(self) -> str:
        names = ", ".join(f"{k} → {shown(self.vocab[t])}" for k, t in enumerate(self.counts, start=1))
        return f"how many times the last token occurs in the context ({names}); more than that is out of domain"

    def judge(self, contexts: np.ndarray) -> Judgement:
        times = (contexts == contexts[:, -1:]).sum(axis=1)  # [n], at least 1
        counted = times <= len(self.counts)
        answer = np.array(self.counts)[np.minimum(times, len(self.counts)) - 1]  # [n]
        return decided(answer, len(self.vocab), counted)


@dataclass(frozen=True)
class ParityRule:
    """``even`` if the context holds an even number of the token ``of``, else ``odd``."""

    of: int  # token ids
    even: int
    odd: int
    vocab: tuple[str, ...]

    @property
    def description(self) -> str:
        v = self.vocab
        return f"{v[self.even]!r} if the context holds an even number of {v[self.of]!r}, else {v[self.odd]!r}"

    def judge(self, contexts: np.ndarray) -> Judgement:
        odd = (contexts == self.of).sum(axis=1) % 2 == 1  # [n]
        return decided(np.where(odd, self.odd, self.even), len(self.vocab))
