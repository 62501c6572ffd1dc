"""Next-token logits for the contexts of a domain, evaluated as a trie of their prefixes, level by level.

A puzzle's domain is a set of contexts; their prefixes form a trie. Level L
holds every distinct prefix of length L, each its parent (a prefix of length
L-1) plus one token. Under the causal mask nothing at positions 0…L-2 depends
on that token, so in every block a node's keys and values there are its
ancestors', and each node computes one new position: its q, k and v, its
attention over its ancestors' keys and its own, c_proj and the MLP. Unlike
:mod:`handwired.engine.tree`, which walks every string over the vocab depth
first, the trie holds only the prefixes the domain reaches, and keeps every
node's own keys and values (one position per node and block) for its
descendants: a domain's size bounds the memory, not n_vocab ** n_ctx.
"""

from dataclasses import dataclass

import numpy as np

from handwired.engine.batch import pool
from handwired.engine.forward import (
    attention,
    hooked_layer_norm,
    linear,
    matmul,
    merge_heads,
    mlp,
    qkv_table,
    softmax,
    split_heads,
)
from handwired.weightfile import Model

CHUNK = 4096  # nodes evaluated together: numpy's per-call cost amortised, the gathered keys kept small


@dataclass(frozen=True)
class Level:
    """The distinct prefixes of one length L."""

    prefixes: np.ndarray  # [m, L] token ids, in sorted order
    first: int  # the node number of the first of them: nodes are numbered level by level, through the whole trie
    ancestors: np.ndarray  # [m, L-1]: the node numbers of each prefix's ancestors, of lengths 1…L-1


@dataclass(frozen=True)
class Trie:
    levels: tuple[Level, ...]  # levels[L-1]: the prefixes of length L
    full: int = 0  # n_vocab when every level holds every string (full_trie): a prefix's index is its digits

    @property
    def nodes(self) -> int:
        return sum(len(level.prefixes) for level in self.levels)

    def find(self, contexts: np.ndarray) -> np.ndarray:
        """[n, L] contexts of one length, all in the trie -> [n] their indices in level L."""
        if self.full:  # base-n_vocab digits, first token most significant: the order contexts_of numbers them
            place = self.full ** np.arange(contexts.shape[1] - 1, -1, -1, dtype=np.int64)  # [L]
            return contexts.astype(np.int64) @ place  # [n]
        level = self.levels[contexts.shape[1] - 1]
        return np.searchsorted(_rows(level.prefixes), _rows(contexts))


def _rows(array: np.ndarray) -> np.ndarray:  # [n, L] -> [n] one comparable value per row (bytewise order)
    array = np.ascontiguousarray(array)
    return array.view(np.dtype((np.void, array.dtype.itemsize * array.shape[1]))).ravel()


def build_trie(contexts: list[np.ndarray]) -> Trie:
    """Every prefix of every context given (arrays [n, L] of token ids, any lengths), level by level."""
    longest = max(batch.shape[1] for batch in contexts)
    levels: list[Level] = []
    for length in range(1, longest + 1):
        cut = [batch[:, :length] for batch in contexts if batch.shape[1] >= length]
        stacked = np.ascontiguousarray(np.concatenate(cut))  # [n, length]
        distinct = np.unique(_rows(stacked))  # sorted, as searchsorted will want them
        prefixes = distinct.view(stacked.dtype).reshape(len(distinct), length)  # [m, length]
        parent = None if length == 1 else np.searchsorted(_rows(levels[-1].prefixes), _rows(prefixes[:, :-1]))
        levels.append(_level(levels, prefixes, parent))
    return Trie(tuple(levels))


