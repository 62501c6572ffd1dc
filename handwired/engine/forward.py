"""The GPT-2 forward pass in numpy, float64, over a batch of contexts.

Small pure functions in picoGPT's manner. Every function takes a leading batch
axis; one context is a batch of one, so ``predict``, ``explain``, ``complete``
and ``check`` all run this same code.

When ``record`` is a dict, each intermediate is stored in it under a
TransformerLens hook name (``blocks.0.attn.hook_pattern`` …) with
TransformerLens's shapes and meanings: ``[batch, pos, head, d_head]`` for
q/k/v/z, ``[batch, head, query_pos, key_pos]`` for scores and pattern, and a
LayerNorm's ``hook_normalized`` before its gain and bias, ``hook_out`` after
them. The additions are ``blocks.{i}.attn.scores_before_mask``, the scaled
scores before the causal mask, which the explain view shows as its own step,
and ``logits`` and ``probs``. A ``hook(name, value)`` sees the same values and
may return a replacement, which the rest of the pass then uses (ablation,
patching); returning None keeps the value.
"""

import math
import sys

import numpy as np

LN_EPS = 1e-5
EXP_MAX = math.log(sys.float_info.max)  # exp of anything above is inf


def gelu(x):
    # GPT-2's tanh approximation 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), computed as the same
    # function x / (1 + exp(-2u)): exp costs a third of tanh, x·x·x a fraction of x**3, and in place.
    u = x * x
    u *= -2 * 0.044715 * math.sqrt(2 / math.pi)
    u -= 2 * math.sqrt(2 / math.pi)
    u *= x  # -2u
    # exp is many times slower where it overflows or nearly does, or falls below the normal numbers (an MLP unit
    # gated far off), so it is spared where that changes no result: below -40, 1 + exp(-2u) is 1 exactly; above
    # EXP_MAX exp is inf, and gelu x / inf (-0 far below zero)
    np.maximum(u, -40.0, out=u)
    over = u > EXP_MAX
    if not over.any():
        np.exp(u, out=u)
        u += 1
        return np.divide(x, u, out=u)
    # There exp is given 0 (1 + exp(0) is 2) and x / 2 is multiplied by 0: the ±0 of x / inf, bit for bit (NaN
    # where x is infinite, as inf / inf is). Multiplications cost the same wherever such units are; a masked
    # assignment costs many times more when they are many (add's MLP: 44% of its pre-activations).
    near = np.logical_not(over, out=over).astype(np.float64)  # [...]: 1 where exp is taken, 0 where it is spared
    np.minimum(u, 1e300, out=u)  # (an infinite u times 0 would be NaN)
    u *= near
    np.exp(u, out=u)
    u += 1
    np.divide(x, u, out=u)
    u *= near
    return u


def softmax(x, out=None, axis=-1):
    # subtracting the row max keeps exp from overflowing; exp(-inf) is exactly 0. out=x: in place
    e = np.subtract(x, np.max(x, axis=axis, keepdims=True), out=out)
    np.exp(e, out=e)
    e /= np.sum(e, axis=axis, keepdims=True)
    return e


def hooked(hook, name, value):
    # the value a hook hands back stands in for the one computed; None (a recording hook) keeps it
    new = hook(name, value)
    return value if new is None else new


def layer_norm(x, g, b, eps=LN_EPS, axis=-1):  # [..., n_embd] -> [..., n_embd] (axis: where n_embd is)
    centred, variance = centre(x, axis)
    return normalise(centred, variance, g, b, eps)


def centre(x, axis=-1):  # [..., n_embd] -> x - its mean [..., n_embd], and its variance [..., 1]
    centred = x - np.mean(x, axis=axis, keepdims=True)
    return centred, np.mean(centred * centred, axis=axis, keepdims=True)  # np.var's, without a second mean


def normalise(centred, variance, g, b, eps=LN_EPS):  # [..., n_embd], [..., 1] -> g·centred / √(variance + eps) + b
    centred *= g  # in place: the same operations in the same order as g * (x - mean) / √(variance + eps) + b
    centred /= np.sqrt(variance + eps)
    centred += b
    return centred


def hooked_layer_norm(x, params, hook, name):  # [..., n_embd] -> [..., n_embd]
    # LN(x) as layer_norm computes it, offering TransformerLens's two hooks: {name}.hook_normalized, the
    # normalised x before the gain and bias, and {name}.hook_out, after them (what the next layer reads)
    out = layer_norm(x, **params)
    if hook is None:
        return out
    centred, variance = centre(x)
    normalized = centred / np.sqrt(variance + LN_EPS)
    new = hook(f"{name}.hook_normalized", normalized)
    if new is not None:  # replaced: the gain and bias apply to the replacement
        out = new * params["g"] + params["b"]
    return hooked(hook, f"{name}.hook_out", out)


