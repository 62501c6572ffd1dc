"""The certified forward pass: forward.py's float64 logits, and beside each a bound on its distance from the logits
the same weights give in exact real arithmetic (:mod:`handwired.engine.interval`).

A context is *proved* when the lower bound of the right token's logit is above the upper bound of every other
token's: then the real-arithmetic model predicts it too, whatever float64 rounded.

The passes here are the float ones with intervals: :func:`certified_logits` for a batch of whole contexts (as
:mod:`handwired.engine.batch`), :func:`tree_position` for the walk of every string (:mod:`handwired.engine.tree`)
and :func:`~handwired.engine.proof_step.certified_step` for a puzzle's domain, and every string beyond the tree
(:mod:`handwired.engine.walk`, on the float step's columns: :mod:`handwired.engine.proof_step`); each walk calls
them in place of its float function. Attention's radius is one number per query and head,
made from what each key contributes: per head, the largest |k| and |v| of its dimensions and their largest radii,
its *bounds* (``4·n_head`` numbers: |k|'s, k's radii, |v|'s, v's radii), so a query needs only the largest bounds
over the keys it sees. Logits come packed,
``[..., mid | rad]``. The mids of the tree and the whole-context pass are the float pass's numbers, bit for bit;
the domain walk's are the float walk's when both keep the same attention dimensions (see proof_step), and within
their radii of them otherwise.
"""

import numpy as np

from handwired.engine import interval as iv
from handwired.engine.forward import causal_mask, linear, matmul, merge_heads, softmax, split_heads
from handwired.engine.proof_step import certified_walk  # noqa: F401 (the domain walk's certified pass)
from handwired.engine.tree import Pass, sibling_mask
from handwired.weightfile import Model

CHUNK_POSITIONS = 8192  # positions per certified pass over whole contexts
_LAST_PREPARED: dict = {}  # the last model certified_logits prepared, a copy of its weights, its prepared weights


def prepare(params: dict, n_head: int) -> dict:
    """The parameters with each matrix an :class:`~handwired.engine.interval.Weight` (|w| computed once)."""

    def layer(part: dict, groups: int = 1) -> dict:
        return {"w": iv.Weight(part["w"], part["b"], groups), "b": part["b"]}

    blocks = []
    for block in params["blocks"]:
        n_embd = block["attn"]["c_attn"]["w"].shape[0]
        attn, w, b = block["attn"], block["attn"]["c_attn"]["w"], block["attn"]["c_attn"]["b"]
        c_attn = {**layer(attn["c_attn"]), "reach": _reach(attn["c_attn"]["w"], attn["c_attn"]["b"], n_head)}
        out = {**block, "attn": {"c_attn": c_attn, "c_proj": layer(attn["c_proj"], n_head),  # per head
                                 "q": layer({"w": w[:, :n_embd], "b": b[:n_embd]}),  # forward.mha's slices
                                 "kv": layer({"w": w[:, n_embd:], "b": b[n_embd:]})}}
        if "mlp" in block:
            out["mlp"] = {"c_fc": layer(block["mlp"]["c_fc"]), "c_proj": layer(block["mlp"]["c_proj"])}
        blocks.append(out)
    unembed = layer({"w": params["wte"].T, "b": np.zeros(params["wte"].shape[0])})  # tied, no bias
    return {**params, "blocks": blocks, "unembed": unembed}


def _reach(w, b, n_head):  # c_attn's w [n_embd, 3*n_embd] and b -> (above the Euclidean norm of each row of |w|
    # over each head's columns of q, k and v [n_embd, 3*head], above the norm of the floor there [3*head]): what a
    # radius per dimension of the input becomes, per head, as a norm (‖Σ_i s_i·|w_i|‖ ≤ Σ_i s_i·‖w_i‖)
    weight = iv.Weight(w, b)
    d = w.shape[1] // (3 * n_head)
    return iv.head_norms(weight.abs, d), iv.head_norms(weight.floor, d)


def pack(x):  # interval ([..., n], [..., n]) -> [..., 2n]: mid | rad
    return np.concatenate(x, axis=-1)


def unpack(packed):  # [..., 2n] -> interval ([..., n], [..., n]) (views)
    n = packed.shape[-1] // 2
    return packed[..., :n], packed[..., n:]


