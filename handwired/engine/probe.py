"""One number a model computes, named as the views name it, read at one position of many contexts at once.

A probe is a TransformerLens hook name and a column: ``blocks.0.mlp.hook_pre:ab`` (a hidden unit by its label),
``blocks.0.hook_resid_post:tok`` (a residual dim), ``blocks.0.attn.hook_z:z7`` (a head dim, numbered across the
heads as ``c_proj``'s rows are), ``logits:b`` (a token), or ``blocks.1.attn.hook_pattern:-2`` with a head (a key
position, indexed as Python indexes the query's row: ``0`` the first key, ``-1`` the query itself).

The values come from the walk of the contexts' prefix trie (:func:`handwired.engine.walk.float_walk`): by
causality, a context's value at position p is the value at the last position of its prefix of length p + 1, so
every prefix is computed once, however many contexts share it.
"""

from dataclasses import dataclass

import numpy as np

from handwired.engine.arithmetic.floats import float_walk
from handwired.engine.trace import trace
from handwired.engine.walk import Shape
from handwired.errors import HandwiredError, bad_head, bad_value
from handwired.weightfile import Model

HEAD_DIMS = {"hook_q": "q", "hook_k": "k", "hook_v": "v", "hook_z": "z"}  # the letter of each head's columns
KEY_HOOKS = ("hook_pattern", "hook_attn_scores", "scores_before_mask")  # [head, key]: a column is a key position


@dataclass(frozen=True)
class Probe:
    hook: str  # where the value is recorded, e.g. blocks.0.mlp.hook_pre
    column: str  # as given: a label, or a key position
    index: int  # into the hook's value at one position, flattened; for a key hook, the key position (may be < 0)
    head: int | None  # for a key hook
    op: str = ""  # "-" or "/": the value is this column minus, or divided by, a second one of the same hook
    other: "Probe | None" = None  # the second column

    @property
    def name(self) -> str:
        if not self.column:  # a quantity of its own, not a hook's column (the judge's lead)
            return self.hook
        head = f" head {self.head}" if self.head is not None else ""
        other = f"{self.op}{self.other.column}" if self.other is not None else ""
        return f"{self.hook}:{self.column}{other}{head}"

    @property
    def by_key(self) -> bool:
        return self.hook.endswith(KEY_HOOKS)


def hook_names(model: Model) -> list[str]:
    """Every intermediate the model records, in forward-pass order."""
    return list(trace(model, model.vocab[0]).record)


def column_labels(model: Model, hook: str) -> tuple[str, ...]:
    """The names of a hook's columns at one position, as the views print them."""
    last = hook.rsplit(".", 1)[-1]
    if hook in ("logits", "probs"):
        return model.vocab
    if last in HEAD_DIMS:  # every head's columns, as c_attn's sparse entries name them (q3, or q:pos)
        return model.head_labels(int(hook.split(".")[1]), HEAD_DIMS[last])
    if hook.endswith(("mlp.hook_pre", "mlp.hook_post")):
        block = int(hook.split(".")[1])
        return model.axes(f"blocks[{block}].mlp.c_fc.w")[1].labels
    return model.dims


def parse_probe(model: Model, text: str, head: int | None = None) -> Probe:
    """``HOOK:COLUMN`` -> a probe of the model; one line naming what is wrong otherwise. ``HOOK:A-B`` and
    ``HOOK:A/B`` are the difference and the ratio of two columns of one hook, when neither is a column itself."""
    hook, colon, column = text.partition(":")  # hooks hold no colon; a named head column does (q:pos)
    if not colon or not hook or not column:
        raise HandwiredError(f"{text!r}: expected HOOK:COLUMN, e.g. blocks.0.mlp.hook_pre:h0 or "
                             "blocks.0.hook_resid_post:tok")
    names = hook_names(model)
    if hook not in names:
        raise HandwiredError(f"{text!r}: the model records no {hook!r}; it records {', '.join(names)}")
    try:
        return _one_probe(model, text, hook, column, head)
    except HandwiredError as error:
        for at in (i for i, char in enumerate(column) if char in "-/" and 0 < i < len(column) - 1):
            try:
                first, second = (_one_probe(model, text, hook, part, head) for part in (column[:at], column[at + 1:]))
            except HandwiredError:
                continue
            return Probe(first.hook, first.column, first.index, first.head, column[at], second)
        raise error from None


def _one_probe(model: Model, text: str, hook: str, column: str, head: int | None) -> Probe:
    if hook.endswith(KEY_HOOKS):
        return _key_probe(model, hook, column, head)
    if head is not None:
        raise bad_value("head", head, f"{hook} has no heads to choose from; a head is for "
                        + ", ".join(f"attn.{name}" for name in KEY_HOOKS))
    labels = column_labels(model, hook)
    if column not in labels:
        raise HandwiredError(f"{text!r}: {hook} has no column {column!r}; its columns are {', '.join(labels)}")
    return Probe(hook, column, labels.index(column), None)


