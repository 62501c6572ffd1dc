"""What an edit changed: the weights that differ, by label, and the contexts whose answer moved.

Weights are compared entry by entry under the labels of the sparse weight
format, which the views print too: ``wte.a.p0``, ``wpe.3.p3``,
``blocks[0].attn.c_attn.w.p1.q0``, ``blocks[0].attn.c_proj.w.z7.b``,
``blocks[0].mlp.c_fc.b.h2``, ``ln_f.g.out``. Contexts are every context the
models can see (check's exhaustive enumeration) or, when there are too many, a
sample of them, each run through both models with check's batch evaluation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from handwired import budget
from handwired.defaults import CHANGES_SHOWN, DIFF_SAMPLE, SEED
from handwired.engine.batch import next_logits_distinct
from handwired.engine.cost import compare_cost, forward_seconds
from handwired.engine.memory import gigabytes
from handwired.errors import HandwiredError, bad_value
from handwired.judge.checking.contexts import (
    MAX_EXHAUSTIVE_SECONDS,
    MAX_RUN_SECONDS,
    count_contexts,
    duration,
    exhaustive_contexts,
    how_many,
    random_contexts,
    shortest_first,
)
from handwired.judge.checking.plans import Plan, pattern_rule
from handwired.judge.checking.report import leads
from handwired.judge.kinds.rules import DECIDED
from handwired.weightfile import Model
from handwired.weightfile.axes import Axis, shown
from handwired.weightfile.checker import locate
from handwired.weightfile.heads import QKV_MEANING, Z_MEANING, numbered

# Contexts compared one by one (two per-context forward passes each) before diff samples instead; check --exhaustive's
# own limit is its estimated time (contexts.MAX_EXHAUSTIVE_SECONDS), with a larger count cap.
MAX_EVERY = 20_000_000


@dataclass(frozen=True)
class WeightChange:
    label: str
    old: float | None  # None: the entry is not in that file (no such dim, block or LayerNorm)
    new: float | None


@dataclass(frozen=True)
class Answer:
    """One model's answer on one context."""

    prediction: str
    tied: bool  # the predicted token shares the top logit with another
    margin: float  # the predicted token's lead over the runner-up (0 on a tie)
    right: bool | None  # the prediction is an acceptable next token; None: the target does not judge it
    lead: float | None = None  # the right token's lead over the best wrong one (< 0 when wrong); None: not judged


@dataclass(frozen=True)
class ContextChange:
    context: str
    expected: tuple[str, ...]  # acceptable next tokens under the target; () when not judged
    old: Answer
    new: Answer


@dataclass
class Diff:
    weights: list[WeightChange]
    checked: str  # which contexts were compared, in words
    target: str | None  # the pattern that judged right and wrong, if any
    puzzle: str | None = None  # the puzzle whose rule judged right and wrong, on its contexts only, if any
    contexts: int = 0  # how many were compared
    changed: int = 0  # contexts whose prediction or margin changed
    predictions: int = 0  # of those, the prediction (or tie) changed
    now_right: int = 0  # judged contexts the old model got wrong and the new one gets right: fixed
    now_wrong: int = 0  # broken
    margin_only: int = 0  # judged contexts that changed and are right (or wrong) in both
    shown: list[ContextChange] = field(default_factory=list)  # the shortest changes, at most `show`


# ---------------------------------------------------------------- weights


def labelled_weights(model: Model) -> dict[str, float]:
    """Every weight entry under its label, in the order of the file: ``path.row.col`` or ``path.label``,
    the JSON path of the entry in the sparse form (as error messages name it)."""
    return {label: value for _, label, value in _entries(model)}


def _entries(model: Model, paths: Iterable[str] | None = None) -> Iterator[tuple[str, str, float]]:
    """(key, label, value) for every weight entry (of ``paths`` only, if given). The key names a head dim by its
    number (``q0``) even where the file names it (``q:pos``), so naming a head's dims is not a change of weights."""
    for path in model.written.axes if paths is None else paths:
        axes, values = model.written.axes[path], locate(model.params, path)
        keys = _keys(model, path)
        if len(axes) == 1:
            for key, label, value in zip(keys[0], axes[0].labels, values):
                yield f"{path}.{key}", f"{path}.{label}", float(value)
            continue
        for row_key, row, line in zip(keys[0], axes[0].labels, values):
            for col_key, col, value in zip(keys[1], axes[1].labels, line):
                yield f"{path}.{row_key}.{col_key}", f"{path}.{row}.{col}", float(value)


