"""Domains: the exact set of contexts a puzzle judges, when it is not every string of length 1…n_ctx.

A statement's ``domain`` names a kind with parameters, like a rule:

* ``strings``: an optional ``start`` token (fed at position 0), then every
  input over ``alphabet`` of a ``length`` in [min, max] (or shaped by a
  ``template`` such as ``"##+##"``, each ``#`` one token of the alphabet),
  optionally with ``distinct`` tokens;
* ``answer_so_far``: the same inputs, then the separator of the rule (which
  must answer after one: copy, reverse, sort, sum), then the answer so far —
  teacher forcing: the contexts are input + separator + the first j answer
  tokens, for every j before the answer ends, and the rule gives token j.

A context outside the domain is never judged, nor counted: the model may say
anything there. Reading a domain enumerates nothing: a :class:`Domain` says
which tokens may follow a prefix and which prefixes are contexts, and a check
walks it as a trie of prefixes, depth first, a bounded batch at a time
(:mod:`handwired.engine.walk`). Its size is a formula for ``strings``; for
``answer_so_far``, whose answers the rule gives, it is counted once, when asked.
"""

from dataclasses import dataclass
from functools import cached_property
from math import perm
from typing import Any

import numpy as np

from handwired.engine.walk import shape_walk
from handwired.errors import HandwiredError
from handwired.judge.kinds.rules import Rule, first_row
from handwired.weightfile.axes import shown
from handwired.weightfile.checker import MAX_SIZE, Checker, describe, join

KINDS: dict[str, dict[str, bool]] = {  # kind -> parameter -> required
    "strings": {"alphabet": True, "length": False, "template": False, "start": False, "distinct": False},
    "answer_so_far": {"alphabet": True, "length": False, "template": False, "start": False, "distinct": False},
}
SLOT = "#"  # in a template: one token of the alphabet
MAX_INPUTS = 1_000_000  # inputs a domain may have to be walked (checked whole, spread, counted); more: a sample
# Tokens in all the contexts of a domain, counted before anything is made. The check walks a domain depth first
# in bounded memory (4,000,000 sums of ###+###, about 44 million tokens, in about 100 MB), so this bounds only
# the counting and the estimates: the answers so far of 2^18 inputs of 18 letters (175 million) are never walked.
MAX_TOKENS = 100_000_000
# Inputs a domain may have at all: over MAX_INPUTS (or MAX_TOKENS) it is read, and checked only on a random sample
# (sample_contexts), never walked (proved by cases instead: handwired.judge.checking.cases); a count is a Python int
# and a draw one token at a time, so this bound only keeps a sample's weights (float64) meaningful.
MAX_SAMPLED = 10**24
SAMPLE_INSTEAD = 100_000  # contexts: the sample a refusal to walk a domain suggests


class TooLargeToWalk(HandwiredError):
    """A domain too large to enumerate: refused by everything that walks it; a random sample may be checked."""

    def __init__(self, problem: str) -> None:
        self.problem = problem  # what is too large, without what to do instead
        super().__init__(f"{problem}; check a random sample of its contexts instead")


@dataclass(frozen=True)
class _Inputs:
    alphabet: tuple[int, ...]  # token ids
    lengths: range
    template: tuple[int | None, ...] | None  # a token id, or None for a slot
    start: int | None
    distinct: bool

    @property
    def sizes(self) -> list[int]:
        """How many tokens are drawn from the alphabet, per group: the template's slots, or each length."""
        return [self.template.count(None)] if self.template is not None else list(self.lengths)

    def count(self) -> int:
        a = len(self.alphabet)
        return sum(perm(a, n) if self.distinct else a**n for n in self.sizes)

    @property
    def offset(self) -> int:  # the input's first position: after the start token, if any
        return int(self.start is not None)

    @property
    def longest(self) -> int:  # the longest input, in tokens drawn and fixed (the start token not counted)
        return len(self.template) if self.template is not None else self.lengths.stop - 1

    def complete(self, k: int) -> bool:
        """Whether an input may end after ``k`` tokens."""
        return k == len(self.template) if self.template is not None else k in self.lengths

    def vocabulary(self) -> set[int]:
        """Every token an input may hold (the start token aside)."""
        return set(self.alphabet) | {t for t in self.template or () if t is not None}

    def tokens(self, answers_to: int | None) -> int:
        """How many tokens the domain's contexts hold at most: each input's; or, with ``answers_to`` (n_ctx), each
        input followed by every answer so far, up to that length (teacher forcing)."""
        a, total = len(self.alphabet), 0
        fixed = (len(self.template) - self.template.count(None) if self.template is not None else 0) + (
            self.start is not None)
        for n in self.sizes:
            count, length = (perm(a, n) if self.distinct else a**n), n + fixed
            longest = max(answers_to or length, length)
            total += count * (longest + length) * (longest - length + 1) // 2  # lengths length…longest, one each
        return total

    def slots(self, k: int) -> int:
        """How many of an input's first ``k`` tokens are drawn from the alphabet."""
        return k if self.template is None else self.template[:k].count(None)

    def picks(self, n: int) -> int:
        """How many ways there are to draw ``n`` tokens."""
        return perm(len(self.alphabet), n) if self.distinct else len(self.alphabet) ** n

    def prefixes(self) -> int:
        """How many distinct prefixes the inputs have (the start token alone included): the trie's input nodes."""
        return self.offset + sum(self.picks(self.slots(k)) for k in range(1, self.longest + 1))

    def allowed(self, prefixes: np.ndarray, n_vocab: int) -> np.ndarray:
        """[n, L] input prefixes -> [n, n_vocab] bool: the tokens that may come next in an input."""
        n, length = prefixes.shape
        out = np.zeros((n, n_vocab), dtype=bool)
        if self.start is not None and length == 0:
            out[:, self.start] = True
            return out
        k = length - self.offset
        if k >= self.longest:
            return out
        if self.template is not None and self.template[k] is not None:
            out[:, self.template[k]] = True
            return out
        out[:, list(self.alphabet)] = True
        if self.distinct:  # not a token drawn already
            drawn = [i for i in range(k) if self.template is None or self.template[i] is None]
            out[np.arange(n)[:, None], prefixes[:, self.offset:][:, drawn]] = False
        return out


