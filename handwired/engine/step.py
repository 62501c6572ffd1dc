"""The float64 step of the walk (:mod:`handwired.engine.walk`): each batch of children's new positions.

forward.py's functions in float64. A node's past is, per block, its keys and values at every position
([n, room, n_embd] each, room for n_ctx positions): an only child writes its own into its parent's room and
shares it; siblings copy their parent's when they will have children; siblings without attend together over
their parent's keys, one product per parent, each query meeting its own key beside them. A silent attention
(c_proj.w all zeros) keeps no past and adds its bias alone, unless an intermediate is recorded.
"""

from collections.abc import Callable, Iterator

import numpy as np

from handwired.engine import walk as walking
from handwired.engine.forward import layer_norm, linear, matmul, mlp, qkv_table, softmax
from handwired.engine.walk import Family, Shape, Visit, batch_nodes
from handwired.weightfile import Model


def silent(layer: dict) -> bool:
    """An attention or MLP whose c_proj.w is all zeros adds exactly its c_proj.b, whatever it reads: a starter's
    blocks, or one a player has not wired yet, cost nothing to evaluate."""
    return not layer["c_proj"]["w"].any()


def float_walk(model: Model, shape: Shape, chunk: int | None = None,
               hook: Callable[[str, np.ndarray], None] | None = None,
               names: frozenset[str] | None = None) -> Iterator[Visit]:
    """:func:`walk` with :func:`float_step`: forward.py's float64 functions. ``hook(name, value)`` is called with
    every intermediate of each batch at its new positions ([n, …], forward's shapes less the position axis) before
    the batch is yielded (only those ``names`` holds, when given); with a hook nothing is skipped."""
    reads = [hook is not None or not silent(block["attn"]) for block in model.params["blocks"]]
    table = qkv_table(model.params) if model.n_layer and reads[0] else None
    root = [(np.zeros((1, model.n_ctx, model.n_embd)), np.zeros((1, model.n_ctx, model.n_embd))) if r else None
            for r in reads]  # the empty prefix: no keys yet, room for n_ctx

    def step(past, rows, family, length, logits, keep):  # the parents' keys and values: views of their batch's
        past = [None if kv is None else (kv[0][rows], kv[1][rows]) for kv in past]
        return float_step(model, table, past, family, length, logits, keep, hook, names)

    nodes = chunk or batch_nodes(model, model.n_ctx)
    return walking.walk(shape, step, root, nodes)  # looked up when called: tests watch it


class _Named:
    """The hook as one block sees it (``prefix`` blocks.0.), passing on the intermediates ``names`` holds (all when
    None); without a hook it wants nothing."""

    def __init__(self, hook, prefix: str = "", names: frozenset[str] | None = None):
        self.hook, self.prefix, self.names = hook, prefix, names

    def wants(self, name: str) -> bool:
        return self.hook is not None and (self.names is None or self.prefix + name in self.names)

    def __call__(self, name: str, value) -> None:
        if self.wants(name):
            self.hook(self.prefix + name, value)


_ignore = _Named(None)  # the hook when nothing is recorded


