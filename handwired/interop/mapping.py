"""handwired's parameters <-> TransformerLens's config and state dict, exactly, both ways.

handwired keeps GPT-2's fused layout (``c_attn.w`` is ``[n_embd, 3·n_embd]``, the
columns q | k | v, head ``h`` in columns ``h·d_head … (h+1)·d_head − 1`` of each);
TransformerLens keeps one matrix per head (``W_Q`` is ``[n_heads, d_model, d_head]``).
The mapping is reshapes and transposes only, so no number changes on the way.
"""

import math
from typing import Any

import numpy as np

from handwired.engine.forward import LN_EPS
from handwired.errors import HandwiredError
from handwired.weightfile import FORMAT, Model
from handwired.weightfile.checker import MAX_SIZE

# Activation names whose function is GPT-2's tanh GELU, the only one handwired computes.
TANH_GELU = ("gelu_new", "gelu_pytorch_tanh")
# What a TransformerLens state dict may carry beyond the weights: the causal mask and the
# masking value, buffers every attention layer registers. Checked, then dropped.
BUFFERS = ("attn.mask", "attn.IGNORE")


# ---------------------------------------------------------------- handwired -> TransformerLens


def normalization_type(model: Model) -> str | None:
    """``"LN"`` when every LayerNorm slot is filled, None when none is; refuse a mixture.

    TransformerLens has one switch for the whole model, and LayerNorm with gain 1 and
    bias 0 is not the identity, so a model with LayerNorm in some slots only has no exact
    counterpart there. A block without an MLP has no ln_2 slot (it becomes a zero MLP).
    """
    slots = []
    for i, block in enumerate(model.params["blocks"]):
        slots.append((f"blocks[{i}].ln_1", "ln_1" in block))
        if "mlp" in block:
            slots.append((f"blocks[{i}].ln_2", "ln_2" in block))
    slots.append(("ln_f", "ln_f" in model.params))
    present = [name for name, filled in slots if filled]
    absent = [name for name, filled in slots if not filled]
    if present and absent:
        raise HandwiredError(
            f"{model.source}: LayerNorm at {_few(present)} but not at {_few(absent)}; TransformerLens normalises "
            "all of these or none, so this model cannot be exported exactly (give every slot a LayerNorm, or none)"
        )
    return "LN" if present else None


def _few(names: list[str]) -> str:
    return ", ".join(names) if len(names) <= 4 else f"{', '.join(names[:4])} and {len(names) - 4} more"


def hidden_width(model: Model) -> int | None:
    """TransformerLens's d_mlp: the widest MLP (narrower ones are zero-padded), or None if attention-only."""
    widths = [block["mlp"]["c_fc"]["w"].shape[1] for block in model.params["blocks"] if "mlp" in block]
    return max(widths) if widths else None


def to_config(model: Model) -> dict[str, Any]:
    """The ``HookedTransformerConfig`` arguments for the model, as JSON values."""
    d_mlp = hidden_width(model)
    return {
        "model_name": model.name or "handwired",
        "d_model": model.n_embd,
        "d_head": model.d_head,
        "n_heads": model.n_head,
        "n_layers": model.n_layer,
        "n_ctx": model.n_ctx,
        "d_vocab": model.n_vocab,
        "d_vocab_out": model.n_vocab,
        "d_mlp": d_mlp,
        "act_fn": "gelu_new",  # GPT-2's tanh GELU; TransformerLens's "gelu" is the erf form
        "attn_only": d_mlp is None,
        "normalization_type": normalization_type(model),
        "eps": LN_EPS,
        "positional_embedding_type": "standard",
        "default_prepend_bos": False,
        "dtype": "float64",
    }