def _norm(x, block, name):  # interval [..., n_embd] -> interval [..., n_embd]: block[name]'s LayerNorm, if any
    return iv.layer_norm_bounds(x, **block[name]) if name in block else x


def _qkv(x, block):  # interval [n, n_embd] -> interval [n, 3*n_embd]: ln_1 and c_attn at the new position
    return iv.linear(_norm(x, block, "ln_1"), block["attn"]["c_attn"]["w"], block["attn"]["c_attn"]["b"])


def stats(qkv, n_head):  # interval [..., 3*n_embd] -> [..., 6*n_head]: per head, the Euclidean norms of q and of
    # its radii, then the key's bounds: the norms of k, of k's radii, of v, of v's radii
    d = qkv[0].shape[-1] // (3 * n_head)
    mid, rad = (iv.head_norms(part, d).reshape(*part.shape[:-1], 3, n_head) for part in qkv)  # [..., q k v, head]
    return np.stack((mid, rad), axis=-2).reshape(*qkv[0].shape[:-1], 6 * n_head)


def z_radius(q, seen, mixed, n_head, d, n):  # q's norms [..., 2*head], the largest bounds of the keys it sees
    # [..., 4*head], the pattern times the values' bounds [..., head, 3] (see _attention), d_head, n keys in its softmax
    # -> z's radius [..., head]
    h = n_head
    return iv.attention_radius(q[..., :h], q[..., h:], seen[..., :h], seen[..., h:2 * h], seen[..., 2 * h:3 * h],
                               seen[..., 3 * h:], mixed, d, n)


def _attention(q, k, v, values_bounds, mask):  # forward.attention's q, k, v [..., head, n, d_head] and mask; each
    # value's bounds per head [..., n_keys, 2*head] -> z [..., head, n_q, d_head], forward.attention's bits, and the
    # pattern p̃ times the values' bounds, and p̃·(1 - p̃) times their norms [..., head, n_q, 3]
    scores = q @ np.swapaxes(k, -1, -2)  # [..., head, n_q, n_keys]: forward.attention's steps, keeping the pattern
    scores /= np.sqrt(q.shape[-1])
    scores += mask
    pattern = softmax(scores, out=scores)
    bounds = np.moveaxis(values_bounds.reshape(*values_bounds.shape[:-1], 2, -1), -1, -3)  # [..., head, n_keys, 2]
    spread = 1 - pattern
    spread *= pattern  # p̃·(1 - p̃), each within 2u: how far a weight can move, relatively
    return pattern @ v, np.concatenate([pattern @ bounds, spread @ bounds[..., :1]], axis=-1)  # [..., head, n_q, ·]


def _bias(x, block):  # interval [n, n_embd] -> x after a silent attention: its c_proj.b alone
    return iv.add(x, iv.exact(np.broadcast_to(block["attn"]["c_proj"]["b"], x[0].shape)))


def _mlp(x, block):  # interval [..., n_embd] -> x after the block's MLP, if it has one
    if "mlp" not in block:
        return x
    mlp = block["mlp"]
    if mlp["c_proj"]["w"].zero:  # a silent MLP adds its bias alone, as the float walks do
        return iv.add(x, iv.exact(np.broadcast_to(mlp["c_proj"]["b"], x[0].shape)))
    h = _norm(x, block, "ln_2")
    post = iv.gelu_bounds(iv.linear(h, mlp["c_fc"]["w"], mlp["c_fc"]["b"]))  # [..., n_hidden]
    return iv.add(x, iv.linear(post, mlp["c_proj"]["w"], mlp["c_proj"]["b"]))


def _after(x, block, z, zeta):  # x interval [n, n_embd]; z [n, n_embd] merged heads, its radius per head [n, head]
    # -> x after the attention's c_proj, the residual and the MLP
    proj = block["attn"]["c_proj"]
    return _mlp(iv.add(x, iv.linear((z, None), proj["w"], proj["b"], zeta)), block)


def _logits(prepared, x):  # interval [n, n_embd] -> packed [n, 2*n_vocab]: ln_f and the tied unembedding
    x = _norm(x, prepared, "ln_f")
    return pack(iv.linear(x, prepared["unembed"]["w"], prepared["unembed"]["b"]))