def float_step(model: Model, table, past: list, family: Family, length: int, logits: bool, keep: bool,
               hook=None, names: frozenset[str] | None = None) -> tuple[np.ndarray | None, list]:
    """The children's new positions: their next-token logits [n, n_vocab] (when ``logits``), and (when ``keep``)
    their past: per block, every position's keys and values [n, length, n_embd] each (None: a silent attention)."""
    params, tokens, at = model.params, family.tokens, _Named(hook, "", names)
    x = params["wte"][tokens] + params["wpe"][length - 1]  # [n, n_embd]
    at("hook_embed", params["wte"][tokens])
    at("hook_pos_embed", np.broadcast_to(params["wpe"][length - 1], x.shape))
    kept: list = []
    last = max((b for b, kv in enumerate(past) if kv is not None), default=-1)  # the last block whose keys are read
    for b, (block, kv) in enumerate(zip(params["blocks"], past)):
        named = _Named(hook, f"blocks.{b}.", names)
        named("hook_resid_pre", x)
        if kv is None:  # silent attention: only its bias reaches the residual stream
            kept.append(None)
            x = x + block["attn"]["c_proj"]["b"]  # [n, n_embd]
        else:
            if b == 0 and table is not None:
                qkv = table[tokens, length - 1]  # [n, 3*n_embd]
                if named.wants("ln1.hook_normalized") and "ln_1" in block:
                    named("ln1.hook_normalized", layer_norm(x, **block["ln_1"]))
            else:
                h = layer_norm(x, **block["ln_1"]) if "ln_1" in block else x  # [n, n_embd]
                if "ln_1" in block:
                    named("ln1.hook_normalized", h)
                qkv = linear(h, **block["attn"]["c_attn"])  # [n, 3*n_embd]
            seen, mine = _extend(kv, qkv, family, length, keep)
            kept.append(mine)
            if not logits and b == last:  # nothing later reads this batch's residual stream
                return None, kept + [None] * (len(past) - len(kept))
            x = x + _attention(block, qkv, kv, seen, family, length, model.n_head, named)
        if not logits and b >= last:
            return None, kept + [None] * (len(past) - len(kept))
        x = _mlp(x, block, named)
        named("hook_resid_post", x)
    if not logits:
        return None, kept
    if "ln_f" in params:
        x = layer_norm(x, **params["ln_f"])
        at("ln_final.hook_normalized", x)
    out = matmul(x, params["wte"].T)  # [n, n_vocab], tied unembedding
    at("logits", out)
    if at.wants("probs"):
        at("probs", softmax(out))
    return out, kept


def _extend(kv, qkv, family: Family, length: int, keep: bool):
    """The keys and values each child sees ([n, length, n_embd] x2: its parent's, then its own), when they are
    made, and the children's past (when ``keep``). A parent's past has room for n_ctx positions: an only child
    writes its own into its parent's room, and the two share it (no copy); several siblings each get a copy of
    their parent's, made only when they have children of their own."""
    n_embd = qkv.shape[1] // 3
    own = qkv[:, n_embd:2 * n_embd], qkv[:, 2 * n_embd:]  # [n, n_embd] x2
    if family.width == 1 and family.uniform and kv[0].shape[1] >= length:
        for past, new in zip(kv, own):
            past[:, length - 1] = new
        return (kv[0][:, :length], kv[1][:, :length]), kv
    if not keep:
        return None, None
    mine = inherit(kv, own, family, length)
    return (mine[0][:, :length], mine[1][:, :length]), mine


