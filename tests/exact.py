"""The forward pass in 50-digit arithmetic (mpmath), for checking the certified bounds.

Written from the formulas, unlike handwired's engine: one position at a time, every number an mpmath mpf made
exactly from the file's float64 values, GELU with its real constants (tanh form, 0.044715, √(2/π)), LayerNorm's
eps the float64 nearest 1e-5. A prefix's keys and values are kept, so a set of contexts sharing prefixes costs
one new position per distinct prefix.
"""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50
EPS = mp.mpf(1e-5)  # the float64 value, exactly
GELU_A = mp.mpf("0.044715")
GELU_K = mp.sqrt(2 / mp.pi)


def _vector(values):
    return [mp.mpf(float(v)) for v in values]


def _matrix(w):  # [n_in][n_out] float64 -> its columns as mpf lists
    return [_vector(column) for column in w.T]


def _layer(part):
    return {"w": _matrix(part["w"]), "b": _vector(part["b"])}


def _norm(part):
    return {"g": _vector(part["g"]), "b": _vector(part["b"])}


def exact_params(params):
    """handwired's parameters as mpf numbers (the same real numbers as the float64 ones)."""
    blocks = []
    for block in params["blocks"]:
        out = {"attn": {name: _layer(block["attn"][name]) for name in ("c_attn", "c_proj")}}
        if "mlp" in block:
            out["mlp"] = {name: _layer(block["mlp"][name]) for name in ("c_fc", "c_proj")}
        out.update({name: _norm(block[name]) for name in ("ln_1", "ln_2") if name in block})
        blocks.append(out)
    exact = {"wte": [_vector(row) for row in params["wte"]], "wpe": [_vector(row) for row in params["wpe"]],
             "blocks": blocks}
    if "ln_f" in params:
        exact["ln_f"] = _norm(params["ln_f"])
    return exact


def _affine(row, layer):
    return [mp.fdot(row, column) + bias for column, bias in zip(layer["w"], layer["b"])]


def _layer_norm(row, norm):
    n = len(row)
    mean = mp.fsum(row) / n
    centred = [value - mean for value in row]
    scale = mp.sqrt(mp.fdot(centred, centred) / n + EPS)
    return [g * c / scale + b for g, c, b in zip(norm["g"], centred, norm["b"])]


def layer_norm(row, g, b) -> list:
    """LayerNorm of one row of float64 numbers (with float64 g and b), in 50 digits."""
    return _layer_norm(_vector(row), {"g": _vector(g), "b": _vector(b)})


def _gelu(value):
    return value / 2 * (1 + mp.tanh(GELU_K * (value + GELU_A * value**3)))


class ExactModel:
    """Next-token logits of any context, in 50 digits, with every prefix's keys and values remembered."""

    def __init__(self, params, n_head):
        self.p = exact_params(params)
        self.n_head = n_head
        self.kv = {}  # prefix -> per block (key, value) at its last position
        self.out = {}  # prefix -> logits

    def logits(self, context: tuple[int, ...]) -> list:
        if context not in self.out:
            if len(context) > 1:
                self.logits(context[:-1])
            self.out[context] = self._position(context)
        return self.out[context]

    def _position(self, context):
        p, n = self.p, len(context)
        x = [a + b for a, b in zip(p["wte"][context[-1]], p["wpe"][n - 1])]
        keys_here = []
        for i, block in enumerate(p["blocks"]):
            h = _layer_norm(x, block["ln_1"]) if "ln_1" in block else x
            qkv = _affine(h, block["attn"]["c_attn"])
            e = len(x)
            q, k, v = qkv[:e], qkv[e:2 * e], qkv[2 * e:]
            keys_here.append((k, v))
            seen = [self.kv[context[:j]][i] for j in range(1, n)] + [(k, v)]
            d = e // self.n_head
            z = []
            for head in range(self.n_head):
                part = slice(head * d, (head + 1) * d)
                scores = [mp.fdot(q[part], key[part]) / mp.sqrt(d) for key, _ in seen]
                top = max(scores)
                weights = [mp.exp(s - top) for s in scores]
                total = mp.fsum(weights)
                z += [mp.fsum(w * value[part][j] for w, (_, value) in zip(weights, seen)) / total for j in range(d)]
            x = [a + b for a, b in zip(x, _affine(z, block["attn"]["c_proj"]))]
            if "mlp" in block:
                h = _layer_norm(x, block["ln_2"]) if "ln_2" in block else x
                hidden = [_gelu(value) for value in _affine(h, block["mlp"]["c_fc"])]
                x = [a + b for a, b in zip(x, _affine(hidden, block["mlp"]["c_proj"]))]
        self.kv[context] = keys_here
        if "ln_f" in p:
            x = _layer_norm(x, p["ln_f"])
        return [mp.fdot(x, row) for row in p["wte"]]
