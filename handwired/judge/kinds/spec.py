"""The rule kinds a puzzle statement may name, with their parameters: ``{"kind": "parity", "of": "b", …}`` -> a rule.

Each kind is implemented once, in :mod:`handwired.judge.kinds.rules` (a rule of the
context) or :mod:`handwired.judge.kinds.answers` (an answer after a separator). A
statement is data: it can only name these kinds, never run code.
"""

from typing import Any

import numpy as np

from handwired.judge.kinds.answers import AnswerRule, SumRule
from handwired.judge.kinds.circuits import BalancedRule, GreaterThanRule, IndirectObjectRule, ModularSumRule
from handwired.judge.kinds.rules import (
    CountLastRule,
    FirstRule,
    InductionRule,
    MajorityRule,
    MaxRule,
    ParityRule,
    PatternRule,
    PreviousRule,
    Rule,
    SameLastTwoRule,
    SuccessorRule,
)
from handwired.weightfile.checker import Checker, join

KINDS: dict[str, tuple[str, ...] | dict[str, bool]] = {  # kind -> its parameters (a tuple: all required)
    "pattern": ("pattern",),
    "first": (),
    "previous": (),
    "max": (),
    "majority": (),
    "same_last_two": ("same", "different"),
    "induction": (),
    "successor": ("order",),
    "count_last": ("counts",),
    "parity": ("of", "even", "odd"),
    "copy": ("separator",),
    "reverse": ("separator",),
    "sort": ("separator",),
    "sum": {"plus": True, "equals": True, "digits": True, "width": True, "order": False},
    "modular_sum": ("plus", "equals", "residues"),
    "balanced": ("open", "close", "yes", "no"),
    "indirect_object": (),
    "greater_than": ("order", "yes", "no"),
}
ORDERS = ("most_first", "least_first")  # the sum's answer: its most significant digit first (the default), or last
ANSWERS = ("copy", "reverse", "sort", "sum")  # the kinds that answer after a separator
SINGLE = ("same", "different", "of", "even", "odd", "separator", "plus", "equals",  # parameters that are one token
          "open", "close", "yes", "no")


def rule_from_spec(spec: Any, vocab: tuple[str, ...] | list[str], check: Checker, path: str = "rule") -> Rule | None:
    """A statement's ``rule`` object -> a rule; problems go to ``check`` with their JSON path; None then."""
    vocab = tuple(vocab)
    kind = check.kind(spec, path, KINDS)
    if kind is None:
        return None
    read = {key: (check.token if key in SINGLE else check.tokens)(spec[key], join(path, key), vocab)
            for key in KINDS[kind] if key != "width" and (kind, key) != ("sum", "order")}
    tokens = {key: value for key, value in read.items() if value is not None}
    if len(tokens) < len(read):  # each one missing is a problem already
        return None
    ids = {key: [vocab.index(token) for token in value] for key, value in tokens.items()}
    n_vocab = len(vocab)
    if kind == "pattern":
        return PatternRule(np.array(ids["pattern"]), n_vocab, tokens["pattern"])
    if kind == "same_last_two":
        return SameLastTwoRule(vocab, ids["same"][0], ids["different"][0])
    if kind == "parity":
        return ParityRule(ids["of"][0], ids["even"][0], ids["odd"][0], vocab)
    if kind in ("copy", "reverse", "sort"):
        return AnswerRule(kind, ids["separator"][0], vocab)
    if kind == "sum":
        return _sum(check, spec, path, ids, vocab)
    if kind == "successor":
        return SuccessorRule(tuple(ids["order"]), vocab) if _distinct(check, path, tokens, "order") else None
    if kind == "count_last":
        return CountLastRule(tuple(ids["counts"]), vocab) if _distinct(check, path, tokens, "counts") else None
    if kind == "max":
        return MaxRule(vocab)
    if kind == "balanced":
        return _balanced(check, path, ids, vocab)
    if kind == "modular_sum":
        return _modular_sum(check, path, tokens, ids, vocab)
    if kind == "greater_than":
        return _greater_than(check, path, tokens, ids, vocab)
    plain = {"first": FirstRule, "previous": PreviousRule, "majority": MajorityRule, "induction": InductionRule,
             "indirect_object": IndirectObjectRule}
    return plain[kind](n_vocab)


def _distinct(check: Checker, path: str, tokens: dict[str, str], key: str) -> bool:
    if len(set(tokens[key])) != len(tokens[key]):
        check.problem(join(path, key), f"{tokens[key]!r} names a token twice")
        return False
    return True


def _sum(check: Checker, spec: dict, path: str, ids: dict[str, list[int]], vocab: tuple[str, ...]) -> SumRule | None:
    ok = True
    if len(ids["digits"]) != 10 or len(set(ids["digits"])) != 10:
        check.problem(join(path, "digits"), f"expected the ten tokens of 0…9, each once; found {len(ids['digits'])}")
        ok = False
    width = check.whole(spec["width"], join(path, "width"), 1, 18)
    order = check.one_of(spec.get("order", ORDERS[0]), join(path, "order"), list(ORDERS))
    if not ok or width is None or order is None:
        return None
    return SumRule(ids["plus"][0], ids["equals"][0], tuple(ids["digits"]), width, vocab, order == ORDERS[1])


def _balanced(check: Checker, path: str, ids: dict[str, list[int]], vocab: tuple[str, ...]) -> Rule | None:
    """Balanced brackets (Dyck-1), the task of Weiss et al.'s RASP construction."""
    named = [ids[key][0] for key in ("open", "close", "yes", "no")]
    if len(set(named)) < 4:
        check.problem(path, "open, close, yes and no must be four different tokens")
        return None
    return BalancedRule(named[0], named[1], named[2], named[3], vocab)


def _modular_sum(check: Checker, path: str, tokens: dict[str, str], ids: dict[str, list[int]],
                 vocab: tuple[str, ...]) -> Rule | None:
    """Addition modulo p, the task of the grokking experiments."""
    if not _distinct(check, path, tokens, "residues"):
        return None
    if len(ids["residues"]) < 2 or {ids["plus"][0], ids["equals"][0]} & set(ids["residues"]):
        check.problem(join(path, "residues"), "expected at least two tokens, 0 … p-1 in order, neither plus nor "
                                             "equals")
        return None
    return ModularSumRule(ids["plus"][0], ids["equals"][0], tuple(ids["residues"]), vocab)


def _greater_than(check: Checker, path: str, tokens: dict[str, str], ids: dict[str, list[int]],
                  vocab: tuple[str, ...]) -> Rule | None:
    """Is the end year after the start year: the task of Hanna et al.'s greater-than circuit."""
    if not _distinct(check, path, tokens, "order"):
        return None
    if len(ids["order"]) < 2 or ids["yes"][0] == ids["no"][0] or {ids["yes"][0], ids["no"][0]} & set(ids["order"]):
        check.problem(path, "expected an order of at least two tokens, and yes and no two other tokens")
        return None
    return GreaterThanRule(tuple(ids["order"]), ids["yes"][0], ids["no"][0], vocab)