def matmul(x, w):  # [..., n_in] @ [n_in, n_out] -> [..., n_out]
    # One 2-D product for the whole batch: numpy would otherwise multiply context by context.
    return (x.reshape(-1, x.shape[-1]) @ w).reshape(*x.shape[:-1], w.shape[-1])


def linear(x, w, b):  # [..., n_in] @ [n_in, n_out] + [n_out] -> [..., n_out]
    # Hand-wired biases are mostly zero; skipping them saves a pass over the output.
    out = matmul(x, w)  # a new array: the bias is added in place
    if b.any():
        out += b
    return out


def causal_mask(n_query, n_key):  # -> [n_query, n_key]
    # The queries are the last n_query positions; each sees itself and every key before it.
    future = np.triu(np.ones((n_query, n_key), dtype=bool), k=n_key - n_query + 1)
    return np.where(future, -np.inf, 0.0)


def attention(q, k, v, mask, hook=None):
    # [batch, head, n_q, d_head], [batch, head, n_k, d_head] x2 -> [batch, head, n_q, d_head]
    scores = q @ np.swapaxes(k, -1, -2)  # [batch, head, n_q, n_k]
    scores /= np.sqrt(q.shape[-1])
    if hook is None:  # nothing keeps the intermediates: mask and softmax in place, the same arithmetic
        scores += mask
        return softmax(scores, out=scores) @ v
    scores = hooked(hook, "scores_before_mask", scores)
    masked = hooked(hook, "hook_attn_scores", scores + mask)
    pattern = hooked(hook, "hook_pattern", softmax(masked))
    return pattern @ v


def split_heads(x, n_head):  # [batch, n_seq, n_embd] -> [batch, head, n_seq, d_head]
    batch, n_seq, n_embd = x.shape
    return x.reshape(batch, n_seq, n_head, n_embd // n_head).transpose(0, 2, 1, 3)


def merge_heads(x):  # [batch, head, n_seq, d_head] -> [batch, n_seq, n_embd]
    batch, n_head, n_seq, d_head = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, n_seq, n_head * d_head)