def inherit(kv, own, family: Family, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Each child's past: its parent's keys and values (positions 0…length-2), then its own, with room for its
    descendants' up to the parent's room. [c, room, n_embd] x2, [n, n_embd] x2 -> [n, room, n_embd] x2."""
    out = []
    for past, new in zip(kv, own):
        c, room, n_embd = past.shape
        child = np.empty((len(new), room, n_embd))
        if family.uniform:  # the parents' rows broadcast to their children: no index array
            child.reshape(c, family.width, room, n_embd)[:, :, :length - 1] = past[:, None, :length - 1]
        else:
            child[:, :length - 1] = past[family.parent, :length - 1]
        child[:, length - 1] = new
        out.append(child)
    return out[0], out[1]


def _pad(x: np.ndarray, family: Family) -> np.ndarray:  # [n, k] -> [c, width, k], zeros where a parent has fewer
    if family.uniform:
        return x.reshape(family.c, family.width, x.shape[-1])
    out = np.zeros((family.c, family.width, x.shape[-1]))
    out[family.parent, family.slot] = x
    return out


def _unpad(x: np.ndarray, family: Family) -> np.ndarray:  # [c, width, k] -> [n, k]
    return x.reshape(-1, x.shape[-1]) if family.uniform else x[family.parent, family.slot]


def _attention(block, qkv, kv, seen, family, length, n_head, at=_ignore):
    # qkv [n, 3*n_embd] at the new positions -> the block's attention output [n, n_embd]. ``seen``: the keys and
    # values each child sees [n, L, n_embd] x2, when made; else the siblings attend together, each query over its
    # parent's keys (kv, [c, room, n_embd], the first L-1 positions) and then its own.
    n_embd = qkv.shape[1] // 3
    n, d_head = len(qkv), n_embd // n_head
    if at.hook is not None:
        for i, name in enumerate(("hook_q", "hook_k", "hook_v")):
            at(f"attn.{name}", qkv[:, i * n_embd:(i + 1) * n_embd].reshape(n, n_head, d_head))
    if seen is not None:
        q = qkv[:, :n_embd].reshape(n, 1, n_head, d_head).transpose(0, 2, 1, 3)  # [n, head, 1, d_head]
        keys = seen[0].reshape(n, length, n_head, d_head).transpose(0, 2, 3, 1)  # [n, head, d_head, L]
        scores = q @ keys  # [n, head, 1, L]
        values = seen[1].reshape(n, length, n_head, d_head).transpose(0, 2, 1, 3)  # [n, head, L, d_head]
        pattern = _softmax(scores, d_head, at, lambda a: a[:, :, 0])
        z = (pattern @ values)[:, :, 0]  # [n, head, d_head]
    else:
        z = _siblings(qkv, kv, family, length, n_head, at)
    at("attn.hook_z", z)
    out = linear(z.reshape(n, n_embd), **block["attn"]["c_proj"])  # [n, n_embd]
    at("hook_attn_out", out)
    return out


def _softmax(scores, d_head, at, flat):
    # scaled in place, softmax in place; ``at`` sees the scores and the pattern as [n, head, L] (``flat`` of them)
    scores /= np.sqrt(d_head)
    for name in ("attn.scores_before_mask", "attn.hook_attn_scores"):  # the mask hides nothing here
        if at.wants(name):
            at(name, flat(scores).copy())
    softmax(scores, out=scores)
    if at.wants("attn.hook_pattern"):
        at("attn.hook_pattern", flat(scores))
    return scores


def _siblings(qkv, kv, family, length, n_head, at):
    # -> z [n, head, d_head]: each child's query over its parent's keys, then its own key, with its siblings in one
    # product per parent
    n_embd = qkv.shape[1] // 3
    c, w, d_head = family.c, family.width, n_embd // n_head
    n_past = length - 1
    q, k, v = (_pad(qkv[:, i * n_embd:(i + 1) * n_embd], family).reshape(c, w, n_head, d_head) for i in range(3))
    q = q.transpose(0, 2, 1, 3)  # [c, head, w, d_head]
    past_k = kv[0][:, :n_past].reshape(c, n_past, n_head, d_head).transpose(0, 2, 3, 1)  # [c, head, d_head, P]
    past_v = kv[1][:, :n_past].reshape(c, n_past, n_head, d_head).transpose(0, 2, 1, 3)  # [c, head, P, d_head]
    scores = np.empty((c, n_head, w, n_past + 1))
    np.matmul(q, past_k, out=scores[..., :n_past])
    scores[..., n_past] = (q * k.transpose(0, 2, 1, 3)).sum(axis=-1)  # each query against its own key

    def flat(a):  # [c, head, w, L] -> [n, head, L]
        return _unpad(a.transpose(0, 2, 1, 3).reshape(c, w, -1), family).reshape(-1, n_head, n_past + 1)

    scores = _softmax(scores, d_head, at, flat)
    z = scores[..., :n_past] @ past_v  # [c, head, w, d_head]
    z += scores[..., n_past:] * v.transpose(0, 2, 1, 3)
    return _unpad(z.transpose(0, 2, 1, 3).reshape(c, w, n_embd), family).reshape(-1, n_head, d_head)


def _mlp(x, block, at):  # [n, n_embd] -> [n, n_embd]: after the block's MLP, if it has one
    if "mlp" not in block:
        return x
    if at.hook is None and silent(block["mlp"]):  # nothing captured: a silent MLP adds its bias alone
        return x + block["mlp"]["c_proj"]["b"]
    at("hook_resid_mid", x)
    h = layer_norm(x, **block["ln_2"]) if "ln_2" in block else x
    if "ln_2" in block:
        at("ln2.hook_normalized", h)
    mlp_out = mlp(h, **block["mlp"], hook=None if at.hook is None else at)
    at("hook_mlp_out", mlp_out)
    return x + mlp_out
