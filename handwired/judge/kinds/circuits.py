"""The rule kinds of the third ladder, the circuits the papers found in trained transformers: addition modulo p
(the grokking circuit), balanced brackets (a RASP construction), the indirect object (a name mover), greater-than
(a mover head and a comparing MLP). Each is a rule kind as in :mod:`handwired.judge.kinds.rules`, written once; a
statement names it."""

from dataclasses import dataclass

import numpy as np

from handwired.judge.kinds.rules import Judgement, decided, out_of_domain
from handwired.weightfile.axes import shown


@dataclass(frozen=True)
class ModularSumRule:
    """``A+B=`` -> the residue of A + B modulo p, where ``residues`` are the tokens of 0 … p-1."""

    plus: int  # token ids
    equals: int
    residues: tuple[int, ...]
    vocab: tuple[str, ...]

    @property
    def description(self) -> str:
        return (f"after A{self.vocab[self.plus]}B{self.vocab[self.equals]}, (A + B) mod {len(self.residues)}, each "
                f"residue one of {', '.join(shown(self.vocab[t]) for t in self.residues)}; any other context is out "
                "of domain")

    def judge(self, contexts: np.ndarray) -> Judgement:
        n, n_seq = contexts.shape
        if n_seq != 4:
            return out_of_domain(n, len(self.vocab))
        value = np.full(len(self.vocab), -1)  # token id -> its residue; -1: not a residue
        value[list(self.residues)] = np.arange(len(self.residues))
        a, b = value[contexts[:, 0]], value[contexts[:, 2]]  # [n] each
        shaped = (a >= 0) & (b >= 0) & (contexts[:, 1] == self.plus) & (contexts[:, 3] == self.equals)
        answer = np.array(self.residues)[(a + b) % len(self.residues)]  # [n]
        return decided(answer, len(self.vocab), shaped)


@dataclass(frozen=True)
class BalancedRule:
    """``yes`` if the context's brackets are balanced (Dyck-1: as many ``open`` as ``close``, and no prefix with
    more ``close`` than ``open``), else ``no``. Other tokens (a start token) are passed over; a context that holds
    ``yes`` or ``no`` is out of domain."""

    open: int  # token ids
    close: int
    yes: int
    no: int
    vocab: tuple[str, ...]

    @property
    def description(self) -> str:
        v = self.vocab
        return (f"{v[self.yes]!r} if the brackets {v[self.open]}{v[self.close]} are balanced (every "
                f"{v[self.close]!r} closes an earlier {v[self.open]!r}, and none is left open), else {v[self.no]!r}; "
                f"other tokens are passed over; a context holding {v[self.yes]!r} or {v[self.no]!r} is out of domain")

    def judge(self, contexts: np.ndarray) -> Judgement:
        step = np.where(contexts == self.open, 1, np.where(contexts == self.close, -1, 0))  # [n, L]
        depth = np.cumsum(step, axis=1)  # [n, L]: the balance after each token
        balanced = (depth[:, -1] == 0) & (depth.min(axis=1) >= 0)  # [n]
        asked = ~((contexts == self.yes) | (contexts == self.no)).any(axis=1)
        return decided(np.where(balanced, self.yes, self.no), len(self.vocab), asked)


@dataclass(frozen=True)
class IndirectObjectRule:
    """The only token that occurs exactly once in the context, when the last token occurs more than once (the
    indirect object, after the repeated subject); any other context is out of domain."""

    n_vocab: int
    description: str = ("the only token that occurs exactly once, when the last token occurs more than once "
                        "(abb → a, bab → a); any other context is out of domain")

    def judge(self, contexts: np.ndarray) -> Judgement:
        counts = (contexts[:, :, None] == np.arange(self.n_vocab)).sum(axis=1)  # [n, n_vocab]
        once = counts == 1  # [n, n_vocab]
        repeated_last = counts[np.arange(len(contexts)), contexts[:, -1]] > 1  # [n]
        return decided(np.argmax(once, axis=1), self.n_vocab, (once.sum(axis=1) == 1) & repeated_last)


@dataclass(frozen=True)
class GreaterThanRule:
    """``yes`` if the last token comes strictly later in ``order`` than the first token (an end year after a start
    year), else ``no``; a context whose first or last token is not in ``order``, or of one token, is out of domain."""

    order: tuple[int, ...]  # token ids, earliest first
    yes: int
    no: int
    vocab: tuple[str, ...]

    @property
    def description(self) -> str:
        v = self.vocab
        order = ", ".join(shown(v[t]) for t in self.order)
        return (f"{v[self.yes]!r} if the last token comes after the first in the order {order}, else {v[self.no]!r} "
                "(the same token too); a context that does not start and end with one of them is out of domain")

    def judge(self, contexts: np.ndarray) -> Judgement:
        n, n_seq = contexts.shape
        if n_seq < 2:
            return out_of_domain(n, len(self.vocab))
        rank = np.full(len(self.vocab), -1)  # token id -> its place in the order; -1: not in it
        rank[list(self.order)] = np.arange(len(self.order))
        start, end = rank[contexts[:, 0]], rank[contexts[:, -1]]  # [n] each
        return decided(np.where(end > start, self.yes, self.no), len(self.vocab), (start >= 0) & (end >= 0))
