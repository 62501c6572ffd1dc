"""An independent GPT-2 forward pass for checking handwired's numbers.

Written separately from handwired.forward and on purpose unlike it: one
position, one head at a time, with Python loops, math.exp and explicit sums,
straight from the formulas. Slow, and easy to check by eye.
"""

from __future__ import annotations

import math

import numpy as np


def _layer_norm_row(row, g, b, eps=1e-5):
    n = len(row)
    mean = sum(row) / n
    var = sum((value - mean) ** 2 for value in row) / n
    return [g[i] * (row[i] - mean) / math.sqrt(var + eps) + b[i] for i in range(n)]


def _affine_row(row, w, b):
    return [sum(row[i] * w[i][j] for i in range(len(row))) + b[j] for j in range(len(b))]


def _gelu(value):
    return 0.5 * value * (1 + math.tanh(math.sqrt(2 / math.pi) * (value + 0.044715 * value**3)))


def _softmax_list(values):
    top = max(values)
    exps = [math.exp(v - top) for v in values]
    total = sum(exps)
    return [e / total for e in exps]


def reference_forward(params, tokens, n_head, causal=True):
    """tokens: a list of ids -> (logits [n_seq][n_vocab], patterns [block][head][query][key]).

    ``causal=False``: every query sees every key (bidirectional self-attention).
    """
    wte = np.asarray(params["wte"]).tolist()
    wpe = np.asarray(params["wpe"]).tolist()
    n_embd = len(wte[0])
    d_head = n_embd // n_head
    x = [[wte[t][i] + wpe[p][i] for i in range(n_embd)] for p, t in enumerate(tokens)]
    patterns = []
    for block in params["blocks"]:
        h = [_layer_norm_row(row, block["ln_1"]["g"], block["ln_1"]["b"]) for row in x] if "ln_1" in block else x
        c_attn = block["attn"]["c_attn"]
        qkv = [_affine_row(row, np.asarray(c_attn["w"]).tolist(), list(c_attn["b"])) for row in h]
        z = [[0.0] * n_embd for _ in tokens]
        block_patterns = []
        for head in range(n_head):
            q_cols = range(head * d_head, (head + 1) * d_head)
            k_cols = [n_embd + c for c in q_cols]
            v_cols = [2 * n_embd + c for c in q_cols]
            head_pattern = []
            for query in range(len(tokens)):
                scores = []
                visible = query + 1 if causal else len(tokens)  # causal: only keys at or before the query
                for key in range(visible):
                    dot = sum(qkv[query][qc] * qkv[key][kc] for qc, kc in zip(q_cols, k_cols))
                    scores.append(dot / math.sqrt(d_head))
                weights = _softmax_list(scores)
                head_pattern.append(weights + [0.0] * (len(tokens) - visible))
                for offset, vc in enumerate(v_cols):
                    z[query][head * d_head + offset] = sum(weights[key] * qkv[key][vc] for key in range(visible))
            block_patterns.append(head_pattern)
        patterns.append(block_patterns)
        c_proj = block["attn"]["c_proj"]
        attn_out = [_affine_row(row, np.asarray(c_proj["w"]).tolist(), list(c_proj["b"])) for row in z]
        x = [[x[p][i] + attn_out[p][i] for i in range(n_embd)] for p in range(len(tokens))]
        if "mlp" in block:
            h = [_layer_norm_row(row, block["ln_2"]["g"], block["ln_2"]["b"]) for row in x] if "ln_2" in block else x
            fc, proj = block["mlp"]["c_fc"], block["mlp"]["c_proj"]
            hidden = [[_gelu(v) for v in _affine_row(row, np.asarray(fc["w"]).tolist(), list(fc["b"]))] for row in h]
            out = [_affine_row(row, np.asarray(proj["w"]).tolist(), list(proj["b"])) for row in hidden]
            x = [[x[p][i] + out[p][i] for i in range(n_embd)] for p in range(len(tokens))]
    if "ln_f" in params:
        x = [_layer_norm_row(row, params["ln_f"]["g"], params["ln_f"]["b"]) for row in x]
    logits = [[sum(row[i] * wte[t][i] for i in range(n_embd)) for t in range(len(wte))] for row in x]
    return np.array(logits), np.array(patterns)


def random_params(rng, n_vocab=3, n_ctx=6, n_embd=8, n_layer=2, n_hidden=12, layer_norm=True, mlp=True):
    """Random weights in handwired's parameter layout, to test the general case.

    ``mlp`` is True, False, or a list of each block's MLP width (None: that block has no MLP).
    """

    def linear(n_in, n_out):
        return {"w": rng.normal(0, 0.7, (n_in, n_out)), "b": rng.normal(0, 0.3, n_out)}

    def norm():
        return {"g": rng.normal(1, 0.2, n_embd), "b": rng.normal(0, 0.2, n_embd)}

    widths = list(mlp) if isinstance(mlp, (list, tuple)) else [n_hidden if mlp else None] * n_layer
    blocks = []
    for width in widths:
        block = {"attn": {"c_attn": linear(n_embd, 3 * n_embd), "c_proj": linear(n_embd, n_embd)}}
        if layer_norm:
            block["ln_1"] = norm()
        if width is not None:
            block["mlp"] = {"c_fc": linear(n_embd, width), "c_proj": linear(width, n_embd)}
            if layer_norm:
                block["ln_2"] = norm()
        blocks.append(block)
    params = {"wte": rng.normal(0, 1, (n_vocab, n_embd)), "wpe": rng.normal(0, 1, (n_ctx, n_embd)), "blocks": blocks}
    if layer_norm:
        params["ln_f"] = norm()
    return params


def params_to_document(params, n_head, vocab, n_ctx):
    """The same weights as a handwired/1 JSON document (for going through the loader and the CLI)."""

    def listify(value):
        if isinstance(value, dict):
            return {key: listify(item) for key, item in value.items()}
        if isinstance(value, list):
            return [listify(item) for item in value]
        return np.asarray(value).tolist()

    doc = {"format": "handwired/1", "vocab": list(vocab), "n_ctx": n_ctx, "n_embd": len(params["wte"][0]),
           "n_head": n_head}
    doc.update(listify(params))
    return doc