def to_state_dict(model: Model) -> dict[str, np.ndarray]:
    """The model's weights under TransformerLens's names and shapes, float64."""
    params, n_embd, n_head, d_head = model.params, model.n_embd, model.n_head, model.d_head
    norm = normalization_type(model)
    d_mlp = hidden_width(model)
    state = {"embed.W_E": params["wte"], "pos_embed.W_pos": params["wpe"]}
    for i, block in enumerate(params["blocks"]):
        prefix = f"blocks.{i}."
        c_attn, c_proj = block["attn"]["c_attn"], block["attn"]["c_proj"]
        for j, name in enumerate("QKV"):
            w = c_attn["w"][:, j * n_embd:(j + 1) * n_embd]  # [d_model, n_heads·d_head]
            b = c_attn["b"][j * n_embd:(j + 1) * n_embd]  # [n_heads·d_head]
            per_head = w.reshape(n_embd, n_head, d_head).transpose(1, 0, 2)  # [n_heads, d_model, d_head]
            state[prefix + f"attn.W_{name}"] = per_head
            state[prefix + f"attn.b_{name}"] = b.reshape(n_head, d_head)  # [n_heads, d_head]
        state[prefix + "attn.W_O"] = c_proj["w"].reshape(n_head, d_head, n_embd)  # [n_heads, d_head, d_model]
        state[prefix + "attn.b_O"] = c_proj["b"]  # [d_model]
        if norm == "LN":
            state.update(_norm(prefix + "ln1", block["ln_1"]))
        if d_mlp is None:
            continue
        if norm == "LN":
            # a block without an MLP has no ln_2; any gain and bias feed a zero MLP, so take the plain ones
            state.update(_norm(prefix + "ln2", block.get("ln_2", {"g": np.ones(n_embd), "b": np.zeros(n_embd)})))
        w_in, b_in, w_out = np.zeros((n_embd, d_mlp)), np.zeros(d_mlp), np.zeros((d_mlp, n_embd))
        b_out = np.zeros(n_embd)
        if "mlp" in block:  # zero-padded to d_mlp: a unit with zero weights in and out adds gelu(0)·0 = 0
            fc, proj = block["mlp"]["c_fc"], block["mlp"]["c_proj"]
            width = fc["w"].shape[1]
            w_in[:, :width], b_in[:width], w_out[:width], b_out = fc["w"], fc["b"], proj["w"], proj["b"]
        state.update({prefix + "mlp.W_in": w_in, prefix + "mlp.b_in": b_in,
                      prefix + "mlp.W_out": w_out, prefix + "mlp.b_out": b_out})
    if norm == "LN":
        state.update(_norm("ln_final", params["ln_f"]))
    state["unembed.W_U"] = params["wte"].T  # [d_model, d_vocab]: handwired's unembedding is tied
    state["unembed.b_U"] = np.zeros(model.n_vocab)
    return {name: np.ascontiguousarray(value, dtype=np.float64) for name, value in state.items()}