@dataclass(frozen=True)
class Domain:
    """A domain, read but never enumerated: the walk (handwired.engine.walk) asks which tokens may follow a
    prefix (:meth:`children`) and which prefixes are contexts (:meth:`judged`)."""

    description: str  # in words, for the statement and the report
    inputs: _Inputs
    rule: Any  # answer_so_far: the rule whose answer follows its separator (see judge.kinds.answers); None: strings
    n_vocab: int

    @property
    def longest(self) -> int:
        """The longest context, in tokens."""
        if self.rule is None:
            return self.inputs.offset + self.inputs.longest
        lengths = [len(self.inputs.template)] if self.inputs.template is not None else self.inputs.lengths
        return self.inputs.offset + max(k + self.rule.answer_length(k) for k in lengths)

    def bound(self) -> tuple[int, int]:
        """At most how many contexts, and how many trie nodes, the domain has: from its parameters alone (exact for
        strings; for answer_so_far, as if every input had an answer of the most tokens)."""
        inputs = self.inputs
        if self.rule is None:
            return inputs.count(), inputs.prefixes()
        lengths = [len(inputs.template)] if inputs.template is not None else inputs.lengths
        contexts = sum(inputs.picks(inputs.slots(k)) * self.rule.answer_length(k) for k in lengths)
        return contexts, inputs.prefixes() + contexts

    def widths(self) -> list[int]:
        """At most how many trie nodes the domain has at each length, 1 to :attr:`longest` tokens (as
        :meth:`bound` counts them): the walk keeps no more siblings' keys than these at a length."""
        inputs, widths = self.inputs, [0] * self.longest
        if inputs.offset:
            widths[0] = 1  # the start token alone
        for k in range(1, inputs.longest + 1):
            widths[inputs.offset + k - 1] += inputs.picks(inputs.slots(k))
        if self.rule is not None:
            lengths = [len(inputs.template)] if inputs.template is not None else inputs.lengths
            for k in lengths:  # each input followed by its separator, then each answer so far
                for m in range(1, self.rule.answer_length(k) + 1):
                    widths[inputs.offset + k + m - 1] += inputs.picks(inputs.slots(k))
        return widths

    @cached_property
    def size(self) -> int:
        """How many contexts: a formula for strings; for answer_so_far, counted once, walking the inputs alone (each
        one the rule answers is a context per token of its answer)."""
        if self.rule is None:
            return self.inputs.count()
        self.refuse_walk()
        total = 0
        for visit in shape_walk(_InputsOnly(self.inputs, self.n_vocab)):
            if visit.judged.any():
                body = visit.prefixes[visit.judged, self.inputs.offset:]
                answers, valid = self.rule.answering(body)  # [r, A], [r]
                total += int(valid.sum()) * answers.shape[1]
        return total

    @property
    def contexts(self) -> tuple[np.ndarray, ...]:
        """Every context, enumerated (for tests and small domains): [n, L] token ids per length, in vocab order."""
        self.refuse_walk()
        by_length: dict[int, list[np.ndarray]] = {}
        for visit in shape_walk(self):
            by_length.setdefault(visit.prefixes.shape[1], []).append(visit.prefixes[visit.judged])
        return tuple(np.concatenate(by_length[length]) for length in sorted(by_length))

    def refuse_walk(self) -> None:
        """Raise TooLargeToWalk when the domain has more inputs (MAX_INPUTS) or tokens (MAX_TOKENS) than anything
        walks: before a check, a spread or a count enumerates it."""
        count = self.inputs.count()
        if count > MAX_INPUTS:
            raise TooLargeToWalk(f"domain of {count:,} inputs, more than the {MAX_INPUTS:,} a check walks")
        tokens = self.inputs.tokens(None if self.rule is None else self.longest)
        if tokens > MAX_TOKENS:
            raise TooLargeToWalk(f"domain of up to {tokens:,} tokens in its contexts, more than the {MAX_TOKENS:,} "
                                 "a check walks")

    def children(self, prefixes: np.ndarray) -> np.ndarray:
        """[n, L] prefixes in the domain's trie -> [n, n_vocab] bool: the tokens that extend each within it."""
        if prefixes.shape[1] >= self.longest:  # nothing is longer
            return np.zeros((len(prefixes), self.n_vocab), dtype=bool)
        out = self.inputs.allowed(prefixes, self.n_vocab)
        if self.rule is None:
            return out
        body = prefixes[:, self.inputs.offset:]  # [n, k]
        first, after = self._ended(body)  # [n]: where each input ends, and whether it has
        if after.all():  # (a whole batch of answers so far: no masked rows to pick)
            out[:] = False
        elif after.any():
            out[after] = False
        if self.inputs.complete(body.shape[1]):  # an input may end here: the separator follows if it has an answer
            rows = np.flatnonzero(~after)
            answers, valid = self.rule.answering(body[rows])  # [r, A], [r]
            out[rows, self.rule.separator] = valid & (answers.shape[1] > 0)
        # the answer so far: its next token, while the answer goes on (not np.unique: it would import numpy.ma)
        for p in np.flatnonzero(np.bincount(first[after], minlength=body.shape[1] + 1)).tolist():
            so_far = body.shape[1] - p - 1
            if so_far + 1 < self.rule.answer_length(p):
                rows = np.flatnonzero(after & (first == p))
                answers, _ = self.rule.answering(body[rows, :p])  # [r, A]; these inputs are in the domain, so valid
                out[rows, answers[:, so_far]] = True
        return out

    def _ended(self, body: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[n, k] -> where each input ends (its separator) [n], and whether it has ended [n] bool."""
        at = np.ascontiguousarray(body.T) == self.rule.separator  # [k, n]: whole rows of n, not a loop per input
        return first_row(at, 0), at.any(axis=0)  # (0: none)

    def judged(self, prefixes: np.ndarray) -> np.ndarray:
        """[n, L] prefixes in the domain's trie -> [n] bool: which are contexts."""
        if self.rule is None:
            return np.full(len(prefixes), self.inputs.complete(prefixes.shape[1] - self.inputs.offset))
        return self._ended(prefixes[:, self.inputs.offset:])[1]

    def holds(self, ids: list[int]) -> bool:
        """Whether a context (token ids) is one of the domain's: its path down the trie, token by token."""
        row = np.zeros((1, 0), dtype=np.int64)
        for token in ids:
            if not 0 <= token < self.n_vocab or not self.children(row)[0, token]:
                return False
            row = np.concatenate([row, [[token]]], axis=1)
        return len(ids) > 0 and bool(self.judged(row)[0])


@dataclass(frozen=True)
class _InputsOnly:
    """The walk of a domain's inputs alone, each complete input judged: what counting its contexts needs."""

    inputs: _Inputs
    n_vocab: int

    def children(self, prefixes: np.ndarray) -> np.ndarray:
        return self.inputs.allowed(prefixes, self.n_vocab)

    def judged(self, prefixes: np.ndarray) -> np.ndarray:
        return np.full(len(prefixes), self.inputs.complete(prefixes.shape[1] - self.inputs.offset))


def domain_from_spec(spec: Any, vocab: tuple[str, ...], rule: Rule | None, n_ctx: int | None, check: Checker,
                     path: str = "domain") -> Domain | None:
    """A statement's ``domain`` object -> the domain (never enumerated here); problems go to ``check``; None then."""
    kind = check.kind(spec, path, KINDS)
    if kind is None:
        return None
    inputs = _inputs(spec, vocab, n_ctx, check, path)
    if inputs is None:
        return None
    separator = getattr(rule, "separator", None)
    if kind == "answer_so_far" and rule is not None and separator is None:
        check.problem(path, "kind 'answer_so_far' needs a rule that answers after a separator (copy, reverse, "
                            f"sort or sum); the rule is {rule.description!r}"[:300])
        return None
    if rule is None or n_ctx is None:
        return None  # reported already
    if kind == "answer_so_far" and separator in inputs.vocabulary():
        check.problem(path, f"{shown(vocab[separator])!r} ends the input (the rule's separator), so an input "
                            "cannot hold it")
        return None
    domain = Domain(_describe(kind, inputs, vocab, separator), inputs, rule if kind == "answer_so_far" else None,
                    len(vocab))
    if domain.rule is None and domain.size == 0:
        check.problem(path, "holds no context the rule judges")
        return None
    if domain.longest > n_ctx:
        check.problem(path, f"its contexts reach {domain.longest} tokens, more than n_ctx {n_ctx}")
        return None
    return domain


def _inputs(spec: dict, vocab: tuple[str, ...], n_ctx: int | None, check: Checker, path: str) -> _Inputs | None:
    alphabet = check.tokens(spec["alphabet"], join(path, "alphabet"), vocab)
    start = check.token(spec["start"], join(path, "start"), vocab) if "start" in spec else None
    distinct = check.flag(spec.get("distinct", False), join(path, "distinct"))
    if ("length" in spec) == ("template" in spec):
        check.problem(path, "give the inputs' 'length' ([shortest, longest]) or a 'template' such as \"##+##\", "
                            "one of them")
        return None
    lengths = _lengths(spec["length"], join(path, "length"), n_ctx, check) if "length" in spec else range(0)
    template = _template(spec["template"], join(path, "template"), vocab, n_ctx, check) if "template" in spec else None
    if alphabet is None or distinct is None or lengths is None or ("start" in spec and start is None) or (
            "template" in spec and template is None):
        return None
    if len(set(alphabet)) != len(alphabet):
        check.problem(join(path, "alphabet"), f"{alphabet!r} names a token twice")
        return None
    inputs = _Inputs(tuple(vocab.index(t) for t in alphabet), lengths, template,
                     None if start is None else vocab.index(start), distinct)
    count = inputs.count()
    if count > MAX_SAMPLED:
        check.problem(path, f"{count:,} inputs, more than the {MAX_SAMPLED:,} a domain may hold even to be sampled; "
                            "give fewer or shorter inputs (a smaller alphabet, length or template)")
        return None
    return inputs


def _lengths(value: Any, path: str, n_ctx: int | None, check: Checker) -> range | None:
    if not (isinstance(value, list) and len(value) == 2):
        check.problem(path, f"expected [shortest, longest], e.g. [1, 4]; found {describe(value)}")
        return None
    shortest = check.whole(value[0], f"{path}[0]", 1, n_ctx or MAX_SIZE)
    longest = check.whole(value[1], f"{path}[1]", 1, n_ctx or MAX_SIZE)
    if shortest is None or longest is None:
        return None
    if shortest > longest:
        check.problem(path, f"the shortest, {shortest}, is longer than the longest, {longest}")
        return None
    return range(shortest, longest + 1)


def _template(value: Any, path: str, vocab: tuple[str, ...], n_ctx: int | None,
              check: Checker) -> tuple[int | None, ...] | None:
    if not isinstance(value, str) or SLOT not in value:
        check.problem(path, f"expected tokens and {SLOT!r} slots, such as \"##+##\"; found {describe(value)}")
        return None
    if len(value) > (n_ctx or MAX_SIZE):  # before it is read token by token, or made into contexts
        check.problem(path, f"{len(value):,} tokens, longer than {f'n_ctx {n_ctx}' if n_ctx else 'a context may be'}")
        return None
    if SLOT in vocab:
        check.problem(path, f"{SLOT!r} is a token of the vocabulary, so it cannot mark a slot")
        return None
    fixed = check.tokens(value.replace(SLOT, ""), path, vocab) if value.replace(SLOT, "") else ""
    if fixed is None:
        return None
    return tuple(None if char == SLOT else vocab.index(char) for char in value)


def _describe(kind: str, inputs: _Inputs, vocab: tuple[str, ...], separator: int | None) -> str:
    alphabet = ", ".join(shown(vocab[i]) for i in inputs.alphabet)
    if inputs.template is not None:
        shape = "".join(SLOT if t is None else shown(vocab[t]) for t in inputs.template)
        text = f"every {shape}, each {SLOT} one of {alphabet}"
    else:
        span = inputs.lengths
        lengths = f"{span.start}" if len(span) == 1 else f"{span.start}…{span.stop - 1}"
        text = f"every string {'of distinct tokens ' if inputs.distinct else ''}over {alphabet} of length {lengths}"
    if inputs.start is not None:
        text = f"{shown(vocab[inputs.start])} then {text}"
    if kind == "answer_so_far" and separator is not None:
        text += f", then {shown(vocab[separator])} and the answer so far"
    return text
