"""Proof by cases: a domain judged by branch and bound over sets of contexts, never walked one by one.

A *case* is a set of contexts of one length: at each input position a set of tokens (the domain's start token,
a template's fixed tokens and the separator are sets of one), then the answer so far, whose tokens the domain
derives from the input (:mod:`handwired.judge.kinds.case_rules`). The search starts from one case per input length and
answer token (every slot the whole alphabet) and, for each case:

* if every input position holds one token, the case is one context: it joins the *leaves*, judged exactly as the
  exhaustive walk judges them (the certified walk's numbers, :mod:`handwired.judge.checking.report`'s tally), so a
  failing leaf is a real counterexample with the float walk's logits, named as a failure;
* else the rule says the one right token over the case, or that it cannot; when it can, the case is evaluated in
  the certified arithmetic over cases (:mod:`handwired.engine.arithmetic.cases`) and is *proved* when the right token's
  lower bound is above every other token's upper bound: every one of its contexts is then passed and proved;
* a case not proved is split on the input position that matters most, into one case per token of its set: the
  position the rule names (the sum: the place whose carry is undecided, else the predicted place's digits), else
  the largest set, the latest on a tie.

It stops when no case is left, or when ``should_stop`` says so (Ctrl-C: the report is interrupted), or when the
budget is spent (``max_cases`` cases evaluated, or ``seconds`` gone): then what is left is counted
(:attr:`Proof.left`, the report's :class:`~handwired.judge.checking.report.CaseCounts`) — not proved, never counted
as proved. The margin of a proof by cases is a certified lower bound: the least, over its proved cases, of the right
token's lower bound less every other token's upper bound (and the leaves' own margins), at the case it was found in
(:func:`case_text`).
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod
from typing import Any

import numpy as np

from handwired.engine.arithmetic import cases as evaluating
from handwired.engine.arithmetic.certified import certified_walk
from handwired.engine.certify import logit_bounds
from handwired.engine.walk import Listed
from handwired.judge.checking.contexts import shortest_first
from handwired.judge.checking.plans import Batch
from handwired.judge.checking.report import CaseCounts, Margin, Report, _tally
from handwired.judge.kinds.domains import Domain
from handwired.judge.kinds.rules import Rule
from handwired.weightfile import Model

LEAVES = 4096  # single contexts judged together
FIRST_LEAVES = 256  # the first batch of them, judged sooner: a failing model's counterexample comes out early


@dataclass(frozen=True)
class Space:
    """The contexts a proof covers, as cases: an optional start token, inputs of each length given by a template
    (a token id per position, None for a slot of the alphabet), optionally of distinct tokens, and when ``answers``
    (a rule answering after its separator) each followed by the separator and every answer so far."""

    n_vocab: int
    start: int | None
    templates: tuple[tuple[int | None, ...], ...]
    alphabet: tuple[int, ...]
    distinct: bool
    answers: Any = None

    def groups(self) -> list[tuple[int, int | None]]:
        """(template index, answer tokens so far or None): one first case each."""
        if self.answers is None:
            return [(t, None) for t in range(len(self.templates))]
        return [(t, j) for t, template in enumerate(self.templates)
                for j in range(self.answers.answer_length(len(template)))]

    def first(self, group: tuple[int, int | None]) -> np.ndarray:
        """The group's first case: [1, L, n_vocab] bool, every slot the alphabet, the answer so far every token."""
        template, so_far = self.templates[group[0]], group[1]
        offset = int(self.start is not None)
        length = offset + len(template) + (0 if so_far is None else 1 + so_far)
        sets = np.ones((1, length, self.n_vocab), dtype=bool)
        if self.start is not None:
            sets[0, 0] = np.arange(self.n_vocab) == self.start
        for i, token in enumerate(template):
            sets[0, offset + i] = np.isin(np.arange(self.n_vocab), self.alphabet if token is None else [token])
        if so_far is not None:
            sets[0, offset + len(template)] = np.arange(self.n_vocab) == self.answers.separator
        return sets

    def slots(self, group: tuple[int, int | None]) -> list[int]:
        """The positions of a group's cases that may split: the template's slots."""
        offset = int(self.start is not None)
        return [offset + i for i, token in enumerate(self.templates[group[0]]) if token is None]


def space_of(domain: Domain | None, n_vocab: int, n_ctx: int, min_length: int = 1) -> Space:
    """A puzzle's domain as cases; without one, every string of length min_length…n_ctx."""
    if domain is None:
        return Space(n_vocab, None, tuple((None,) * k for k in range(min_length, n_ctx + 1)), tuple(range(n_vocab)),
                     False)
    inputs = domain.inputs
    templates = (inputs.template,) if inputs.template is not None else tuple((None,) * k for k in inputs.lengths)
    return Space(n_vocab, inputs.start, templates, inputs.alphabet, inputs.distinct, domain.rule)