def mha(x, c_attn, c_proj, n_head, n_query, hook=None, qkv=None, causal=True):
    # [batch, n_seq, n_embd] -> [batch, n_query, n_embd]: attention output for the last n_query positions
    # causal=False: bidirectional self-attention (an encoder's), every position sees every other
    n_embd = x.shape[-1]
    if qkv is None:
        w, b = c_attn["w"], c_attn["b"]  # columns: q | k | v
        # Only the last n_query positions ask a question; every position offers a key and a value.
        q = linear(x[:, -n_query:], w[:, :n_embd], b[:n_embd])  # [batch, n_query, n_embd]
        kv = linear(x, w[:, n_embd:], b[n_embd:])  # [batch, n_seq, 2*n_embd]
    else:  # looked up already (see qkv_table)
        q, kv = qkv[:, -n_query:, :n_embd], qkv[:, :, n_embd:]
    q = split_heads(q, n_head)  # [batch, head, n_query, d_head]
    k, v = (split_heads(part, n_head) for part in np.split(kv, 2, axis=-1))  # 2 x [batch, head, n_seq, d_head]
    if hook is not None:  # offered as [batch, pos, head, d_head], TransformerLens's layout, and taken back
        q, k, v = (hooked(hook, name, value.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
                   for name, value in (("hook_q", q), ("hook_k", k), ("hook_v", v)))
    mask = causal_mask(n_query, x.shape[1]) if causal else np.zeros((n_query, x.shape[1]))  # [n_query, n_seq]
    z = attention(q, k, v, mask, hook)  # [batch, head, n_query, d_head]
    if hook is not None:
        z = hooked(hook, "hook_z", z.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    return linear(merge_heads(z), **c_proj)  # [batch, n_query, n_embd]


def mlp(x, c_fc, c_proj, hook=None):  # [batch, n_seq, n_embd] -> [batch, n_seq, n_embd]
    pre = linear(x, **c_fc)  # [batch, n_seq, n_hidden]
    if hook is not None:
        pre = hooked(hook, "mlp.hook_pre", pre)
    post = gelu(pre)
    if hook is not None:
        post = hooked(hook, "mlp.hook_post", post)
    return linear(post, **c_proj)


def block(x, params, n_head, n_query, hook=None, qkv=None, causal=True):
    # [batch, n_seq, n_embd] -> [batch, n_query, n_embd]: the residual stream at the last n_query positions
    h = x
    if "ln_1" in params and qkv is None:
        h = hooked_layer_norm(x, params["ln_1"], hook, "ln1")
    attn_hook = None if hook is None else (lambda name, value: hook(f"attn.{name}", value))
    attn_out = mha(h, **params["attn"], n_head=n_head, n_query=n_query, hook=attn_hook, qkv=qkv, causal=causal)
    if hook is not None:
        attn_out = hooked(hook, "hook_attn_out", attn_out)
    x = x[:, -n_query:] + attn_out
    if "mlp" in params:
        if hook is not None:
            x = hooked(hook, "hook_resid_mid", x)
        h = hooked_layer_norm(x, params["ln_2"], hook, "ln2") if "ln_2" in params else x
        mlp_out = mlp(h, **params["mlp"], hook=hook)
        if hook is not None:
            mlp_out = hooked(hook, "hook_mlp_out", mlp_out)
        x = x + mlp_out
    return x


def qkv_table(params):  # -> [n_vocab, n_ctx, 3*n_embd]
    """Block 0's q, k and v for every (token, position) pair.

    Nothing mixes positions before block 0's attention, so its q, k and v at a
    position depend only on the token there and on the position. A large batch
    looks them up here instead of recomputing them for every context.
    """
    x = params["wte"][:, None, :] + params["wpe"][None, :, :]  # [n_vocab, n_ctx, n_embd]
    first = params["blocks"][0]
    if "ln_1" in first:
        x = layer_norm(x, **first["ln_1"])
    return linear(x, **first["attn"]["c_attn"])


def forward(params, tokens, n_head, last_only=False, record=None, table=None, causal=True, hook=None):
    """[batch, n_seq] token ids -> logits [batch, n_seq, n_vocab], or [batch, n_vocab] if ``last_only``.

    ``last_only`` computes the final block's attention, MLP and unembedding for
    the last position alone: what a next-token check needs, for a fraction of
    the work. Earlier blocks always run at every position, because the last
    position's keys and values depend on them. ``table``, from :func:`qkv_table`,
    saves block 0's projections on a large batch; the result is the same up to
    float rounding (exactly the same for whole-number weights). ``causal=False``
    drops the mask: the same weights as bidirectional self-attention. ``record``
    (a dict) keeps every intermediate; ``hook(name, value)`` sees each and may
    return a replacement (see the module's docstring); give one or the other.
    """
    tokens = np.asarray(tokens)
    n_seq = tokens.shape[-1]
    hook = record.__setitem__ if hook is None and record is not None else hook
    token_embed = params["wte"][tokens]  # [batch, n_seq, n_embd]
    pos_embed = params["wpe"][np.arange(n_seq)]  # [n_seq, n_embd]
    if hook is not None:
        token_embed = hooked(hook, "hook_embed", token_embed)
        pos_embed = hooked(hook, "hook_pos_embed", np.broadcast_to(pos_embed, token_embed.shape))
    x = token_embed + pos_embed
    n_layer = len(params["blocks"])
    for i, block_params in enumerate(params["blocks"]):
        n_query = 1 if last_only and i == n_layer - 1 else x.shape[1]
        block_hook = None if hook is None else (lambda name, value, i=i: hook(f"blocks.{i}.{name}", value))
        if block_hook is not None:
            x = hooked(block_hook, "hook_resid_pre", x)
        qkv = table[tokens, np.arange(n_seq)] if table is not None and i == 0 else None  # [batch, n_seq, 3*n_embd]
        x = block(x, block_params, n_head, n_query, block_hook, qkv, causal)
        if block_hook is not None:
            x = hooked(block_hook, "hook_resid_post", x)
    if last_only:
        x = x[:, -1:]  # a model with no blocks reaches here with every position
    if "ln_f" in params:
        x = hooked_layer_norm(x, params["ln_f"], hook, "ln_final")
    logits = matmul(x, params["wte"].T)  # [batch, n_seq, n_embd] -> [batch, n_seq, n_vocab], tied unembedding
    if hook is not None:
        logits = hooked(hook, "logits", logits)
        hook("probs", softmax(logits))  # what the logits say, recorded only: a replacement would contradict them
    return logits[:, -1] if last_only else logits
