"""A blank to wire by hand: an all-zero weight document that validates, a few lines long."""

from typing import Any

from handwired.errors import HandwiredError, bad_value
from handwired.weightfile.checker import MAX_SIZE
from handwired.weightfile.parse import FORMAT, MAX_PARAMETERS, parameter_count


def starter_document(vocab: str, n_ctx: int, n_embd: int, n_head: int = 1, n_layer: int = 1) -> dict[str, Any]:
    """An all-zero weight document in the sparse form, with ``dims`` labels d0… and an example."""
    if not vocab or len(set(vocab)) != len(vocab):
        raise bad_value("vocab", repr(vocab), "expected distinct characters, e.g. ab")
    for name, value, lowest in (("n_ctx", n_ctx, 1), ("n_embd", n_embd, 1), ("n_head", n_head, 1),
                                ("n_layer", n_layer, 0)):
        if not lowest <= value <= MAX_SIZE:
            raise bad_value(name, value, f"expected {lowest} to {MAX_SIZE}")
    if n_embd % n_head:
        raise HandwiredError(f"{{n_embd}} {n_embd} is not divisible by {{n_head}} {n_head}", ("n_embd", "n_head"))
    tokens = list(vocab)
    size = parameter_count(len(tokens), n_ctx, n_embd, n_layer)
    if size > MAX_PARAMETERS:
        raise HandwiredError(f"{size:,} weights: more than handwired supports ({MAX_PARAMETERS:,}); "
                             "choose a smaller {n_embd}, {n_ctx} or {n_layer}", ("n_embd", "n_ctx", "n_layer"))
    example = "".join(tokens[i % len(tokens)] for i in range(n_ctx))
    return {
        "format": FORMAT,
        "name": "starter",
        "description": "All zeros: every token is equally likely until you wire it. Write only the non-zero "
        "entries, by label, e.g. \"wte\": {\"" + tokens[0] + "\": {\"d0\": 1}}.",
        "vocab": tokens,
        "n_ctx": n_ctx,
        "n_embd": n_embd,
        "n_head": n_head,
        "constants": {},
        "dims": [f"d{i}" for i in range(n_embd)],
        "example": example,
        "wte": {},
        "wpe": {},
        "blocks": [{"attn": {"c_attn": {"w": {}}, "c_proj": {"w": {}}}} for _ in range(n_layer)],
    }
