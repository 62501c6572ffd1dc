"""The GPT-2 forward pass in numpy, float64, over a batch of contexts.

Small pure functions in picoGPT's manner. Every function takes a leading batch
axis; one context is a batch of one, so ``predict``, ``explain``, ``complete``
and ``check`` all run this same code.

When ``record`` is a dict, each intermediate is stored in it under a
TransformerLens hook name (``blocks.0.attn.hook_pattern`` …) with
TransformerLens's shapes: ``[batch, pos, head, d_head]`` for q/k/v/z and
``[batch, head, query_pos, key_pos]`` for scores and pattern. The one addition
is ``blocks.{i}.attn.scores_before_mask``, the scaled scores before the causal
mask, which the explain view shows as its own step.
"""

import math

import numpy as np

LN_EPS = 1e-5


def gelu(x):
    # GPT-2's tanh approximation 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), computed as the same
    # function x / (1 + exp(-2u)): exp costs a third of tanh, x·x·x a fraction of x**3, and in place.
    u = x * x
    u *= -2 * 0.044715 * math.sqrt(2 / math.pi)
    u -= 2 * math.sqrt(2 / math.pi)
    u *= x  # -2u
    with np.errstate(over="ignore"):  # exp(-2u) = inf far below zero, where gelu is -0
        np.exp(u, out=u)
    u += 1
    return np.divide(x, u, out=u)


def softmax(x, out=None):
    # subtracting the row max keeps exp from overflowing; exp(-inf) is exactly 0. out=x: in place
    e = np.subtract(x, np.max(x, axis=-1, keepdims=True), out=out)
    np.exp(e, out=e)
    e /= np.sum(e, axis=-1, keepdims=True)
    return e


def layer_norm(x, g, b, eps=LN_EPS):  # [..., n_embd] -> [..., n_embd]
    mean = np.mean(x, axis=-1, keepdims=True)
    centred = x - mean
    variance = np.mean(centred * centred, axis=-1, keepdims=True)  # what np.var computes, without a second mean
    centred *= g  # in place: the same operations in the same order as g * (x - mean) / √(variance + eps) + b
    centred /= np.sqrt(variance + eps)
    centred += b
    return centred


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
    masked = scores + mask
    pattern = softmax(masked)
    hook("scores_before_mask", scores)
    hook("hook_attn_scores", masked)
    hook("hook_pattern", pattern)
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
    if hook is not None:
        for name, value in (("hook_q", q), ("hook_k", k), ("hook_v", v)):
            hook(name, value.transpose(0, 2, 1, 3))
    mask = causal_mask(n_query, x.shape[1]) if causal else np.zeros((n_query, x.shape[1]))  # [n_query, n_seq]
    z = attention(q, k, v, mask, hook)  # [batch, head, n_query, d_head]
    if hook is not None:
        hook("hook_z", z.transpose(0, 2, 1, 3))
    return linear(merge_heads(z), **c_proj)  # [batch, n_query, n_embd]


def mlp(x, c_fc, c_proj, hook=None):  # [batch, n_seq, n_embd] -> [batch, n_seq, n_embd]
    pre = linear(x, **c_fc)  # [batch, n_seq, n_hidden]
    post = gelu(pre)
    if hook is not None:
        hook("mlp.hook_pre", pre)
        hook("mlp.hook_post", post)
    return linear(post, **c_proj)


def block(x, params, n_head, n_query, hook=None, qkv=None, causal=True):
    # [batch, n_seq, n_embd] -> [batch, n_query, n_embd]: the residual stream at the last n_query positions
    h = x
    if "ln_1" in params and qkv is None:
        h = layer_norm(x, **params["ln_1"])
        if hook is not None:
            hook("ln1.hook_normalized", h)
    attn_hook = None if hook is None else (lambda name, value: hook(f"attn.{name}", value))
    attn_out = mha(h, **params["attn"], n_head=n_head, n_query=n_query, hook=attn_hook, qkv=qkv, causal=causal)
    x = x[:, -n_query:] + attn_out
    if hook is not None:
        hook("hook_attn_out", attn_out)
    if "mlp" in params:
        if hook is not None:
            hook("hook_resid_mid", x)
        h = layer_norm(x, **params["ln_2"]) if "ln_2" in params else x
        if hook is not None and "ln_2" in params:
            hook("ln2.hook_normalized", h)
        mlp_out = mlp(h, **params["mlp"], hook=hook)
        x = x + mlp_out
        if hook is not None:
            hook("hook_mlp_out", mlp_out)
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


def forward(params, tokens, n_head, last_only=False, record=None, table=None, causal=True):
    """[batch, n_seq] token ids -> logits [batch, n_seq, n_vocab], or [batch, n_vocab] if ``last_only``.

    ``last_only`` computes the final block's attention, MLP and unembedding for
    the last position alone: what a next-token check needs, for a fraction of
    the work. Earlier blocks always run at every position, because the last
    position's keys and values depend on them. ``table``, from :func:`qkv_table`,
    saves block 0's projections on a large batch; the result is the same up to
    float rounding (exactly the same for whole-number weights). ``causal=False``
    drops the mask: the same weights as bidirectional self-attention.
    """
    tokens = np.asarray(tokens)
    n_seq = tokens.shape[-1]
    hook = None if record is None else record.__setitem__
    token_embed = params["wte"][tokens]  # [batch, n_seq, n_embd]
    pos_embed = params["wpe"][np.arange(n_seq)]  # [n_seq, n_embd]
    x = token_embed + pos_embed
    if hook is not None:
        hook("hook_embed", token_embed)
        hook("hook_pos_embed", np.broadcast_to(pos_embed, token_embed.shape))
    n_layer = len(params["blocks"])
    for i, block_params in enumerate(params["blocks"]):
        n_query = 1 if last_only and i == n_layer - 1 else x.shape[1]
        block_hook = None if hook is None else (lambda name, value, i=i: hook(f"blocks.{i}.{name}", value))
        if block_hook is not None:
            block_hook("hook_resid_pre", x)
        qkv = table[tokens, np.arange(n_seq)] if table is not None and i == 0 else None  # [batch, n_seq, 3*n_embd]
        x = block(x, block_params, n_head, n_query, block_hook, qkv, causal)
        if block_hook is not None:
            block_hook("hook_resid_post", x)
    if last_only:
        x = x[:, -1:]  # a model with no blocks reaches here with every position
    if "ln_f" in params:
        x = layer_norm(x, **params["ln_f"])
        if hook is not None:
            hook("ln_final.hook_normalized", x)
    logits = matmul(x, params["wte"].T)  # [batch, n_seq, n_embd] -> [batch, n_seq, n_vocab], tied unembedding
    if hook is not None:
        hook("logits", logits)
        hook("probs", softmax(logits))
    return logits[:, -1] if last_only else logits