def size(space: Space) -> int:
    """How many contexts a space's cases cover at most (every input with an answer, exact for strings)."""
    total = 0
    for group in space.groups():
        total += prod(int(n) for n in space.first(group)[0, space.slots(group)].sum(axis=1))
    return total


@dataclass
class Proof:
    """What a proof by cases found: the report (its counts and failures the walk's), how many cases were evaluated
    and proved, the deepest split, and what was left when it stopped (cases, and the contexts they hold)."""

    report: Report
    cases: int = 0  # evaluated in the certified arithmetic over cases
    proved_cases: int = 0  # of which proved whole
    leaves: int = 0  # single contexts judged by the walk's numbers
    deepest: int = 0  # the most splits above any case
    left: int = 0  # cases left unexamined when stopped
    left_contexts: int = 0  # the contexts they hold, at most
    seconds: float = 0.0
    failures: dict = field(default_factory=dict)  # context -> Failure, as the report keeps them
    spent: bool = False  # stopped by the budget (max_cases or seconds), not by should_stop
    lowest: tuple | None = None  # the least certified lead over proved cases: (lead, case text, right, wrong)

    @property
    def proved(self) -> bool:
        return self.report.ok and self.left == 0


def prove(model: Model, rule: Rule, space: Space, description: str, total: int, show: int = 10,
          max_cases: int | None = None, should_stop: Callable[[], bool] = lambda: False,
          seconds: float | None = None, progress: Callable[[int, int], None] | None = None,
          stop_at_failure: bool = False) -> Proof:
    """Branch and bound over ``space``'s cases (see the module): the proof, its report counting every context
    covered. ``max_cases`` and ``seconds`` (of wall-clock time): the budget, spent when it stops, not proved;
    ``should_stop`` is asked between batches (Ctrl-C); ``progress`` is told the contexts covered of ``total``;
    ``stop_at_failure``: stop once a batch of single contexts holds a counterexample (the rest left, counted),
    rather than split a failing model all the way down."""
    started, clock = time.process_time(), time.monotonic()
    proof = Proof(Report(description, rule.description, total, proof=True))
    proving, leaves = evaluating.prepare(model), []
    stack = [(group, space.first(group), np.zeros(1, dtype=np.intp)) for group in reversed(space.groups())]
    while stack:
        asked = should_stop()
        if asked or (max_cases is not None and proof.cases >= max_cases) or (
                seconds is not None and time.monotonic() - clock > seconds):
            _stopped(proof, space, stack, asked)
            break
        group, sets, depth = stack.pop()
        if len(sets) > evaluating.CHUNK:  # the rest waits, depth first
            stack.append((group, sets[evaluating.CHUNK:], depth[evaluating.CHUNK:]))
            sets, depth = sets[:evaluating.CHUNK], depth[:evaluating.CHUNK]
        children = _examine(model, rule, space, group, sets, depth, proving, proof, leaves)
        if sum(len(batch) for batch in leaves) >= (LEAVES if proof.leaves else FIRST_LEAVES):
            _judge_leaves(model, rule, leaves, proof, show)
            if stop_at_failure and proof.report.failed:
                if children is not None:
                    stack.append((group, *children))
                _stopped(proof, space, stack, False)
                proof.spent = False
                break
        if children is not None:
            stack.append((group, *children))
        if progress is not None:
            progress(proof.report.checked, total)
    _judge_leaves(model, rule, leaves, proof, show)
    proof.report.failures = sorted(proof.failures.values(),
                                   key=lambda f: shortest_first(model.vocab, f.context))[:show]
    proof.seconds = time.process_time() - started
    _lowest_margin(proof)
    proof.report.cases = CaseCounts(proof.cases, proof.proved_cases, proof.leaves, proof.deepest, proof.left,
                                    proof.left_contexts, proof.spent, proof.seconds)
    return proof


def _lowest_margin(proof: Proof) -> None:
    """The report's margin: the least of the leaves' margins and the proved cases' certified leads."""
    report = proof.report
    if proof.lowest is not None and (report.margin is None or proof.lowest[0] < report.margin.value):
        report.margin = Margin(*proof.lowest)


def _stopped(proof: Proof, space: Space, stack: list, asked: bool) -> None:
    proof.report.interrupted, proof.spent = asked, not asked
    for group, sets, _ in stack:
        counts = sets[:, space.slots(group)].sum(axis=2)
        proof.left += len(sets)
        proof.left_contexts += sum(prod(int(c) for c in row) for row in counts)


