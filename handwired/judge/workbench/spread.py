"""A spread: one value a model computes, over every context a check judges, grouped by what the context needs.

The contexts are a puzzle's (its domain, else every string of length 1…n_ctx, each with the rule's answer), a
file's target's (every context, by the repeating pattern), or every context with no answer at all. Each context's
value comes from the same prefix trie that judges a domain (:mod:`handwired.engine.probe`), so a spread costs
about what a check of the same contexts costs. The groups are the right answer, the predicted token, the last
token or the length; :mod:`handwired.judge.workbench.separation` says where they lie along the value's axis.
"""

from dataclasses import dataclass

import numpy as np

from handwired.engine.arithmetic.floats import float_walk
from handwired.engine.probe import Probe, parse_probe, probe_values
from handwired.engine.walk import EveryString, Shape
from handwired.errors import HandwiredError, Note, bad_value
from handwired.judge.checking.contexts import every_length, refuse_every_context, refuse_large_domain, refuse_large_walk
from handwired.judge.checking.plans import pattern_rule
from handwired.judge.checking.report import leads
from handwired.judge.game.puzzle import Puzzle
from handwired.judge.game.verdict import fit_problems
from handwired.judge.judging import judged_contexts
from handwired.judge.kinds.domains import Domain
from handwired.judge.kinds.rules import DECIDED, Rule
from handwired.judge.workbench.separation import GroupStats, Separation, axis, group_stats, separate
from handwired.weightfile import Model

GROUPINGS = ("answer", "predicted", "last-token", "length")
LEAD = "lead"  # the right token's logit minus the best wrong one's: what decides whether a context passes
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
        return Source(f"every context of puzzle {puzzle.name} ({puzzle.domain.description})", puzzle.domain,
                      puzzle.rule)
    return Source(f"every context of puzzle {puzzle.name}", _every_context(model), puzzle.rule)


def target_source(model: Model, target: str, instead: str = "spread over a puzzle's contexts instead",
                  parameters: tuple[str, ...] = ()) -> Source:
    """Every context, judged by the repeating pattern ``target``; too many are refused, saying what to do
    ``instead``."""
    return Source(f"every context, judged by the target {target}", _every_context(model, instead, parameters),
                  pattern_rule(model, target))


def judged_source(model: Model, puzzle: str | Puzzle | None = None, every: bool = False,
                  required: bool = False) -> tuple[Source, tuple[Note, ...]]:
    """The contexts read, as the one decision (handwired.judge.judging.judged_contexts) chooses them: a puzzle's
    (asked for, else the one the file names), else every context by the file's target, else every context with no
    answers (unless an answer is ``required``: a sweep's or an ablation's); and the notes to show."""
    judging = judged_contexts(model, puzzle, every, required)
    if judging.puzzle is not None:
        return puzzle_source(judging.puzzle, model), judging.notes
    if judging.target is not None:
        if required:
            return target_source(model, judging.target, "judge it by a puzzle's contexts instead, with {puzzle}",
                                 ("puzzle",)), judging.notes
        return target_source(model, judging.target), judging.notes
    return every_source(model), judging.notes


def every_source(model: Model) -> Source:
    return Source("every context", _every_context(model), None)


def _every_context(model: Model, instead: str = "spread over a puzzle's contexts instead",
                   parameters: tuple[str, ...] = ()) -> EveryString:
    refuse_every_context(model, instead, parameters, limit=MAX_CONTEXTS)
    return EveryString(model.n_vocab, model.n_ctx)


def _refuse_large(model: Model, source: Source) -> None:
    """Refuse, before anything is evaluated, a spread whose time or memory would be over the limits."""
    if isinstance(source.shape, Domain):
        refuse_large_domain(model, source.shape, "spread")
    elif isinstance(source.shape, EveryString):
        total = every_length(model.n_vocab, model.n_ctx)
        refuse_large_walk(model, f"every context: {total:,} contexts", total, total, model.n_ctx, "spread",
                          "a smaller vocab or n_ctx narrows it", every_string=True)


def parse_value(model: Model, text: str, head: int | None = None) -> Probe:
    """``lead``, or a hook's column (or two columns' difference or ratio) as :func:`parse_probe` reads it."""
    if text != LEAD:
        return parse_probe(model, text, head)
    if head is not None:
        raise bad_value("head", head, "lead is the whole model's, not a head's")
    return Probe(LEAD, "", 0, None)


def _leads(model: Model, source: Source, position: int) -> tuple[list, list, list, list, int]:
    """Each context (per batch), its lead (nan where the rule does not judge it), whether it has one, the token it
    predicts, and how many the rule does not judge."""
    if source.rule is None:
        raise HandwiredError("lead needs the right answers: give a puzzle, or a file with a target")
    if position != -1:
        raise bad_value("position", position, "lead is read at the last position, where the next token is judged")
    contexts, values, present, predicted, undecided = [], [], [], [], 0
    for visit in float_walk(model, source.shape):
        if visit.judged.any() and visit.logits is not None:  # a batch with a judged node has its logits
            batch, logits = visit.prefixes[visit.judged], visit.logits[visit.judged]
            judgement = source.rule.judge(batch)
            decided = judgement.status == DECIDED  # [n]
            contexts.append(batch)
            values.append(np.where(decided, leads(logits, judgement.acceptable), np.nan))
            present.append(decided)
            predicted.append(np.argmax(logits, axis=1))
            undecided += int((~decided).sum())
    return contexts, values, present, predicted, undecided


def spread(model: Model, probe: Probe, source: Source, by: str = "answer", position: int = -1) -> Spread:
    """The probe's value at ``position`` of every context of ``source``, grouped ``by``."""
    if by not in GROUPINGS:
        raise bad_value("by", repr(by), f"expected one of {', '.join(GROUPINGS)}")
    if by == "answer" and source.rule is None:
        raise HandwiredError("{by} answer needs the right answers: give a puzzle, or a file with a target", ("by",))
    if not -model.n_ctx <= position < model.n_ctx:
        raise bad_value("position", position, f"a context has positions 0…{model.n_ctx - 1} (or -1 for the last)")
    _refuse_large(model, source)
    if probe.hook == LEAD:
        contexts, values, present, predicted, undecided = _leads(model, source, position)
    else:
        contexts, values, present, predicted = probe_values(model, probe, source.shape, position)
    keys, group_of, not_judged = _groups(model, contexts, source.rule, by, predicted)
    value = np.concatenate(values)  # [n]
    group = np.concatenate(group_of)  # [n], -1: in no group
    has = np.concatenate(present)  # [n]
    in_group = has & (group >= 0)
    too_short = int((~has & (group >= 0)).sum())  # the ones the rule does not judge are counted there, once
    if not in_group.any():
        raise HandwiredError(f"{probe.name}: no context has a value there to group")
    value, group = value[in_group], group[in_group]
    edges = axis(value)
    used = sorted(set(group.tolist()))
    stats = tuple(group_stats(keys[g], value[group == g], edges) for g in used)
    separation = separate(keys, value, group) if len(used) > 1 else None
    if probe.hook == LEAD:  # every context has a last position; the ones without a lead are the rule's
        not_judged, too_short = undecided, 0
    return Spread(probe, position, by, source.description, stats, edges, separation, len(has), int(in_group.sum()),
                  not_judged, too_short)


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
    assert rule is not None, "spread() refuses by answer without a rule, before any work"
    for batch in contexts:
        judgement = rule.judge(batch)
        decided = judgement.status == DECIDED  # [n]
        not_judged += int((~decided).sum())
        groups.append(np.where(decided, np.argmax(judgement.acceptable, axis=1), -1))
    return keys, groups, not_judged