def _key_probe(model: Model, hook: str, column: str, head: int | None) -> Probe:
    if head is None:
        if model.n_head > 1:
            raise HandwiredError(f"{hook} has a pattern per head: choose one with {{head}} (0…{model.n_head - 1})",
                                 ("head",))
        head = 0
    if not 0 <= head < model.n_head:
        raise bad_head(head, model.n_head)
    try:
        key = int(column)
    except ValueError:
        raise HandwiredError(f"{hook}:{column}: a column of {hook} is a key position, e.g. 0 (the first), "
                             "-1 (the query itself) or -2 (the one before)") from None
    if not -model.n_ctx <= key < model.n_ctx:
        raise HandwiredError(f"{hook}:{column}: a key position is within {-model.n_ctx}…{model.n_ctx - 1}")
    return Probe(hook, column, key, head)


@dataclass(frozen=True)
class _Wanted:
    """A shape whose judged prefixes, and every prefix whose last position is probed, are evaluated in full."""

    shape: Shape
    lengths: frozenset[int]

    def children(self, prefixes: np.ndarray) -> np.ndarray:
        return self.shape.children(prefixes)

    def judged(self, prefixes: np.ndarray) -> np.ndarray:
        return self.shape.judged(prefixes) | (prefixes.shape[1] in self.lengths)


def probe_values(model: Model, probe: Probe, shape: Shape, position: int = -1
                 ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Every context of ``shape`` (walked as a trie, :mod:`handwired.engine.walk`), the probe's value at
    ``position`` of each, and the token each predicts (its top logit, the first on a tie). Returns, per batch of
    one length: (contexts [n, L]; values [n], float, nan where the context has no such position or key; which
    contexts have one [n] bool; predicted [n] token ids)."""
    at = {length: _prefix_length(length, position) for length in range(1, model.n_ctx + 1)}
    captured: list[np.ndarray] = []

    def hook(name: str, value: np.ndarray) -> None:
        if name == probe.hook:
            captured.append(value)

    contexts, logits, own, kept = [], [], [], {}  # kept: prefix length -> (prefixes, values), walk order
    wanted = _Wanted(shape, frozenset(p for p in at.values() if p is not None))
    for visit in float_walk(model, wanted, hook=hook, names=frozenset({probe.hook})):
        length = visit.prefixes.shape[1]
        if visit.logits is not None and not captured:
            raise HandwiredError(f"{probe.hook}: not recorded at that position")
        column = _column(probe, captured.pop(), length) if captured else None
        captured.clear()
        if column is not None and length in at.values():
            kept.setdefault(length, []).append((visit.prefixes, column))
        judged = shape.judged(visit.prefixes)
        if judged.any():
            if visit.logits is None or column is None:  # a judged node is evaluated in full, its hook called
                raise HandwiredError(f"{probe.hook}: not recorded at that position")
            contexts.append(visit.prefixes[judged])
            logits.append(np.argmax(visit.logits[judged], axis=1))
            own.append((column[0][judged], column[1][judged]) if at[length] == length else None)
    values, present = [], []
    levels = {length: _level(parts) for length, parts in kept.items()}
    for batch, mine in zip(contexts, own):
        prefix = at[batch.shape[1]]
        if mine is not None:
            value, ok = mine
        elif prefix is None:
            value, ok = np.full(len(batch), np.nan), np.zeros(len(batch), dtype=bool)
        else:
            rows, (value, ok) = levels[prefix]
            where = np.searchsorted(rows, _rows(batch[:, :prefix]))
            value, ok = value[where], ok[where]
        values.append(value)
        present.append(ok)
    return contexts, values, present, logits


def _rows(array: np.ndarray) -> np.ndarray:  # [n, L] -> [n] one comparable value per row (bytewise order)
    array = np.ascontiguousarray(array)
    return array.view(np.dtype((np.void, array.dtype.itemsize * array.shape[1]))).ravel()


def _level(parts: list) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """One length's nodes, walked in vocab order: their rows (searchable) and the probe's column at each."""
    rows = _rows(np.concatenate([prefixes for prefixes, _ in parts]))
    return rows, (np.concatenate([c[0] for _, c in parts]), np.concatenate([c[1] for _, c in parts]))


def _prefix_length(length: int, position: int) -> int | None:
    """The length of the prefix whose last position is ``position`` of a context of ``length``; None: none."""
    index = position if position >= 0 else length + position
    return index + 1 if 0 <= index < length else None


def _column(probe: Probe, level: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    # level [n, …] -> the probe's value [n] (one column, or two combined), and whether each context has it [n]
    value, ok = _one_column(probe, level, n_keys)
    if probe.other is None:
        return value, ok
    other, other_ok = _one_column(probe.other, level, n_keys)
    if probe.op == "-":
        return value - other, ok & other_ok
    with np.errstate(divide="ignore", invalid="ignore"):  # x/0 is ±inf or nan: such a context has no ratio
        ratio = value / other
    return ratio, ok & other_ok & np.isfinite(ratio)


def _one_column(probe: Probe, level: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    # level [n, …] -> the probe's column [n], and whether each context has it [n]
    n = len(level)
    if not probe.by_key:
        return level.reshape(n, -1)[:, probe.index], np.ones(n, dtype=bool)  # [n]
    key = probe.index if probe.index >= 0 else n_keys + probe.index
    if not 0 <= key < n_keys:  # the query sees keys 0…n_keys-1 only
        return np.full(n, np.nan), np.zeros(n, dtype=bool)
    return level[:, probe.head, key], np.ones(n, dtype=bool)  # [n, head, n_keys] -> [n]
