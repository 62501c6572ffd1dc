"""TransformerLens's short hook names: ``("pattern", 0)`` → ``blocks.0.attn.hook_pattern``, as its
``utils.get_act_name`` reads them (aliases such as ``"attn"`` for the pattern included)."""

from handwired.api.keywords import speaks_python

ATTENTION = ("q", "k", "v", "z", "pattern", "attn_scores", "result")
MLP = ("pre", "post")
LAYER_NORM = ("scale", "normalized", "out")
ALIASES = {"attn": "pattern", "attn_logits": "attn_scores", "key": "k", "query": "q", "value": "v",
           "mlp_pre": "pre", "mlp_post": "post"}
LAYER_TYPES = {"a": "attn", "attention": "attn", "m": "mlp", "b": "", "block": "", "blocks": ""}
OWN = {"scores_before_mask": "attn.scores_before_mask"}  # handwired's own, with no hook_ prefix


def full_name(name: str, layer: int | None = None, layer_type: str | None = None) -> str:
    """The full hook name a short form stands for; a full name (with a dot, or hook_…) is itself."""
    if layer is None and ("." in name or name.startswith("hook_") or name in ("logits", "probs")):
        return name
    name = ALIASES.get(name, name)
    prefix = "" if layer is None else f"blocks.{layer}."
    if name in OWN:
        return prefix + OWN[name]
    if name in ATTENTION:
        layer_type = "attn"
    elif name in MLP:
        layer_type = "mlp"
    elif layer_type is not None:
        layer_type = LAYER_TYPES.get(layer_type, layer_type)
    full = prefix + (f"{layer_type}." if layer_type else "") + f"hook_{name}"
    if name in LAYER_NORM and layer is None:
        full = f"ln_final.{full}"
    return full


def key_name(key: object, n_layer: int) -> str:
    """A cache key, ``name`` or ``(name, layer)`` or ``(name, layer, layer_type)``, as a full hook name; a negative
    layer counts from the last of the model's ``n_layer`` blocks, as in TransformerLens (``("pattern", -1)``)."""
    if isinstance(key, str):
        return full_name(key)
    if isinstance(key, tuple) and 1 <= len(key) <= 3 and isinstance(key[0], str):
        layer, layer_type = (*key[1:], None, None)[:2]
        if isinstance(layer, int) and layer < 0:
            layer += n_layer
        return full_name(key[0], layer, layer_type)
    raise KeyError(f"{key!r}: a hook is named by its name, e.g. 'blocks.0.attn.hook_pattern', or "
                   "(name, layer), e.g. ('pattern', 0)")


act_name = speaks_python(full_name)  # for callers: its arguments checked, as every public function's
