"""The certified forward pass: forward.py's float64 logits, and beside each a bound on its distance from the logits
the same weights give in exact real arithmetic (:mod:`handwired.engine.interval`).

A context is *proved* when the lower bound of the right token's logit is above the upper bound of every other
token's: then the real-arithmetic model predicts it too, whatever float64 rounded.

The passes here are the float ones with intervals: :func:`certified_logits` for a batch of whole contexts (as
:mod:`handwired.engine.batch`), :func:`tree_position` for the walk of every string (:mod:`handwired.engine.tree`)
and :func:`certified_step` for a puzzle's domain, and every string beyond the tree (:mod:`handwired.engine.walk`);
each walk calls them in place of its float function. A walk keeps each key and value as an *operand*
(:func:`~handwired.engine.interval.operand`): its float numbers, then two bounds per head, all a product with it
needs; logits come packed, ``[..., mid | rad]``. The mids of the tree and the whole-context pass are the float
pass's numbers, bit for bit; the domain walk's are computed in its own order (within their radii of the float
walk's).
"""

from collections.abc import Iterator

import numpy as np

from handwired.engine import interval as iv
from handwired.engine import walk as walking
from handwired.engine.forward import causal_mask, merge_heads, split_heads
from handwired.engine.tree import Pass, sibling_mask
from handwired.engine.walk import CHUNK, Family, Shape, Visit, batch_nodes
from handwired.weightfile import Model

PROOF_MEMORY = 3  # an operand holds up to 3× a float key's numbers (n_embd + 2·n_head): a walk's batch a third
CHUNK_POSITIONS = 8192  # positions per certified pass over whole contexts
_LAST_PREPARED: dict = {}  # the last model certified_logits prepared, and its prepared weights


def prepare(params: dict) -> dict:
    """The parameters with each matrix an :class:`~handwired.engine.interval.Weight` (|w| computed once)."""

    def layer(part: dict) -> dict:
        return {"w": iv.Weight(part["w"]), "b": part["b"]}

    blocks = []
    for block in params["blocks"]:
        n_embd = block["attn"]["c_attn"]["w"].shape[0]
        attn, w, b = block["attn"], block["attn"]["c_attn"]["w"], block["attn"]["c_attn"]["b"]
        out = {**block, "attn": {"c_attn": layer(attn["c_attn"]), "c_proj": layer(attn["c_proj"]),
                                 "q": {"w": iv.Weight(w[:, :n_embd]), "b": b[:n_embd]},  # forward.mha's slices
                                 "kv": {"w": iv.Weight(w[:, n_embd:]), "b": b[n_embd:]}}}
        if "mlp" in block:
            out["mlp"] = {"c_fc": layer(block["mlp"]["c_fc"]), "c_proj": layer(block["mlp"]["c_proj"])}
        blocks.append(out)
    unembed = {"w": iv.Weight(params["wte"].T), "b": np.zeros(params["wte"].shape[0])}  # tied, no bias
    span = len(params["wpe"]) + len(params["wte"])  # above the keys any query sees, in any walk
    return {**params, "blocks": blocks, "unembed": unembed, "span": span}


def pack(x):  # interval ([..., n], [..., n]) -> [..., 2n]: mid | rad
    return np.concatenate(x, axis=-1)


def unpack(packed):  # [..., 2n] -> interval ([..., n], [..., n]) (views)
    n = packed.shape[-1] // 2
    return packed[..., :n], packed[..., n:]


def _norm(x, block, name):  # interval [..., n_embd] -> interval [..., n_embd]: block[name]'s LayerNorm, if any
    return iv.layer_norm_bounds(x, **block[name]) if name in block else x


def _heads(x, n_head):  # interval [batch, n_seq, n_embd] -> [batch, head, n_seq, d_head]
    return split_heads(x[0], n_head), split_heads(x[1], n_head)


