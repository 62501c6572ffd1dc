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
anything there. The domain is enumerated once, as arrays of contexts grouped by
length, each in vocab order, which the judge walks as a trie of their prefixes.
"""

from dataclasses import dataclass
from itertools import chain, permutations
from math import perm
from typing import Any

import numpy as np

from handwired.judge.contexts import contexts_of
from handwired.judge.rules import DECIDED, Rule
from handwired.weightfile.axes import shown
from handwired.weightfile.checker import MAX_SIZE, Checker, describe, join, known

KINDS: dict[str, dict[str, bool]] = {  # kind -> parameter -> required
    "strings": {"alphabet": True, "length": False, "template": False, "start": False, "distinct": False},
    "answer_so_far": {"alphabet": True, "length": False, "template": False, "start": False, "distinct": False},
}
SLOT = "#"  # in a template: one token of the alphabet
MAX_INPUTS = 1_000_000  # inputs a domain may have: far more than a puzzle needs, few enough to enumerate at once
# Tokens in all the contexts a domain enumerates, bounded before any is made: about 2 s and 60 MB at most
# (add's is counted as 350,000, and holds 210,000; the answers so far of 2^18 inputs of 18 letters, counted as 175
# million, took 46 s and 1.3 GB to enumerate).
MAX_TOKENS = 20_000_000


@dataclass(frozen=True)
class Domain:
    description: str  # in words, for the statement and the report
    contexts: tuple[np.ndarray, ...]  # the judged contexts, by length, shortest first; [n, L] token ids in vocab order

    @property
    def size(self) -> int:
        return sum(len(batch) for batch in self.contexts)

    @property
    def longest(self) -> int:
        return max(batch.shape[1] for batch in self.contexts)

    def holds(self, ids: list[int]) -> bool:
        """Whether a context (token ids) is one of the domain's."""
        row = np.array(ids, dtype=self.contexts[0].dtype)
        return any(batch.shape[1] == len(row) and bool((batch == row).all(axis=1).any()) for batch in self.contexts)


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

    def enumerate(self) -> list[np.ndarray]:
        """Every input, start token included, grouped by length: [n, L] token ids each."""
        groups = []
        for n in self.sizes:
            if self.distinct:  # only the permutations, never every pick: the count bounds the memory
                k = perm(len(self.alphabet), n)  # lexicographic, as the picks below
                flat = chain.from_iterable(permutations(range(len(self.alphabet)), n))
                picks = np.fromiter(flat, dtype=np.int64, count=k * n).reshape(k, n)  # [a!/(a-n)!, n]
            else:
                a = len(self.alphabet)  # the digits of 0…a^n-1 in base a (np.indices would stop at 64 dimensions)
                picks = contexts_of(n, 0, a**n, a).astype(np.int64)  # [a^n, n], lexicographic
            filled = np.array(self.alphabet, dtype=np.int64)[picks]  # [k, n]
            if self.template is not None:
                columns, slot = [], 0
                for token in self.template:
                    columns.append(filled[:, slot] if token is None else np.full(len(filled), token))
                    slot += token is None
                filled = np.stack(columns, axis=1)
            if self.start is not None:
                filled = np.concatenate([np.full((len(filled), 1), self.start), filled], axis=1)
            groups.append(filled)
        return groups


def domain_from_spec(spec: Any, vocab: tuple[str, ...], rule: Rule | None, n_ctx: int | None, check: Checker,
                     path: str = "domain") -> Domain | None:
    """A statement's ``domain`` object -> the domain, enumerated; problems go to ``check``; None then."""
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
    groups = inputs.enumerate()
    if kind == "answer_so_far":
        groups = _answers_so_far(groups, known(separator), rule)  # the rule has one (checked above)
    dtype = np.min_scalar_type(len(vocab))
    contexts = tuple(np.unique(group.astype(dtype), axis=0) for group in groups if len(group))
    if not contexts:
        check.problem(path, "holds no context the rule judges")
        return None
    domain = Domain(_describe(kind, inputs, vocab, separator), contexts)
    if domain.longest > n_ctx:
        check.problem(path, f"its contexts reach {domain.longest} tokens, more than n_ctx {n_ctx}")
        return None
    return domain


def _answers_so_far(inputs: list[np.ndarray], separator: int, rule: Rule) -> list[np.ndarray]:
    """Each input + separator + every prefix of its answer that the rule still decides (teacher forcing)."""
    judged = []
    for group in inputs:
        current = np.concatenate([group, np.full((len(group), 1), separator)], axis=1)
        while len(current):
            judgement = rule.judge(current)
            decided = judgement.status == DECIDED
            current = current[decided]
            if len(current):
                judged.append(current)
                following = np.argmax(judgement.acceptable[decided], axis=1)  # [k]: the one right token
                current = np.concatenate([current, following[:, None]], axis=1)
    return judged


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
    if count > MAX_INPUTS:
        check.problem(path, f"{count:,} inputs, more than the {MAX_INPUTS:,} a domain may hold")
        return None
    answers = spec.get("kind") == "answer_so_far"
    tokens = inputs.tokens(n_ctx if answers else None)
    if tokens > MAX_TOKENS:
        check.problem(path, f"up to {tokens:,} tokens in its contexts{' with the answers so far' if answers else ''}, "
                            f"more than the {MAX_TOKENS:,} a domain may hold; fewer or shorter inputs narrow it")
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