def _keys(model: Model, path: str) -> tuple[tuple[str, ...], ...]:
    return tuple(_numbered(axis, model.n_embd) for axis in model.written.axes[path])


def _numbered(axis: Axis, n_embd: int) -> tuple[str, ...]:
    qkv, z = numbered(n_embd)
    return {QKV_MEANING: qkv.labels, Z_MEANING: z.labels}.get(axis.meaning, axis.labels)


def weight_changes(old: Model, new: Model) -> list[WeightChange]:
    """The entries whose value differs, in the old file's order, then the new file's own entries, each by the new
    file's label where it has the entry.

    An entry only one file has (its dim, block or LayerNorm is not in the other) is listed when it is
    not 0: a zero there contributes nothing either way, as a left-out sparse entry. A matrix both files
    have with the same rows and columns is compared as one array (a model can have millions of entries).
    """
    same = _same_axes(old, new)
    refuse_slow_weights(old, new, same)
    changes: list[WeightChange] = []
    for path in old.written.axes:
        changes += _array_changes(old, new, path) if path in same else _entry_changes(old, new, path)
    for path in new.written.axes:
        if path not in same:
            before = {key for key, _, _ in _entries(old, [path] if path in old.written.axes else [])}
            changes += [WeightChange(label, None, value) for key, label, value in _entries(new, [path])
                        if key not in before and value != 0]
    return changes


def _same_axes(old: Model, new: Model) -> set[str]:
    """The matrices (and vectors) both files have with the same rows and columns: compared as arrays."""
    return {path for path in old.written.axes if path in new.written.axes and _keys(old, path) == _keys(new, path)}


def most_changes(old: Model, new: Model, same: set[str] | None = None) -> int:
    """At most how many weight changes :func:`weight_changes` lists, counted as arrays before any is made: the
    entries that differ where the rows and columns are the same, and elsewhere every entry that is not 0 in one
    file or the other (two zeros are no change)."""
    same = _same_axes(old, new) if same is None else same
    differing = sum(int(np.count_nonzero(np.atleast_1d(locate(old.params, path)) != locate(new.params, path)))
                    for path in same)
    return differing + sum(int(np.count_nonzero(locate(model.params, path)))
                           for model in (old, new) for path in model.written.axes if path not in same)


def refuse_slow_weights(old: Model, new: Model, same: set[str]) -> None:
    """Refuse, before any entry is compared by label, weights whose comparison would take longer than an exhaustive
    check may (the budget's, by default MAX_EXHAUSTIVE_SECONDS) or whose changes would not fit its memory (see
    most_changes)."""
    by_label = sum(int(np.size(written)) for model in (old, new) for path, written in model.written.entries.items()
                   if path not in same)
    changes = most_changes(old, new, same)
    size, seconds = compare_cost(by_label, changes)
    if seconds > budget.seconds(MAX_EXHAUSTIVE_SECONDS):
        raise HandwiredError(f"{new.source}: {by_label:,} weights to compare one by one (their rows or columns differ "
                             f"from {old.source}'s) and up to {changes:,} changes to list: about {duration(seconds)}, "
                             f"more than the {duration(budget.seconds(MAX_EXHAUSTIVE_SECONDS))} handwired spends on "
                             f"it; diff compares two versions of one model, a few edits apart"
                             f"{budget.more_time(seconds)}", budget.TIME)
    if size > budget.memory():
        raise HandwiredError(f"{new.source}: up to {changes:,} weights that differ from {old.source}'s: about "
                             f"{gigabytes(size)} to list them, more than the "
                             f"{gigabytes(budget.memory())} handwired will use; diff compares two versions of one "
                             f"model, a few edits apart{budget.more_memory(size)}", budget.SPACE)


def _array_changes(old: Model, new: Model, path: str) -> list[WeightChange]:
    """The entries of one matrix (or vector) with the same rows and columns in both files that differ, row by row."""
    before, after = np.atleast_1d(locate(old.params, path)), np.atleast_1d(locate(new.params, path))
    labels = [axis.labels for axis in new.written.axes[path]]
    return [WeightChange(".".join([path, *(names[i] for names, i in zip(labels, where))]),
                         float(before[where]), float(after[where]))
            for where in map(tuple, np.argwhere(before != after))]


def _entry_changes(old: Model, new: Model, path: str) -> list[WeightChange]:
    """The old file's entries of one path that differ from the new file's or that it lacks (and are not 0)."""
    after = {key: (label, value) for key, label, value in _entries(new, [path] if path in new.written.axes else [])}
    return [WeightChange(after[key][0] if key in after else label, value, after[key][1] if key in after else None)
            for key, label, value in _entries(old, [path])
            if (key in after and after[key][1] != value) or (key not in after and value != 0)]


