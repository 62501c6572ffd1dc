"""A trace's record for programs: every intermediate of one context under its TransformerLens hook name, with
labels for each axis, as JSON. ``explain --json`` prints it."""

import math

import numpy as np

from handwired.engine.probe import HEAD_DIMS
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
    if last in ("hook_pattern", "hook_attn_scores", "scores_before_mask"):  # [head, query, key]
        return [{"name": "head", "labels": heads}, {"name": "query position", "labels": positions},
                {"name": "key position", "labels": positions}]
    if hook in ("logits", "probs"):
        return [{"name": "position", "labels": positions}, {"name": "next token", "labels": list(model.vocab)}]
    if hook.endswith(("mlp.hook_pre", "mlp.hook_post")):
        block = int(hook.split(".")[1])
        units = list(model.axes(f"blocks[{block}].mlp.c_fc.w")[1].labels)
        return [{"name": "position", "labels": positions}, {"name": "hidden unit", "labels": units}]
    return [{"name": "position", "labels": positions}, {"name": "residual dim", "labels": list(model.dims)}]


def record_json(model: Model, trace: Trace) -> dict:
    """The context, then every intermediate: its shape, its axes with labels, and its values."""
    return {
        **context_json(model, trace),
        "intermediates": {
            hook: {"shape": list(value.shape), "axes": axes(model, trace, hook, value.shape), "values": _plain(value)}
            for hook, value in trace.record.items()
        },
    }
