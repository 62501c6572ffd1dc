"""Rules for the right next token, used to judge a model's predictions.

A rule looks at a batch of contexts and says, for each, which next tokens are
acceptable and whether the context decides the answer at all:

* ``DECIDED``: the acceptable tokens are known; the model passes if one of
  them beats every other token.
* ``AMBIGUOUS``: the context fits the rule in ways that disagree on the next
  token (``a`` alone, for ``aab``: the next token may be ``a`` or ``b``).
* ``OUT_OF_DOMAIN``: the context can never occur under the rule (``bb``, for ``aab``).

Neither of the last two is ever counted as a failure. Puzzles plug in their own
rules: anything with a ``description`` and a ``judge`` method fits, and
:class:`FunctionRule` wraps a plain Python function.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Protocol

import numpy as np

DECIDED, AMBIGUOUS, OUT_OF_DOMAIN = 0, 1, 2


@dataclass(frozen=True)
class Judgement:
    status: np.ndarray  # [n] int8: DECIDED, AMBIGUOUS or OUT_OF_DOMAIN
    acceptable: np.ndarray  # [n, n_vocab] bool: the tokens that would be right


class Rule(Protocol):
    description: str

    def judge(self, contexts: np.ndarray) -> Judgement:
        """[n, n_seq] token ids (one length per batch) -> a judgement per context."""
        ...


def _status_from_counts(acceptable: np.ndarray) -> np.ndarray:
    counts = acceptable.sum(axis=1)
    return np.where(counts == 0, OUT_OF_DOMAIN, np.where(counts == 1, DECIDED, AMBIGUOUS)).astype(np.int8)


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
class FunctionRule:
    """A rule given as a function from a context string to the acceptable next tokens.

    The function returns an iterable of tokens; any of them passes. An empty
    result means the context is out of the rule's domain. Slower than a
    vectorised rule (one Python call per context), and as general as Python.
    """

    function: Callable[[str], Iterable[str]]
    vocab: tuple[str, ...]
    description: str = "a Python rule"

    def judge(self, contexts: np.ndarray) -> Judgement:
        index = {token: i for i, token in enumerate(self.vocab)}
        acceptable = np.zeros((contexts.shape[0], len(self.vocab)), dtype=bool)
        for row, context in enumerate(contexts):
            for token in self.function("".join(self.vocab[i] for i in context)):
                acceptable[row, index[token]] = True
        status = np.where(acceptable.any(axis=1), DECIDED, OUT_OF_DOMAIN).astype(np.int8)
        return Judgement(status, acceptable)