# ---------------------------------------------------------------- contexts


def _answers(model: Model, logits: np.ndarray, acceptable: np.ndarray | None) -> dict[str, Any]:
    """[n, n_vocab] logits -> per context: prediction, tie, margin over the runner-up, right or wrong, and the right
    token's lead over the best wrong one (right and lead: None without a rule)."""
    best = np.argmax(logits, axis=1)  # [n]; the first on a tie, as everywhere
    top = logits[np.arange(len(logits)), best]
    others = logits.copy()
    others[np.arange(len(logits)), best] = -np.inf
    runner_up = others.max(axis=1) if model.n_vocab > 1 else np.full(len(logits), -np.inf)
    right = acceptable[np.arange(len(logits)), best] & (top > runner_up) if acceptable is not None else None
    lead = leads(logits, acceptable) if acceptable is not None else None
    return {"best": best, "tied": top == runner_up, "margin": top - runner_up, "right": right, "lead": lead}


def _answer(model: Model, answers: dict[str, Any], row: int, judged: bool) -> Answer:
    return Answer(
        model.vocab[int(answers["best"][row])], bool(answers["tied"][row]), float(answers["margin"][row]),
        bool(answers["right"][row]) if judged else None, float(answers["lead"][row]) if judged else None,
    )


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Margins equal up to rounding (1e-9 relative) are the same; infinities must match exactly.
    scale = np.maximum(1.0, np.maximum(np.abs(np.where(np.isfinite(a), a, 0)), np.abs(np.where(np.isfinite(b), b, 0))))
    with np.errstate(invalid="ignore"):
        return (a == b) | (np.abs(a - b) <= 1e-9 * scale)


def compare(
    old: Model,
    new: Model,
    sample: int | None = None,
    seed: int = SEED,
    show: int = CHANGES_SHOWN,
    limit: int = MAX_EVERY,
    puzzle: tuple[str, Plan] | None = None,
) -> Diff:
    """Compare two models with the same vocab and n_ctx: weights by label, then answers context by context.

    Every context is compared when there are at most ``limit`` of them (and no
    ``sample`` is asked for); otherwise ``sample`` (default DIFF_SAMPLE) random ones.
    With ``puzzle`` (its name, and the plan that judges the old model by it), exactly
    the contexts the puzzle judges are compared, each sorted fixed, broken or margin only.
    """
    _comparable(old, new, show)
    if puzzle is not None:
        _refuse_slow_contexts(old, new, puzzle[1].total, "puzzle")
        return _by_puzzle(old, new, show, *puzzle)
    total = count_contexts(old)
    every = sum(forward_seconds(model, model.n_vocab**length, length)
                for model in (old, new) for length in range(1, old.n_ctx + 1))
    if sample is None and total <= limit and every <= budget.seconds(MAX_EXHAUSTIVE_SECONDS):
        batches: Iterator[np.ndarray] = exhaustive_contexts(old)
        checked = f"every context of length 1…{old.n_ctx} over {', '.join(map(shown, old.vocab))} ({total:,} contexts)"
    else:
        n = DIFF_SAMPLE if sample is None else sample
        _refuse_slow_contexts(old, new, n, "sample")
        batches = random_contexts(old, n, seed)()
        checked = f"{n:,} random contexts of length 1…{old.n_ctx} (seed {seed}) of {how_many(total)}"
    target = new.target or old.target
    rule = pattern_rule(new, target) if target else None
    result = Diff(weight_changes(old, new), checked, target)
    kept: dict[str, ContextChange] = {}
    for contexts in batches:
        judgement = rule.judge(contexts) if rule is not None else None
        acceptable = judgement.acceptable if judgement is not None else None
        judged = judgement.status == DECIDED if judgement is not None else np.zeros(len(contexts), dtype=bool)
        before = _answers(old, next_logits_distinct(old, contexts), acceptable)
        after = _answers(new, next_logits_distinct(new, contexts), acceptable)
        rows = np.flatnonzero(_tally(result, before, after, judged))
        if len(rows) == 0:
            continue
        # np.unique sorts a batch's rows (one length each) in vocab order; batches come shortest first.
        _, first = np.unique(contexts[rows], axis=0, return_index=True)
        for row in rows[first][:show]:
            context = old.decode(contexts[row])
            decided = bool(judged[row])  # judged only where there is a rule, and so acceptable tokens
            right = acceptable[row] if decided and acceptable is not None else np.zeros(0, dtype=bool)
            expected = tuple(old.vocab[i] for i in np.flatnonzero(right))
            kept.setdefault(context, ContextChange(context, expected, _answer(old, before, row, decided),
                                                   _answer(new, after, row, decided)))
    result.shown = sorted(kept.values(), key=lambda c: shortest_first(old.vocab, c.context))[:show]
    return result