def _operand_heads(packed, n_head):  # operand [batch, n_seq, n_embd + 2*n_head] -> mid [batch, head, n_seq, d_head]
    # and its two bounds per head, [batch, head, n_seq] each
    n_embd = packed.shape[-1] - 2 * n_head
    bounds = np.swapaxes(packed[..., n_embd:], -1, -2)  # [batch, 2*head, n_seq]
    return split_heads(packed[..., :n_embd], n_head), bounds[..., :n_head, :], bounds[..., n_head:, :]


def _keys(part, n_head, span):  # keys' and values' intervals [..., n_embd] -> operands [..., n_embd + 2*n_head]
    # keys enter q·k over d_head terms, values p·v over at most ``span`` (every position a query can see)
    return (iv.operand(part[0], part[0][0].shape[-1] // n_head, n_head), iv.operand(part[1], span, n_head))


def _mlp(x, block):  # interval [..., n_embd] -> x after the block's MLP, if it has one
    if "mlp" not in block:
        return x
    mlp = block["mlp"]
    if mlp["c_proj"]["w"].zero:  # a silent MLP adds its bias alone, as the float walks do
        return iv.add(x, iv.exact(np.broadcast_to(mlp["c_proj"]["b"], x[0].shape)))
    h = _norm(x, block, "ln_2")
    post = iv.gelu_bounds(iv.linear(h, mlp["c_fc"]["w"], mlp["c_fc"]["b"]))  # [..., n_hidden]
    return iv.add(x, iv.linear(post, mlp["c_proj"]["w"], mlp["c_proj"]["b"]))


def _attend(x, block, q, k, v, mask, n_head):
    # x interval [n, n_embd] at the queries; q [c, sibling, n_embd] interval, k and v [c, n_keys, n_embd + 2*n_head]
    # operands
    # -> x [n, n_embd] after the attention's c_proj, the residual and the MLP
    z = iv.attention(_heads(q, n_head), _operand_heads(k, n_head), _operand_heads(v, n_head), mask)
    n, n_embd = x[0].shape
    merged = (merge_heads(z[0]).reshape(n, n_embd), merge_heads(z[1]).reshape(n, n_embd))  # [n, n_embd]
    proj = block["attn"]["c_proj"]
    return _mlp(iv.add(x, iv.linear(merged, proj["w"], proj["b"])), block)


def _qkv(x, block):  # interval [n, n_embd] -> interval [n, 3*n_embd]: ln_1 and c_attn at the new position
    return iv.linear(_norm(x, block, "ln_1"), block["attn"]["c_attn"]["w"], block["attn"]["c_attn"]["b"])


def _logits(prepared, x):  # interval [n, n_embd] -> packed [n, 2*n_vocab]: ln_f and the tied unembedding
    x = _norm(x, prepared, "ln_f")
    return pack(iv.linear(x, prepared["unembed"]["w"], prepared["unembed"]["b"]))


def _split_qkv(qkv, n_head, span):  # interval [..., 3*n_embd] -> q interval [..., n_embd], k and v operands
    n_embd = qkv[0].shape[-1] // 3
    q, k, v = ((qkv[0][..., i * n_embd:(i + 1) * n_embd], qkv[1][..., i * n_embd:(i + 1) * n_embd]) for i in range(3))
    return (q, *_keys((k, v), n_head, span))


def _unpack_qkv(row, n_embd):  # a table's rows [..., 4*n_embd + 4*n_head] -> q interval, k and v operands
    q = (row[..., :n_embd], row[..., n_embd:2 * n_embd])
    k, v = np.split(row[..., 2 * n_embd:], 2, axis=-1)  # [..., n_embd + 2*n_head] each
    return q, k, v


def certified_table(model: Model):
    """What the walks pass their position functions: the prepared weights, and block 0's q, k and v for every
    (token, position), [n_vocab, n_ctx, 4*n_embd + 4*n_head]: q's mid | rad, then k's and v's operands (None
    without blocks)."""
    params = model.params
    prepared = prepare(params)
    if not params["blocks"]:
        return prepared, None
    x = iv.embed(params["wte"][:, None, :] + params["wpe"][None, :, :])  # [n_vocab, n_ctx, n_embd]
    q, k, v = _split_qkv(_qkv(x, prepared["blocks"][0]), model.n_head, prepared["span"])
    return prepared, np.concatenate([q[0], q[1], k, v], axis=-1)


def tree_position(params, n_head, tokens, position, kv, setup):
    # As tree.new_position, in intervals: tokens [n]; kv per block, the parents' keys and values as operands with
    # room for the new ones [c, position + sibling, n_embd + 2*n_head] -> packed logits [n, 2*n_vocab]
    prepared, table = setup
    x = iv.embed(np.take(params["wte"] + params["wpe"][position], tokens, axis=0))  # [n, n_embd]
    n, n_embd = x[0].shape
    for i, (block, (keys, values)) in enumerate(zip(prepared["blocks"], kv)):
        q, k, v = (_unpack_qkv(np.take(table[:, position], tokens, axis=0), n_embd) if i == 0
                   else _split_qkv(_qkv(x, block), n_head, prepared["span"]))  # [n, ...] each
        c, n_keys, _ = keys.shape
        n_sibling = n // c
        keys[:, -n_sibling:], values[:, -n_sibling:] = k.reshape(c, n_sibling, -1), v.reshape(c, n_sibling, -1)
        q = (q[0].reshape(c, n_sibling, n_embd), q[1].reshape(c, n_sibling, n_embd))
        x = _attend(x, block, q, keys, values, sibling_mask(n_keys - n_sibling, n_sibling), n_head)
    return _logits(prepared, x)


def certified_walk(model: Model, shape: Shape, chunk: int | None = None) -> Iterator[Visit]:
    """:func:`handwired.engine.walk.walk` with :func:`certified_step`: each visit's logits packed mid | rad
    [n, 2*n_vocab]. A batch holds a third of the float walk's nodes at most: its keys are operands, its
    numbers intervals."""
    setup = certified_table(model)
    width = model.n_embd + 2 * model.n_head  # an operand's numbers per key or value
    root = [None if block["attn"]["c_proj"]["w"].zero else (np.zeros((1, 0, width)), np.zeros((1, 0, width)))
            for block in setup[0]["blocks"]]  # the empty prefix: no keys; None for a silent attention

    def step(past, rows, family, length, logits, keep):  # the parents' keys and values: views of their batch's
        past = [None if kv is None else (kv[0][rows], kv[1][rows]) for kv in past]
        return certified_step(model, setup, past, family, length, logits)

    nodes = chunk or max(1, batch_nodes(model, model.n_ctx, PROOF_MEMORY * CHUNK) // PROOF_MEMORY)
    return walking.walk(shape, step, root, nodes)


def certified_step(model: Model, setup, past: list, family: Family, length: int,
                   logits: bool) -> tuple[np.ndarray | None, list]:
    """As :func:`handwired.engine.step.float_step`, in intervals: the children's packed logits [n, 2*n_vocab]
    (when ``logits``) and their past: per block, the key and value operands of every position they see
    [n, length, n_embd + 2*n_head] each (None: a silent attention)."""
    prepared, table = setup
    tokens = family.tokens  # [n]
    x = iv.embed(model.params["wte"][tokens] + model.params["wpe"][length - 1])  # [n, n_embd]
    kept: list = []
    last = max((b for b, kv in enumerate(past) if kv is not None), default=-1)  # the last block whose keys are read
    for b, (block, kv) in enumerate(zip(prepared["blocks"], past)):
        if kv is None:  # silent attention: only its bias reaches the residual stream
            kept.append(None)
            x = iv.add(x, iv.exact(np.broadcast_to(block["attn"]["c_proj"]["b"], x[0].shape)))  # [n, n_embd]
        else:
            q, k, v = (_unpack_qkv(table[tokens, length - 1], model.n_embd) if b == 0
                       else _split_qkv(_qkv(x, block), model.n_head, prepared["span"]))  # [n, ...] each
            seen = tuple(np.concatenate([p[family.parent], own[:, None]], axis=1)
                         for p, own in zip(kv, (k, v)))  # [n, length, n_embd + 2*n_head] x2: the parent's, then its own
            kept.append(seen)
            if not logits and b >= last:  # nothing later reads this batch's residual stream
                break
            x = _attend(x, block, (q[0][:, None], q[1][:, None]), *seen, np.zeros((1, length)), model.n_head)
            continue
        if not logits and b >= last:
            break
        x = _mlp(x, block)
    kept += [None] * (len(past) - len(kept))
    return (_logits(prepared, x) if logits else None), kept


# The certified pass of engine.tree's walk: keys and values stored as operands, logits as mid | rad
TREE = Pass(certified_table, tree_position, extra=2, logits=2)


def _block(x, block, n_head, n_query):
    # interval [batch, n_seq, n_embd] -> [batch, n_query, n_embd]: forward.block, its last n_query positions
    batch, n_seq, n_embd = x[0].shape
    h = _norm(x, block, "ln_1")
    attn = block["attn"]
    q = iv.linear((h[0][:, -n_query:], h[1][:, -n_query:]), attn["q"]["w"], attn["q"]["b"])  # [batch, n_query, E]
    kv = iv.linear(h, attn["kv"]["w"], attn["kv"]["b"])  # [batch, n_seq, 2*n_embd]
    k, v = _keys(((kv[0][..., :n_embd], kv[1][..., :n_embd]), (kv[0][..., n_embd:], kv[1][..., n_embd:])), n_head,
                 n_seq)  # [batch, n_seq, n_embd + 2*n_head] operands
    rest = (x[0][:, -n_query:], x[1][:, -n_query:])  # [batch, n_query, n_embd]
    out = _attend((rest[0].reshape(-1, n_embd), rest[1].reshape(-1, n_embd)), block, q, k, v,
                  causal_mask(n_query, n_seq), n_head)  # [batch * n_query, n_embd]
    return out[0].reshape(batch, n_query, n_embd), out[1].reshape(batch, n_query, n_embd)


def certified_forward(prepared, tokens):  # [batch, n_seq] token ids -> packed logits [batch, 2*n_vocab], last pos
    params = prepared
    n_seq = tokens.shape[-1]
    x = iv.embed(params["wte"][tokens] + params["wpe"][np.arange(n_seq)])  # [batch, n_seq, n_embd]
    n_layer = len(prepared["blocks"])
    for i, block in enumerate(prepared["blocks"]):
        x = _block(x, block, prepared["n_head"], 1 if i == n_layer - 1 else x[0].shape[1])
    return _logits(prepared, (x[0][:, -1], x[1][:, -1]))


def logit_bounds(logits, radius):  # [..., n_vocab] x2 -> (lower, upper) [..., n_vocab]: the real logits between
    return iv.lower(logits - radius), iv.upper(logits + radius)


def certified_logits(model: Model, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[n, n_seq] contexts of one length -> (logits, radius) [n, n_vocab] each: float64's next-token logits and
    a bound on their distance from the real-arithmetic ones."""
    last = _LAST_PREPARED.get("model")
    if last is None or last[0] is not model:  # a stream check asks batch after batch for the same model
        last = _LAST_PREPARED["model"] = (model, {**prepare(model.params), "n_head": model.n_head})
    prepared = last[1]
    contexts = np.asarray(contexts)
    if len(contexts) == 0:
        return np.zeros((0, model.n_vocab)), np.zeros((0, model.n_vocab))
    chunk = max(1, CHUNK_POSITIONS // contexts.shape[1])
    packed = np.concatenate([certified_forward(prepared, contexts[start:start + chunk])
                             for start in range(0, len(contexts), chunk)])
    return unpack(packed)