def full_trie(n_vocab: int, longest: int) -> Trie:
    """Every string of length 1…``longest`` over n_vocab tokens, level by level, without sorting anything:
    string i of length L is string i // n_vocab of length L-1 followed by token i % n_vocab."""
    levels: list[Level] = []
    dtype = np.min_scalar_type(n_vocab)
    for length in range(1, longest + 1):
        index = np.arange(n_vocab**length, dtype=np.int64)  # [m]
        place = n_vocab ** np.arange(length - 1, -1, -1, dtype=np.int64)  # [L]
        prefixes = ((index[:, None] // place) % n_vocab).astype(dtype)  # [m, L]
        levels.append(_level(levels, prefixes, None if length == 1 else index // n_vocab))
    return Trie(tuple(levels), n_vocab)


def _level(levels: list[Level], prefixes: np.ndarray, parent: np.ndarray | None) -> Level:
    """The level after ``levels`` holding ``prefixes`` [m, L], each the child of ``parent`` [m] in the level above
    (None for the first level): its ancestors are the parent's, then the parent itself."""
    if parent is None:
        return Level(prefixes, 0, np.zeros((len(prefixes), 0), dtype=np.intp))
    previous = levels[-1]
    ancestors = np.concatenate([previous.ancestors[parent], previous.first + parent[:, None]], axis=1)  # [m, L-1]
    return Level(prefixes, previous.first + len(previous.prefixes), ancestors)


def evaluate_trie(model: Model, trie: Trie, lengths: set[int] | None = None,
                  chunk: int = CHUNK) -> list[np.ndarray | None]:
    """The next-token logits of every node whose length is in ``lengths`` (default: all): per level, [m, n_vocab].

    The other levels are evaluated only as far as their descendants need: their keys and values in every
    block, not the last block's attention and MLP, nor the unembedding. Their entry is None.
    """
    return _evaluate(model, trie, lengths, chunk, None)[0]


def capture_trie(model: Model, trie: Trie, hook: str, lengths: set[int] | None = None,
                 chunk: int = CHUNK) -> tuple[list[np.ndarray | None], list[np.ndarray | None]]:
    """As :func:`evaluate_trie`, and the intermediate named ``hook`` (a TransformerLens hook name such as
    ``blocks.0.mlp.hook_pre``) at each node's own, last, position: per level in ``lengths``, [m, …] with
    forward's shapes less the batch and position axes (``[head, n_keys]`` for a pattern, ``[head, d_head]`` for
    q, k, v and z). Raises KeyError when the model records no such intermediate."""
    return _evaluate(model, trie, lengths, chunk, hook)


def _evaluate(model, trie, lengths, chunk, capture):
    params, n_embd = model.params, model.n_embd
    table = qkv_table(params) if model.n_layer else None  # block 0's q, k, v depend on token and position only
    # per block, every node's own key and value (its new position's), by node number: what its descendants read;
    # None for a silent attention, skipped unless an intermediate is captured
    store = [None if capture is None and silent(block["attn"])
             else (np.empty((trie.nodes, n_embd)), np.empty((trie.nodes, n_embd))) for block in params["blocks"]]
    logits: list[np.ndarray | None] = []
    kept: list[np.ndarray | None] = [None] * len(trie.levels)  # what ``capture`` keeps, per level
    for length, level in enumerate(trie.levels, start=1):
        wanted = lengths is None or length in lengths
        out = np.empty((len(level.prefixes), model.n_vocab)) if wanted else None
        pieces: dict[int, np.ndarray] = {}  # capture's values, by the first row of their chunk

        def run(start: int, level=level, length=length, out=out, pieces=pieces) -> None:
            rows = slice(start, start + chunk)
            hook = None
            if capture is not None and out is not None:
                def keep(name, value, start=start):  # keep the one intermediate asked for, this chunk's rows
                    if name == capture:
                        pieces[start] = np.array(value)
                hook = keep
            result = _new_position(model, table, level, rows, length, store, out is not None, hook)
            if out is not None:
                out[rows] = result

        starts = range(0, len(level.prefixes), chunk)
        if len(starts) > 1:  # numpy releases the GIL: chunks of one level side by side on every core
            list(pool().map(run, starts))
        else:
            run(0)
        logits.append(out)
        if pieces:
            kept[length - 1] = np.concatenate([pieces[start] for start in sorted(pieces)])
    if capture is not None and any(level is None and (lengths is None or i + 1 in lengths)
                                   for i, level in enumerate(kept)):
        raise KeyError(capture)  # the model records no such intermediate
    return logits, kept


def silent(layer: dict) -> bool:
    """An attention or MLP whose c_proj.w is all zeros adds exactly its c_proj.b, whatever it reads: a starter's
    blocks, or one a player has not wired yet, cost nothing to evaluate."""
    return not layer["c_proj"]["w"].any()


def _ignore(name, value) -> None:  # the hook when nothing is recorded
    return None


def _new_position(model, table, level, rows, length, store, logits=True, hook=None):
    # the nodes `rows` of level `length`: one new position each -> their next-token logits [n, n_vocab]
    # (without ``logits``: only their keys and values, which stop being needed after the last block's c_attn)
    # ``hook(name, value)``: each intermediate at the new position, under forward's hook names, [n, …]
    params, n_embd = model.params, model.n_embd
    tokens = level.prefixes[rows, -1]  # [n]
    ancestors = level.ancestors[rows]  # [n, length-1] node numbers
    own = np.arange(level.first, level.first + len(tokens)) + rows.start  # [n] these nodes' numbers
    x = params["wte"][tokens] + params["wpe"][length - 1]  # [n, n_embd]
    if hook is not None:
        hook("hook_embed", params["wte"][tokens])
        hook("hook_pos_embed", np.broadcast_to(params["wpe"][length - 1], x.shape))
    for b, block in enumerate(params["blocks"]):
        at = _ignore if hook is None else (lambda name, value, b=b: hook(f"blocks.{b}.{name}", value))
        at("hook_resid_pre", x)
        if store[b] is None:  # silent attention (nothing captured): only its bias reaches the residual stream
            x = x + block["attn"]["c_proj"]["b"]  # [n, n_embd]
            if not logits and all(kv is None for kv in store[b:]):
                return None
            x = _mlp(x, block, at)
            continue
        if b == 0 and table is not None:
            qkv = table[tokens, length - 1]  # [n, 3*n_embd]
            if hook is not None and "ln_1" in block:
                hooked_layer_norm(x, block["ln_1"], at, "ln1")
        else:
            h = hooked_layer_norm(x, block["ln_1"], None if hook is None else at, "ln1") if "ln_1" in block else x
            qkv = linear(h, **block["attn"]["c_attn"])  # [n, 3*n_embd]
        keys, values = store[b]
        keys[own], values[own] = qkv[:, n_embd:2 * n_embd], qkv[:, 2 * n_embd:]
        if not logits and all(kv is None for kv in store[b + 1:]):  # no later block reads this node's keys
            return None
        seen = np.concatenate([ancestors, own[:, None]], axis=1)  # [n, length]: its ancestors' keys, then its own
        x = _block_rest(x, block, qkv, np.take(keys, seen, axis=0), np.take(values, seen, axis=0), model.n_head, at)
    if "ln_f" in params:
        x = hooked_layer_norm(x, params["ln_f"], hook, "ln_final")
    out = matmul(x, params["wte"].T)  # [n, n_vocab], tied unembedding
    if hook is not None:
        hook("logits", out)
        hook("probs", softmax(out))
    return out


def _block_rest(x, block, qkv, all_k, all_v, n_head, at=_ignore):
    # x [n, n_embd] at the new position, its qkv [n, 3*n_embd], every key and value it sees [n, length, n_embd]
    # -> x after the block's attention and MLP; ``at(name, value)``: the block's intermediates, [n, …]
    n, n_embd = x.shape
    q = qkv[:, :n_embd]  # [n, n_embd]
    mask = np.zeros((1, all_k.shape[1]))  # the causal mask lets the last position see every key
    attend = None
    if at is not _ignore:
        for i, name in enumerate(("hook_q", "hook_k", "hook_v")):
            at(f"attn.{name}", qkv[:, i * n_embd:(i + 1) * n_embd].reshape(n, n_head, -1))  # [n, head, d_head]

        def one_query(name, value):  # [n, head, 1, L] -> [n, head, L]: the one query is the new position
            at(f"attn.{name}", value[:, :, 0])
        attend = one_query
    z = attention(split_heads(q[:, None], n_head), split_heads(all_k, n_head), split_heads(all_v, n_head), mask,
                  attend)  # [n, head, 1, d_head]
    attn_out = linear(merge_heads(z)[:, 0], **block["attn"]["c_proj"])  # [n, n_embd]
    x = x + attn_out
    at("attn.hook_z", z[:, :, 0])  # [n, head, d_head]
    at("hook_attn_out", attn_out)
    x = _mlp(x, block, at)
    at("hook_resid_post", x)
    return x


def _mlp(x, block, at):  # [n, n_embd] -> [n, n_embd]: after the block's MLP, if it has one; ``at`` as in _block_rest
    if "mlp" not in block:
        return x
    if at is _ignore and silent(block["mlp"]):  # nothing captured: a silent MLP adds its bias alone
        return x + block["mlp"]["c_proj"]["b"]
    at("hook_resid_mid", x)
    h = hooked_layer_norm(x, block["ln_2"], None if at is _ignore else at, "ln2") if "ln_2" in block else x
    mlp_out = mlp(h, **block["mlp"], hook=None if at is _ignore else at)
    at("hook_mlp_out", mlp_out)
    return x + mlp_out