def _examine(model, rule, space: Space, group, sets, depth, proving, proof: Proof, leaves: list):
    """One batch of cases of a group: its single contexts to the leaves, the others the rule decides evaluated and
    counted when proved -> the children of the rest (sets, depth), or None."""
    slots = space.slots(group)
    counts = sets[:, slots].sum(axis=2)  # [n, slots]
    single = (counts == 1).all(axis=1)
    if single.any():
        leaves.append(_contexts(space, group, sets[single]))
    sets, depth, counts = sets[~single], depth[~single], counts[~single]
    if not len(sets):
        return None
    answer, split, box = _over(rule, space, group, sets)
    empty = ~np.all(box.any(axis=2), axis=1)  # a constraint no context of the case meets: nothing to judge
    decided = np.flatnonzero((answer >= 0) & ~empty)
    done = empty.copy()
    if len(decided):
        packed = evaluating.evaluate(model, box[decided], proving)
        lead, wrong = certified_leads(packed, answer[decided], model.n_vocab)
        proved = lead > 0
        _keep_lowest(proof, model.vocab, box[decided], lead, answer[decided], wrong)
        done[decided[proved]] = True
        proof.cases += len(decided)
        proof.proved_cases += int(proved.sum())
        covered = sum(_sizes(rule, space, group, sets[decided[proved]], counts[decided[proved]]))
        report = proof.report
        report.checked, report.passed, report.proved = (report.checked + covered, report.passed + covered,
                                                        report.proved + covered)
    todo = ~done
    if not todo.any():
        return None
    return _split(sets[todo], box[todo], depth[todo], counts[todo], slots, split[todo], proof,
                  getattr(rule, "split_off", None))


def _sizes(rule, space: Space, group, sets: np.ndarray, counts: np.ndarray) -> list[int]:
    """The contexts each case holds: the product of its slots' sizes, or the rule's count where the answer so far
    is constrained (split on)."""
    offset, k, so_far = int(space.start is not None), len(space.templates[group[0]]), group[1]
    if so_far:
        constraints = sets[:, offset + k + 1:]
        if not constraints.all() and hasattr(rule, "count_cases"):
            return rule.count_cases(sets[:, offset:offset + k], so_far, constraints)
    return [prod(int(c) for c in row) for row in counts]