def certified_table(model: Model):
    """What the walks pass their position functions: the prepared weights, and block 0's q, k and v for every
    (token, position) and their stats, [n_vocab, n_ctx, 3*n_embd + 6*n_head] (None without blocks)."""
    params = model.params
    prepared = prepare(params, model.n_head)
    if not params["blocks"]:
        return prepared, None
    x = iv.embed(params["wte"][:, None, :] + params["wpe"][None, :, :])  # [n_vocab, n_ctx, n_embd]
    qkv = _qkv(x, prepared["blocks"][0])
    return prepared, np.concatenate([qkv[0], stats(qkv, model.n_head)], axis=-1)


def _position_qkv(x, block, table_rows, n_head):  # -> q, k, v mids [n, 3*n_embd] and their stats [n, 6*head]
    if table_rows is not None:
        n_embd3 = table_rows.shape[-1] - 6 * n_head
        return table_rows[:, :n_embd3], table_rows[:, n_embd3:]
    h, c_attn = _norm(x, block, "ln_1"), block["attn"]["c_attn"]
    mid = linear(h[0], c_attn["w"].w, c_attn["b"])  # [n, 3*n_embd], forward's bits
    size = np.abs(h[0])  # the radius's norms per head at once, not the radius: as iv.linear's, through ‖|w|‖
    size *= c_attn["w"].size
    size += h[1]
    rows, floor = c_attn["reach"]
    reach = matmul(size, rows)  # [n, 3*head]
    reach *= 1 + iv.gamma(len(rows) + 6)  # the sums, size's two roundings, this one and the next
    reach += floor
    norms = iv.head_norms(mid, mid.shape[-1] // (3 * n_head))  # [n, 3*head]
    return mid, np.stack([part.reshape(len(mid), 3, n_head) for part in (norms, reach)], axis=-2).reshape(
        len(mid), 6 * n_head)


def tree_position(params, n_head, tokens, position, kv, setup):
    # As tree.new_position, in intervals: tokens [n]; kv per block, the parents' keys and values with room for the
    # new ones [c, position + sibling, n_embd + 4*n_head]: each key its mid, then the largest bounds of the keys up
    # to its own (4*head); each value its mid, then its own bounds (2*head, and 2*head unused)
    # -> packed logits [n, 2*n_vocab]
    prepared, table = setup
    x = iv.embed(np.take(params["wte"] + params["wpe"][position], tokens, axis=0))  # [n, n_embd]
    n, n_embd = x[0].shape
    h = n_head
    for i, (block, past) in enumerate(zip(prepared["blocks"], kv)):
        if past is None:  # a silent attention: its bias, then the MLP
            x = _mlp(_bias(x, block), block)
            continue
        keys, values = past
        qkv, st = _position_qkv(x, block, np.take(table[:, position], tokens, axis=0) if i == 0 else None, h)
        c, n_keys, _ = keys.shape
        n_sibling = n // c
        seen = st[:, 2 * h:].reshape(c, n_sibling, 4 * h)  # [c, sibling, 4*head]: the largest bounds each sees
        if n_keys > n_sibling:  # the parent's, up to its own key
            seen = np.maximum(seen, keys[:, n_keys - n_sibling - 1, None, n_embd:])
        keys[:, -n_sibling:, :n_embd] = qkv[:, n_embd:2 * n_embd].reshape(c, n_sibling, n_embd)
        keys[:, -n_sibling:, n_embd:] = seen
        values[:, -n_sibling:, :n_embd] = qkv[:, 2 * n_embd:].reshape(c, n_sibling, n_embd)
        values[:, -n_sibling:, n_embd:n_embd + 2 * h] = st[:, 4 * h:].reshape(c, n_sibling, 2 * h)
        q = split_heads(qkv[:, :n_embd].reshape(c, n_sibling, n_embd), h)  # [c, head, sibling, d_head]
        z, mixed = _attention(q, split_heads(keys[..., :n_embd], h), split_heads(values[..., :n_embd], h),
                              values[..., n_embd:n_embd + 2 * h], sibling_mask(n_keys - n_sibling, n_sibling))
        mixed = np.swapaxes(mixed, 1, 2).reshape(n, h, 3)  # [n, head, 3]
        zeta = z_radius(st[:, :2 * h], seen.reshape(n, -1), mixed, h, n_embd // h, n_keys)  # [n, head]
        x = _after(x, block, merge_heads(z).reshape(n, n_embd), zeta)
    return _logits(prepared, x)


# The certified pass of engine.tree's walk: keys and values with their bounds, logits as mid | rad
TREE = Pass(certified_table, tree_position, extra=4, logits=2)


def _block(x, block, n_head, n_query):
    # interval [batch, n_seq, n_embd] -> [batch, n_query, n_embd]: forward.block, its last n_query positions
    batch, n_seq, n_embd = x[0].shape
    h = _norm(x, block, "ln_1")
    attn = block["attn"]
    q = iv.linear((h[0][:, -n_query:], h[1][:, -n_query:]), attn["q"]["w"], attn["q"]["b"])  # [batch, n_query, E]
    kv = iv.linear(h, attn["kv"]["w"], attn["kv"]["b"])  # [batch, n_seq, 2*n_embd]
    k, v = kv[0][..., :n_embd], kv[0][..., n_embd:]
    d = n_embd // n_head
    bounds = np.stack([iv.head_norms(part, d).reshape(batch, n_seq, 2, n_head) for part in kv], axis=-2).reshape(
        batch, n_seq, 4 * n_head)  # the norms of k, of k's radii, of v, of v's radii
    seen = np.maximum.accumulate(bounds, axis=1)[:, -n_query:]  # [batch, n_query, 4*head]: keys 0…its own
    z, mixed = _attention(split_heads(q[0], n_head), split_heads(k, n_head), split_heads(v, n_head),
                          bounds[..., 2 * n_head:],
                          causal_mask(n_query, n_seq))  # [batch, head, n_query, ·]
    q_stats = np.concatenate([iv.head_norms(q[0], d), iv.head_norms(q[1], d)], axis=-1)  # [batch, n_query, 2*head]
    zeta = z_radius(q_stats, seen, np.swapaxes(mixed, 1, 2), n_head, n_embd // n_head, n_seq)  # [batch, n_q, head]
    rest = (x[0][:, -n_query:].reshape(-1, n_embd), x[1][:, -n_query:].reshape(-1, n_embd))
    out = _after(rest, block, merge_heads(z).reshape(-1, n_embd), zeta.reshape(-1, n_head))
    return out[0].reshape(batch, n_query, n_embd), out[1].reshape(batch, n_query, n_embd)


def certified_forward(prepared, tokens):  # [batch, n_seq] token ids -> packed logits [batch, 2*n_vocab], last pos
    params = prepared
    n_seq = tokens.shape[-1]
    x = iv.embed(params["wte"][tokens] + params["wpe"][np.arange(n_seq)])  # [batch, n_seq, n_embd]
    n_layer = len(prepared["blocks"])
    for i, block in enumerate(prepared["blocks"]):
        x = _block(x, block, prepared["n_head"], 1 if i == n_layer - 1 else x[0].shape[1])
    return _logits(prepared, (x[0][:, -1], x[1][:, -1]))


def _weights(params: dict) -> list[np.ndarray]:  # every array of the parameters, in a fixed order
    found = []
    for key in sorted(params):
        value = params[key]
        if isinstance(value, dict):
            found += _weights(value)
        elif isinstance(value, list):
            found += [a for item in value for a in _weights(item)]
        elif isinstance(value, np.ndarray):
            found.append(value)
    return found


def logit_bounds(logits, radius):  # [..., n_vocab] x2 -> (lower, upper) [..., n_vocab]: the real logits between
    return iv.lower(logits - radius), iv.upper(logits + radius)


def certified_logits(model: Model, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[n, n_seq] contexts of one length -> (logits, radius) [n, n_vocab] each: float64's next-token logits and
    a bound on their distance from the real-arithmetic ones."""
    last = _LAST_PREPARED.get("model")
    weights = _weights(model.params)
    if last is None or last[0] is not model or not all(np.array_equal(a, b) for a, b in zip(last[1], weights,
                                                                                              strict=True)):
        # a stream check asks batch after batch for the same model; a caller may have edited its weights in place
        last = _LAST_PREPARED["model"] = (model, [np.copy(a) for a in weights],
                                          {**prepare(model.params, model.n_head), "n_head": model.n_head})
    prepared = last[2]
    contexts = np.asarray(contexts)
    if len(contexts) == 0:
        return np.zeros((0, model.n_vocab)), np.zeros((0, model.n_vocab))
    chunk = max(1, CHUNK_POSITIONS // contexts.shape[1])
    packed = np.concatenate([certified_forward(prepared, contexts[start:start + chunk])
                             for start in range(0, len(contexts), chunk)])
    return unpack(packed)