def _refuse_slow_contexts(old: Model, new: Model, contexts: int, how: str) -> None:
    """Refuse, before any is run, ``contexts`` contexts (of up to n_ctx tokens) through both models when that would
    take more than the budget allows; ``how``: "sample" or "puzzle", which says what narrows it."""
    seconds = forward_seconds(old, contexts, old.n_ctx) + forward_seconds(new, contexts, new.n_ctx)
    if seconds <= budget.seconds(MAX_RUN_SECONDS):
        return
    narrow = ("give a smaller {sample}" if how == "sample" else
              "compare random contexts instead, e.g. {sample} 10000 (which leaves the puzzle out)")
    raise HandwiredError(f"{how_many(contexts)} contexts through both models: about {duration(seconds)} of "
                         f"comparing, more than the {duration(budget.seconds(MAX_RUN_SECONDS))} handwired will spend "
                         f"on it; {narrow}{budget.more_time(seconds)}", ("sample", *budget.TIME))


def _tally(result: Diff, before: dict, after: dict, judged: np.ndarray) -> np.ndarray:
    """Count one batch's changes into ``result``: predictions moved, margins changed, and among the ``judged``
    contexts [n] bool, those fixed, broken, or changed in margin only. Returns which contexts changed [n] bool."""
    moved = (before["best"] != after["best"]) | (before["tied"] != after["tied"])  # [n]
    changed = moved | ~_same(_judged_lead(before, judged), _judged_lead(after, judged))  # [n]
    if before["right"] is None:  # no rule: nothing is right or wrong
        fixed = broken = np.zeros(len(changed), dtype=bool)
    else:
        fixed, broken = judged & ~before["right"] & after["right"], judged & before["right"] & ~after["right"]
    result.contexts += len(changed)
    result.changed += int(changed.sum())
    result.predictions += int(moved.sum())
    result.now_right += int(fixed.sum())
    result.now_wrong += int(broken.sum())
    result.margin_only += int((changed & judged & ~fixed & ~broken).sum())
    return changed


def _judged_lead(answers: dict, judged: np.ndarray) -> np.ndarray:
    """[n]: the right token's lead where the rule judges the context, else the predicted token's margin."""
    return answers["margin"] if answers["lead"] is None else np.where(judged, answers["lead"], answers["margin"])


def _comparable(old: Model, new: Model, show: int) -> None:
    if old.vocab != new.vocab:
        raise HandwiredError(f"{new.source}: vocab {' '.join(map(shown, new.vocab))} differs from {old.source}'s "
                             f"{' '.join(map(shown, old.vocab))}; diff compares two versions of one model")
    if old.n_ctx != new.n_ctx:
        raise HandwiredError(f"{new.source}: n_ctx {new.n_ctx} differs from {old.source}'s {old.n_ctx}; "
                             "diff compares two versions of one model")
    if show < 1:
        raise bad_value("show", show, "expected 1 or more")


def _by_puzzle(old: Model, new: Model, show: int, name: str, plan: Plan) -> Diff:
    """Both models on every context the puzzle judges: each change fixed, broken or margin only."""
    result = Diff(weight_changes(old, new), plan.description, None, name)
    kept: dict[str, ContextChange] = {}
    for batch in plan.batches():
        judged = batch.judgement.status == DECIDED  # [n]; an ambiguous context is not judged
        contexts, acceptable = batch.contexts[judged], batch.judgement.acceptable[judged]
        old_logits = next_logits_distinct(old, contexts) if batch.logits is None else batch.logits[judged]
        before = _answers(old, old_logits, acceptable)
        after = _answers(new, next_logits_distinct(new, contexts), acceptable)
        changed = _tally(result, before, after, np.ones(len(contexts), dtype=bool))
        for row in np.flatnonzero(changed)[:show]:  # batches come shortest first, each in vocab order
            context = old.decode(contexts[row])
            expected = tuple(old.vocab[i] for i in np.flatnonzero(acceptable[row]))
            kept.setdefault(context, ContextChange(context, expected, _answer(old, before, row, True),
                                                   _answer(new, after, row, True)))
    result.shown = sorted(kept.values(), key=lambda c: shortest_first(old.vocab, c.context))[:show]
    return result
