"""A trace's record for programs: every intermediate of one context under its TransformerLens hook name, with
labels for each axis, as JSON. ``explain --json`` prints it."""

import math

import numpy as np

from handwired.engine.probe import HEAD_DIMS, KEY_HOOKS, column_labels
from handwired.engine.trace import Trace
from handwired.views.model import context_json
from handwired.weightfile import Model


def _plain(values: np.ndarray):
    """Nested lists of floats; −∞ (a masked score) and nan as null, which JSON can hold."""
    if values.ndim == 0:
        value = float(values)
        return value if math.isfinite(value) else None
    return [_plain(row) for row in values]


def axes(model: Model, trace: Trace, hook: str, shape: tuple[int, ...]) -> list[dict]:
    """Each axis of the hook's value: its name and the label of every index along it."""
    positions = [f"{i}:{token}" for i, token in enumerate(trace.window)]
    heads = [str(h) for h in range(model.n_head)]
    last = hook.rsplit(".", 1)[-1]
    if last in HEAD_DIMS:  # [pos, head, d_head]: each head's own columns, numbered across heads as in c_attn
        letter, block = HEAD_DIMS[last], int(hook.split(".")[1])
        return [{"name": "position", "labels": positions}, {"name": "head", "labels": heads},
                {"name": f"{letter} dim", "labels_per_head": [list(model.head_labels(block, letter, h))
                                                             for h in range(model.n_head)]}]
    if last in KEY_HOOKS:  # [head, query, key]
        return [{"name": "head", "labels": heads}, {"name": "query position", "labels": positions},
                {"name": "key position", "labels": positions}]
    column = ("next token" if hook in ("logits", "probs")
              else "hidden unit" if hook.endswith(("mlp.hook_pre", "mlp.hook_post")) else "residual dim")
    return [{"name": "position", "labels": positions}, {"name": column, "labels": list(column_labels(model, hook))}]


def record_json(model: Model, trace: Trace) -> dict:
    """The context, then every intermediate: its shape, its axes with labels, and its values."""
    return {
        **context_json(model, trace),
        "intermediates": {
            hook: {"shape": list(value.shape), "axes": axes(model, trace, hook, value.shape), "values": _plain(value)}
            for hook, value in trace.record.items()
        },
    }