def _norm(prefix: str, norm: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {f"{prefix}.w": norm["g"], f"{prefix}.b": norm["b"]}


# ---------------------------------------------------------------- TransformerLens -> handwired

# Config keys whose value changes the computation, with the value handwired computes
# (None: the key may be absent or null). Anything else in a config only names or places the
# model (model_name, device, seed, tokenizer_name …) and is ignored.
MUST_BE = {
    "positional_embedding_type": ("standard", "rotary positions, ALiBi or shortformer positions"),
    "attention_dir": ("causal", "bidirectional attention"),
    "use_attn_scale": (True, "attention without the 1/√d_head scale"),
    "use_local_attn": (False, "local attention"),
    "parallel_attn_mlp": (False, "attention and MLP in parallel"),
    "gated_mlp": (False, "a gated MLP"),
    "final_rms": (False, "a final RMSNorm"),
    "use_split_qkv_input": (False, "split q/k/v inputs"),
    "use_attn_in": (False, "split attention inputs"),
    "use_qk_norm": (False, "q/k normalisation"),
    "use_normalization_before_and_after": (False, "normalisation before and after each layer"),
    "num_experts": (None, "a mixture of experts"),
    "n_key_value_heads": (None, "grouped-query attention"),
    "rotary_dim": (None, "rotary positions"),
    "attn_scores_soft_cap": (-1.0, "soft-capped attention scores"),
    "output_logits_soft_cap": (-1.0, "soft-capped logits"),
    "relative_attention_max_distance": (None, "relative attention"),
    "relative_attention_num_buckets": (None, "relative attention"),
    "clip_qkv": (None, "clipped q, k and v"),
    "use_logn_attn": (False, "log-n attention scaling"),
    "scale_attn_by_inverse_layer_idx": (False, "attention scaled by the block's index"),
    "post_embedding_ln": (False, "a LayerNorm after the embedding"),
    "use_attention_sinks": (False, "attention sinks"),
    "attn_types": (None, "local attention"),
    "scale_embedding": (False, "a scaled embedding"),
    "per_layer_head_dim": (None, "blocks with different head sizes"),
    "per_layer_num_key_value_heads": (None, "grouped-query attention"),
    "decoder_start_token_id": (None, "an encoder-decoder model"),
}
NORMALIZATION = (None, "LN", "LNPre")  # LNPre: LayerNorm without gain and bias


def read_config(config: Any, source: str) -> dict[str, Any]:
    """Check a TransformerLens config against what handwired/1 can hold; return the sizes."""

    def fail(message: str) -> HandwiredError:
        return HandwiredError(f"{source}: {message}")

    if not isinstance(config, dict):
        raise fail("expected an object of HookedTransformerConfig arguments")
    sizes = {}
    for key in ("d_model", "n_heads", "n_layers", "n_ctx", "d_vocab"):
        sizes[key] = _size(config, key, fail, minimum=0 if key == "n_layers" else 1)
    sizes["d_head"] = _size(config, "d_head", fail) if "d_head" in config else sizes["d_model"] // sizes["n_heads"]
    if sizes["n_heads"] * sizes["d_head"] != sizes["d_model"]:
        raise fail(f"n_heads·d_head = {sizes['n_heads']}·{sizes['d_head']} ≠ d_model {sizes['d_model']}; handwired "
                   "splits the residual width evenly among the heads")
    d_vocab_out = config.get("d_vocab_out", -1)
    if d_vocab_out not in (-1, None, sizes["d_vocab"]):
        raise fail(f"d_vocab_out {d_vocab_out} ≠ d_vocab {sizes['d_vocab']}; handwired's unembedding is the "
                   "embedding transposed")
    attn_only = config.get("attn_only", False)
    if not isinstance(attn_only, bool):
        raise fail(f"attn_only: expected true or false; found {attn_only!r}")
    sizes["attn_only"] = attn_only
    if not attn_only:
        sizes["d_mlp"] = _size(config, "d_mlp", fail)
        act_fn = config.get("act_fn")
        if act_fn not in TANH_GELU:
            raise fail(f"act_fn {act_fn!r}: handwired computes only GPT-2's tanh GELU (\"gelu_new\")")
    norm = config.get("normalization_type", "LN")
    if norm not in NORMALIZATION:
        raise fail(f"normalization_type {norm!r}: handwired has LayerNorm only (\"LN\", \"LNPre\" or null)")
    sizes["normalization_type"] = norm
    eps = config.get("eps", LN_EPS)
    if norm is not None and eps != LN_EPS:
        raise fail(f"eps {eps!r}: handwired's LayerNorm uses eps {LN_EPS}")
    attn_scale = config.get("attn_scale", -1.0)
    if attn_scale not in (-1.0, math.sqrt(sizes["d_head"])) and config.get("use_attn_scale", True):
        raise fail(f"attn_scale {attn_scale!r}: handwired divides attention scores by √d_head = "
                   f"{math.sqrt(sizes['d_head']):g}")
    for key, (wanted, meaning) in MUST_BE.items():
        if key in config and config[key] != wanted:
            raise fail(f"{key} {config[key]!r}: handwired cannot hold {meaning}")
    return sizes


def _size(config: dict, key: str, fail, minimum: int = 1) -> int:
    if key not in config:
        raise fail(f"missing {key!r}")
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise fail(f"{key}: expected a whole number ≥ {minimum}; found {value!r}")
    if value > MAX_SIZE:
        raise fail(f"{key} {value} is more than handwired supports (at most {MAX_SIZE})")
    return value


def expected_shapes(sizes: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Every tensor a TransformerLens state dict of these sizes holds, with its shape."""
    d_model, n_heads, d_head, d_vocab = sizes["d_model"], sizes["n_heads"], sizes["d_head"], sizes["d_vocab"]
    layer_norm = sizes["normalization_type"] == "LN"
    shapes: dict[str, tuple[int, ...]] = {"embed.W_E": (d_vocab, d_model), "pos_embed.W_pos": (sizes["n_ctx"], d_model)}
    for i in range(sizes["n_layers"]):
        prefix = f"blocks.{i}."
        if layer_norm:
            shapes.update({prefix + "ln1.w": (d_model,), prefix + "ln1.b": (d_model,)})
        for name in "QKV":
            shapes[prefix + f"attn.W_{name}"] = (n_heads, d_model, d_head)
            shapes[prefix + f"attn.b_{name}"] = (n_heads, d_head)
        shapes.update({prefix + "attn.W_O": (n_heads, d_head, d_model), prefix + "attn.b_O": (d_model,)})
        if not sizes["attn_only"]:
            d_mlp = sizes["d_mlp"]
            if layer_norm:
                shapes.update({prefix + "ln2.w": (d_model,), prefix + "ln2.b": (d_model,)})
            shapes.update({prefix + "mlp.W_in": (d_model, d_mlp), prefix + "mlp.b_in": (d_mlp,),
                           prefix + "mlp.W_out": (d_mlp, d_model), prefix + "mlp.b_out": (d_model,)})
    if layer_norm:
        shapes.update({"ln_final.w": (d_model,), "ln_final.b": (d_model,)})
    shapes.update({"unembed.W_U": (d_model, d_vocab), "unembed.b_U": (d_vocab,)})
    return shapes


def check_tensors(state: dict[str, np.ndarray], sizes: dict[str, Any], source: str) -> dict[str, np.ndarray]:
    """Missing, extra or misshapen tensors, or an unembedding handwired cannot tie: one line each, first found."""
    shapes = expected_shapes(sizes)
    missing = [name for name in shapes if name not in state]
    if missing:
        raise HandwiredError(f"{source}: missing tensor {_few(missing)} (the config asks for {len(shapes)} tensors)")
    extra = [name for name in state if name not in shapes and not _is_buffer(name, sizes["n_layers"])]
    if extra:
        raise HandwiredError(f"{source}: unexpected tensor {_few(extra)} for a model with this config")
    for name, shape in shapes.items():
        found = tuple(state[name].shape)
        if found != shape:
            raise HandwiredError(f"{source}: {name} has shape {list(found)}, the config makes it {list(shape)}")
        if state[name].dtype.kind != "f":
            raise HandwiredError(f"{source}: {name} holds {state[name].dtype} values; expected floating point numbers")
        if not np.all(np.isfinite(state[name])):
            raise HandwiredError(f"{source}: {name} holds a value that is not a finite number")
    for name in state:  # the .mask buffers are rebuilt from the config (3.x even saves them empty)
        if name.endswith(".IGNORE") and not (state[name].shape == () and np.isneginf(state[name])):
            raise HandwiredError(f"{source}: {name} is {state[name].tolist()}; handwired masks attention with −∞")
    if not np.array_equal(state["unembed.W_U"], state["embed.W_E"].T):
        raise HandwiredError(f"{source}: unembed.W_U is not embed.W_E transposed; handwired's unembedding is tied "
                             "to the embedding, so it cannot hold this model")
    if np.any(state["unembed.b_U"] != 0):
        raise HandwiredError(f"{source}: unembed.b_U is not zero; handwired's unembedding has no bias")
    # float16 and float32 widen to float64 exactly
    return {name: state[name].astype(np.float64) for name in shapes}


def _is_buffer(name: str, n_layers: int) -> bool:
    head, _, rest = name.partition(".")
    index, _, buffer = rest.partition(".")
    return head == "blocks" and index.isdigit() and int(index) < n_layers and buffer in BUFFERS


def to_document(state: dict[str, np.ndarray], sizes: dict[str, Any], vocab: list[str],
                about: dict[str, Any]) -> dict[str, Any]:
    """A handwired/1 document holding exactly these weights (checked by :func:`check_tensors`).

    The zero MLPs and zero padding an export adds are taken off again, so an exported
    model comes back as it was; LNPre (LayerNorm without gain and bias) becomes gain 1, bias 0.
    """
    d_model, n_heads, d_head = sizes["d_model"], sizes["n_heads"], sizes["d_head"]
    norm = sizes["normalization_type"]

    def layer_norm(prefix: str) -> dict[str, Any]:
        if norm == "LN":
            return {"g": _numbers(state[prefix + ".w"]), "b": _numbers(state[prefix + ".b"])}
        return {"g": [1] * d_model, "b": [0] * d_model}

    blocks = []
    for i in range(sizes["n_layers"]):
        prefix = f"blocks.{i}."
        w = np.concatenate([state[prefix + f"attn.W_{name}"].transpose(1, 0, 2).reshape(d_model, n_heads * d_head)
                            for name in "QKV"], axis=1)  # [d_model, 3·d_model]: q | k | v, heads side by side
        b = np.concatenate([state[prefix + f"attn.b_{name}"].reshape(-1) for name in "QKV"])  # [3·d_model]
        heads = (about.get("heads") or {}).get(str(i))
        block: dict[str, Any] = {"attn": {
            **({"heads": heads} if heads is not None else {}),
            "c_attn": {"w": _numbers(w), "b": _numbers(b)},
            "c_proj": {"w": _numbers(state[prefix + "attn.W_O"].reshape(n_heads * d_head, d_model)),
                       "b": _numbers(state[prefix + "attn.b_O"])},
        }}
        if norm is not None:
            block["ln_1"] = layer_norm(prefix + "ln1")
        if not sizes["attn_only"]:
            mlp = _mlp(state, prefix, (about.get("hidden") or {}).get(str(i)))
            if mlp is not None:
                if norm is not None:
                    block["ln_2"] = layer_norm(prefix + "ln2")
                block["mlp"] = mlp
        blocks.append(block)

    doc: dict[str, Any] = {"format": FORMAT}
    for key in ("name", "description"):
        if about.get(key):
            doc[key] = about[key]
    doc.update({"vocab": vocab, "n_ctx": sizes["n_ctx"], "n_embd": d_model, "n_head": n_heads,
                "dims": about.get("dims") or [f"d{i}" for i in range(d_model)]})
    for key in ("example", "target", "puzzle"):
        if about.get(key):
            doc[key] = about[key]
    doc.update({"wte": _numbers(state["embed.W_E"]), "wpe": _numbers(state["pos_embed.W_pos"]), "blocks": blocks})
    if norm is not None:
        doc["ln_f"] = layer_norm("ln_final")
    return doc


def _mlp(state: dict[str, np.ndarray], prefix: str, hidden: list[str] | None = None) -> dict[str, Any] | None:
    """A block's MLP without trailing all-zero hidden units; None if nothing is left (it adds zero).

    ``hidden``, the labels an export saved, gives the width back exactly (all-zero units included) and the names.
    """
    w_in, b_in = state[prefix + "mlp.W_in"], state[prefix + "mlp.b_in"]
    w_out, b_out = state[prefix + "mlp.W_out"], state[prefix + "mlp.b_out"]
    live = np.any(w_in != 0, axis=0) | (b_in != 0) | np.any(w_out != 0, axis=1)  # [d_mlp]
    width = int(np.flatnonzero(live)[-1]) + 1 if live.any() else 0
    if width == 0 and not b_out.any() and not hidden:
        return None
    if hidden and width <= len(hidden) <= len(b_in):
        width = len(hidden)
    else:
        hidden = None  # labels that do not fit these tensors: the units are numbered instead
    width = max(width, 1)  # a weight file's MLP has at least one hidden unit
    mlp = {"c_fc": {"w": _numbers(w_in[:, :width]), "b": _numbers(b_in[:width])},
           "c_proj": {"w": _numbers(w_out[:width]), "b": _numbers(b_out)}}
    return {"hidden": list(hidden), **mlp} if hidden else mlp


def _numbers(array: np.ndarray) -> list:
    """Nested lists of JSON numbers: whole numbers as integers, others as the shortest exact decimal."""
    numbers = _whole(np.asarray(array, dtype=np.float64).tolist())
    assert isinstance(numbers, list), "a vector or a matrix, never a lone number"
    return numbers


def _whole(value):
    if isinstance(value, list):
        return [_whole(item) for item in value]
    return int(value) if value.is_integer() and abs(value) < 2**53 else value
