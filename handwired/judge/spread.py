"""A spread: one value a model computes, over every context a check judges, grouped by what the context needs.

The contexts are a puzzle's (its domain, else every string of length 1…n_ctx, each with the rule's answer), a
file's target's (every context, by the repeating pattern), or every context with no answer at all. Each context's
value comes from the same prefix trie that judges a domain (:mod:`handwired.engine.probe`), so a spread costs
about what a check of the same contexts costs. The groups are the right answer, the predicted token, the last
token or the length; :mod:`handwired.judge.separation` says where they lie along the value's axis.
"""

from dataclasses import dataclass

import numpy as np

from handwired.engine.probe import Probe, probe_values
from handwired.engine.walk import EveryString, Shape
from handwired.errors import HandwiredError, bad_value
from handwired.judge.contexts import refuse_every_context, refuse_large_domain, refuse_large_walk
from handwired.judge.plans import pattern_rule
from handwired.judge.puzzle import Puzzle
from handwired.judge.rules import DECIDED, Rule
from handwired.judge.separation import GroupStats, Separation, axis, group_stats, separate
from handwired.judge.verdict import fit_problems
from handwired.weightfile import Model

GROUPINGS = ("answer", "predicted", "last-token", "length")
MAX_CONTEXTS = 4_000_000  # a spread keeps every prefix's keys and values: a bound on that memory


@dataclass(frozen=True)
class Source:
    description: str  # which contexts, in words
    shape: Shape  # which contexts: a puzzle's domain, or every string
    rule: Rule | None  # how the right answer is found; None: no answers


@dataclass(frozen=True)
class Spread:
    probe: Probe
    position: int
    by: str
    source: str  # which contexts, in words
    groups: tuple[GroupStats, ...]  # in vocab order, or by length
    edges: np.ndarray  # [bins + 1] the shared axis
    separation: Separation | None  # None with fewer than two groups
    total: int  # contexts looked at
    shown: int  # of which in a group
    not_judged: int  # ambiguous or out of domain under the rule (grouping by answer)
    too_short: int  # without the position asked for, or the key


def puzzle_source(puzzle: Puzzle, model: Model) -> Source:
    """Every context the puzzle judges, with its rule."""
    if model.vocab != puzzle.vocab or model.n_ctx != puzzle.n_ctx:  # over the caps is fine: this only looks
        raise HandwiredError(f"{model.source}: does not fit puzzle {puzzle.name!r}: it expects "
                             f"{fit_problems(puzzle, model)[0]}")
    if puzzle.domain is not None:
        refuse_large_domain(model, puzzle.domain, "spread")
        return Source(f"every context of puzzle {puzzle.name} ({puzzle.domain.description})", puzzle.domain,
                      puzzle.rule)
    return Source(f"every context of puzzle {puzzle.name}", _every_context(model), puzzle.rule)


def target_source(model: Model, target: str) -> Source:
    """Every context, judged by the repeating pattern ``target``."""
    return Source(f"every context, judged by the target {target}", _every_context(model), pattern_rule(model, target))


def every_source(model: Model) -> Source:
    return Source("every context", _every_context(model), None)


def _every_context(model: Model) -> EveryString:
    total = refuse_every_context(model, "spread over a puzzle's contexts instead", limit=MAX_CONTEXTS)
    refuse_large_walk(model, f"every context: {total:,} contexts", total, total, model.n_ctx, "spread",
                      "a smaller vocab or n_ctx")
    return EveryString(model.n_vocab, model.n_ctx)


def spread(model: Model, probe: Probe, source: Source, by: str = "answer", position: int = -1) -> Spread:
    """The probe's value at ``position`` of every context of ``source``, grouped ``by``."""
    if by not in GROUPINGS:
        raise bad_value("by", repr(by), f"expected one of {', '.join(GROUPINGS)}")
    if by == "answer" and source.rule is None:
        raise HandwiredError("{by} answer needs the right answers: give a puzzle, or a file with a target", ("by",))
    if not -model.n_ctx <= position < model.n_ctx:
        raise bad_value("position", position, f"a context has positions 0…{model.n_ctx - 1} (or -1 for the last)")
    contexts, values, present, predicted = probe_values(model, probe, source.shape, position)
    keys, group_of, not_judged = _groups(model, contexts, source.rule, by, predicted)
    value = np.concatenate(values)  # [n]
    group = np.concatenate(group_of)  # [n], -1: in no group
    has = np.concatenate(present)  # [n]
    in_group = has & (group >= 0)
    if not in_group.any():
        raise HandwiredError(f"{probe.name}: no context has a value there to group")
    value, group = value[in_group], group[in_group]
    edges = axis(value)
    used = sorted(set(group.tolist()))
    stats = tuple(group_stats(keys[g], value[group == g], edges) for g in used)
    separation = separate(keys, value, group) if len(used) > 1 else None
    return Spread(probe, position, by, source.description, stats, edges, separation, len(has), int(in_group.sum()),
                  not_judged, int((~has).sum()))


def _groups(model: Model, contexts: list[np.ndarray], rule: Rule | None, by: str,
            predicted: list[np.ndarray]) -> tuple[list[str], list[np.ndarray], int]:
    """The groups' names, each context's group index (-1: none), and how many the rule did not judge."""
    if by == "length":
        keys = [str(length) for length in range(1, model.n_ctx + 1)]
        return keys, [np.full(len(batch), batch.shape[1] - 1) for batch in contexts], 0
    keys = list(model.vocab)
    if by == "last-token":
        return keys, [batch[:, -1].astype(np.int64) for batch in contexts], 0
    if by == "predicted":  # argmax takes the first on a tie, as every view does
        return keys, predicted, 0
    groups, not_judged = [], 0
    for batch in contexts:
        judgement = rule.judge(batch)
        decided = judgement.status == DECIDED  # [n]
        not_judged += int((~decided).sum())
        groups.append(np.where(decided, np.argmax(judgement.acceptable, axis=1), -1))
    return keys, groups, not_judged