def _over(rule, space: Space, group, sets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rule over each case: [n] right token or -1, [n] position to split or -1, and the box evaluated: the
    case's sets with the answer so far's narrowed to the tokens it may hold."""
    n, box = len(sets), sets.copy()
    over = getattr(rule, "over_cases", None)
    if over is None or space.distinct:  # it cannot say (distinct inputs: a case's size is no product)
        return np.full(n, -1), np.full(n, -1), box
    offset, k, so_far = int(space.start is not None), len(space.templates[group[0]]), group[1]
    if so_far is None:
        answer, _, split = over(sets[:, offset:offset + k], None)
    else:
        answer, derived, split = over(sets[:, offset:offset + k], so_far, sets[:, offset + k + 1:])
        box[:, offset + k + 1:] &= derived
    return answer, np.where(split >= 0, split + offset, -1), box


def certified_leads(packed: np.ndarray, answer: np.ndarray, n_vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """[n, 2*n_vocab] packed bounds, [n] right tokens -> ([n] the certified lead: the right token's lower bound less
    every other token's upper bound, -inf where a radius is not finite; [n] the wrong token of highest upper bound).
    A case is proved where its lead is above 0."""
    mid, rad = packed[:, :n_vocab], packed[:, n_vocab:]
    bounded = np.isfinite(rad).all(axis=1) & np.isfinite(mid).all(axis=1)
    lo, hi = logit_bounds(mid, np.where(np.isfinite(rad), rad, np.inf))
    rows = np.arange(len(answer))
    right = lo[rows, answer]
    hi[rows, answer] = -np.inf
    with np.errstate(invalid="ignore"):
        lead = np.where(bounded, right - hi.max(axis=1), -np.inf)
    return lead, np.argmax(hi, axis=1)


def _keep_lowest(proof: Proof, vocab: tuple[str, ...], box: np.ndarray, lead: np.ndarray, answer: np.ndarray,
                 wrong: np.ndarray) -> None:
    """Keep the least lead of the proved cases (the first on a tie), with its case's text."""
    proved = np.flatnonzero(lead > 0)
    if not len(proved):
        return
    row = int(proved[np.argmin(lead[proved])])
    if proof.lowest is None or lead[row] < proof.lowest[0]:
        proof.lowest = (float(lead[row]), case_text(vocab, box[row]), vocab[int(answer[row])], vocab[int(wrong[row])])


def case_text(vocab: tuple[str, ...], sets: np.ndarray) -> str:
    """A case as text: each position's token, or its set in brackets (``[0-9]`` for a run of the vocab), a set
    repeated k times in a row written once with ``{k}``: ``[0-9]{8}47+[0-9]{8}38=5``."""
    parts: list[str] = []
    for row in sets:
        tokens = np.flatnonzero(row).tolist()
        if len(tokens) == 1:
            parts.append(vocab[tokens[0]])
        elif len(tokens) >= 3 and tokens[-1] - tokens[0] == len(tokens) - 1:
            parts.append(f"[{vocab[tokens[0]]}-{vocab[tokens[-1]]}]")
        else:
            parts.append("[" + "".join(vocab[t] for t in tokens) + "]")
    out, i = [], 0
    while i < len(parts):
        j = i
        while j + 1 < len(parts) and parts[j + 1] == parts[i] and parts[i].startswith("["):
            j += 1
        out.append(parts[i] + (f"{{{j - i + 1}}}" if j > i else ""))
        i = j + 1
    return "".join(out)


def _split(sets, box, depth, counts, slots, split, proof: Proof, split_off=None) -> tuple[np.ndarray, np.ndarray]:
    """Each case -> one child per token its box allows at its split position (the rule's, else the largest set,
    the latest on a tie): an input position's set, or an answer so far's, which then constrains the case. A rule
    with ``split_off`` (the position's sets [n, V] -> the tokens [n, V] of each to split off, a non-empty part of
    it) splits in two instead: those tokens, and the rest (when any is left)."""
    largest = np.array(slots)[counts.shape[1] - 1 - np.argmax(counts[:, ::-1], axis=1)]
    position = np.where(split >= 0, split, largest)
    at_sets = box[np.arange(len(sets)), position]  # [n, V]
    proof.deepest = max(proof.deepest, int(depth.max()) + 1)
    if split_off is not None:
        part = split_off(at_sets) & at_sets
        halves = np.concatenate([part, at_sets & ~part])  # [2n, V]: the part split off, then the rest
        rows = np.flatnonzero(halves.any(axis=1))
        children = np.concatenate([sets, sets])[rows]
        children[np.arange(len(rows)), np.tile(position, 2)[rows]] = halves[rows]
        return children, np.tile(depth, 2)[rows] + 1
    rows, tokens = np.nonzero(at_sets)
    children = sets[rows]
    at = np.arange(len(rows))
    children[at, position[rows]] = False
    children[at, position[rows], tokens] = True
    return children, depth[rows] + 1


def _contexts(space: Space, group, sets: np.ndarray) -> np.ndarray:
    """Cases of one context each -> the contexts [m, L] in the domain (an input without an answer, or with a token
    twice in a distinct domain, is none)."""
    offset, k, so_far = int(space.start is not None), len(space.templates[group[0]]), group[1]
    tokens = np.argmax(sets[:, :offset + k], axis=2)  # [m, offset + k]
    keep = np.ones(len(tokens), dtype=bool)
    if space.distinct:
        drawn = np.sort(tokens[:, space.slots(group)], axis=1)
        keep &= ~(drawn[:, 1:] == drawn[:, :-1]).any(axis=1)
    if so_far is None:
        return tokens[keep]
    answers, valid = space.answers.answering(tokens[:, offset:])
    keep &= valid
    so_far_sets = sets[:, offset + k + 1:]  # the answer so far's constraints: a context they do not allow is
    rows, places = np.arange(len(tokens))[:, None], np.arange(so_far)[None]  # another case's
    keep &= so_far_sets[rows, places, answers[:, :so_far]].all(axis=1)
    separator = np.full((len(tokens), 1), space.answers.separator)
    return np.concatenate([tokens, separator, answers[:, :so_far]], axis=1)[keep]


def _judge_leaves(model: Model, rule: Rule, leaves: list, proof: Proof, show: int) -> None:
    """The single contexts, judged as the exhaustive walk judges them: the certified walk's numbers, the report's
    tally (a failure is the float walk's, forward's numbers)."""
    by_length: dict[int, list[np.ndarray]] = {}
    for batch in leaves:
        if len(batch):
            by_length.setdefault(batch.shape[1], []).append(batch)
    leaves.clear()
    for length in sorted(by_length):
        contexts = np.concatenate(by_length[length])
        proof.leaves += len(contexts)
        n = model.n_vocab
        for visit in certified_walk(model, Listed([contexts], n)):
            if visit.logits is not None and visit.judged.any():
                judged = visit.prefixes[visit.judged]
                packed = visit.logits[visit.judged]
                _tally(model, Batch(judged, rule.judge(judged), packed[:, :n], packed[:, n:]), proof.report,
                       proof.failures, show)


