"""Next-token logits for every context of every length, evaluated as a tree of prefixes.

Every context of length L is its parent, a context of length L-1, plus one
token. Under the causal mask nothing at positions 0…L-2 depends on that token,
so in every block the child's keys and values there are its parent's. The tree
therefore computes one new position per context: its q, k and v, its attention
over the keys its ancestors computed, c_proj and the MLP; it never recomputes
a prefix. The numeric functions are forward.py's; only the bookkeeping is new.

Contexts of one length are numbered in base n_vocab, first token most
significant (the order of :func:`handwired.check.exhaustive_plan`): context i
of length L is context i // n_vocab of length L-1 followed by token
i % n_vocab. A *batch* is a run of consecutive contexts of one length whose
size is a power of n_vocab, so its parents are a run of whole contexts too, and
the n_vocab siblings of each parent sit side by side. The siblings attend
together, as n_vocab query positions over their parent's keys followed by
their own, each own key masked from every sibling but its owner.

Memory stays bounded however many contexts there are: the tree is walked depth
first, a batch at a time, keeping only the keys and values of the batches on
the path from the root (one batch per length, each of at most ``chunk``
contexts), plus room for their children's own.
"""

import os
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache

import numpy as np

from handwired.engine.forward import attention, layer_norm, linear, matmul, merge_heads, mlp, qkv_table, split_heads
from handwired.weightfile import Model

CHUNK = 1024  # contexts evaluated together: enough to amortise numpy's per-call cost, few enough for the cache
PATH_MEMORY = 64 * 2**20  # bytes of keys and values one walk keeps on its path, at most
WORKERS = min(4, os.cpu_count() or 1)  # threads walking subtrees side by side
PARALLEL_FROM = 20_000  # contexts of full length: below this, threads cost more than they save
QUEUE = 8  # batches a thread may compute ahead of the consumer


@dataclass(frozen=True)
class TreeBatch:
    """The next-token logits of contexts first…first+n-1 of one length."""

    length: int
    first: int  # index of its first context among all contexts of its length, in base-n_vocab order
    logits: np.ndarray  # [n, n_vocab]; [n, 2*n_vocab] from the certified pass: mid | rad


@cache
def sibling_mask(n_past, n_sibling):  # -> [n_sibling, n_past + n_sibling]
    # Every sibling sees the keys of its ancestors and its own key, never another sibling's.
    own = np.where(np.eye(n_sibling, dtype=bool), 0.0, -np.inf)  # [n_sibling, n_sibling]
    return np.concatenate([np.zeros((n_sibling, n_past)), own], axis=1)


def new_position_block(x, params, n_head, keys, values, qkv=None):
    # x [n, n_embd] at the new position; keys, values [c, n_past + sibling, n_embd]: the c parents' keys and values
    # with room for the new ones, which this block writes there -> x [n, n_embd] after the block
    n, n_embd = x.shape
    c, n_keys, _ = keys.shape
    n_sibling = n // c
    if qkv is None:
        h = layer_norm(x, **params["ln_1"]) if "ln_1" in params else x  # [n, n_embd]
        qkv = linear(h, **params["attn"]["c_attn"])  # [n, 3*n_embd]
    q = qkv[:, :n_embd].reshape(c, n_sibling, n_embd)  # [c, sibling, n_embd]
    keys[:, -n_sibling:] = qkv[:, n_embd : 2 * n_embd].reshape(c, n_sibling, n_embd)
    values[:, -n_sibling:] = qkv[:, 2 * n_embd :].reshape(c, n_sibling, n_embd)
    mask = sibling_mask(n_keys - n_sibling, n_sibling)  # [sibling, n_keys]
    z = attention(split_heads(q, n_head), split_heads(keys, n_head), split_heads(values, n_head), mask)
    return _mlp(x + linear(merge_heads(z).reshape(n, n_embd), **params["attn"]["c_proj"]), params)


def _mlp(x, params):  # x [n, n_embd], the caller's own array -> x after the block's MLP, if it has one
    if "mlp" in params:
        h = layer_norm(x, **params["ln_2"]) if "ln_2" in params else x  # [n, n_embd]
        x += mlp(h, **params["mlp"])
    return x


def silent_attention(block: dict) -> bool:
    """An attention whose c_proj.w is all zeros adds exactly its c_proj.b, whatever it reads: its keys and values are
    never made (a starter's blocks, or one not wired yet)."""
    return not block["attn"]["c_proj"]["w"].any()


def silent_block(x, params):  # x [n, n_embd] -> x after a block whose attention is silent: its bias, then the MLP
    return _mlp(x + params["attn"]["c_proj"]["b"], params)


def new_position(params, n_head, tokens, position, kv, table=None):
    # tokens [n] the new token of each context; kv: per block, the parents' keys and values with room for the
    # new ones, [c, position + sibling, n_embd] each (None: a silent attention) -> logits [n, n_vocab] for the token
    # after each context; np.take of whole rows: a fraction of the cost of fancy indexing on this many rows
    x = np.take(params["wte"] + params["wpe"][position], tokens, axis=0)  # [n, n_embd]
    for i, (block_params, past) in enumerate(zip(params["blocks"], kv)):
        if past is None:
            x = silent_block(x, block_params)
            continue
        qkv = np.take(table[:, position], tokens, axis=0) if table is not None and i == 0 else None  # [n, 3*n_embd]
        keys, values = past
        x = new_position_block(x, block_params, n_head, keys, values, qkv)
    if "ln_f" in params:
        x = layer_norm(x, **params["ln_f"])  # [n, n_embd]
    return matmul(x, params["wte"].T)  # [n, n_vocab], tied unembedding


def inherit(parents, out):  # [c, n_past + sibling, n_embd] -> out [n, n_past + 1 + room, n_embd]
    # Each child's keys: its parent's, then its own (left by new_position_block); the rest is room for its children.
    c, n_keys, n_embd = parents.shape
    n_sibling = len(out) // c
    n_past = n_keys - n_sibling
    children = out.reshape(c, n_sibling, out.shape[1], n_embd)
    children[:, :, :n_past] = parents[:, None, :n_past]
    children[:, :, n_past] = parents[:, n_past:]
    return out


@dataclass(frozen=True)
class Pass:
    """How a walk evaluates a batch's new position: ``position(params, n_head, tokens, position, kv, setup)``, as
    :func:`new_position` (or :func:`handwired.engine.trie`'s, as it walks), given ``setup(model)`` made once per
    walk, each of its keys and values n_embd + ``extra``·n_head numbers and its logits ``logits`` per token
    (:mod:`handwired.engine.certify`'s: 4 and 2)."""

    setup: Callable
    position: Callable
    extra: int = 0
    logits: int = 1  # numbers per logit (2: mid | rad)


FLOAT = Pass(lambda model: qkv_table(model.params) if model.n_layer else None,
             lambda *args: new_position(*args))  # the module's function as it is when called


@dataclass
class _Level:
    """The batch of one length on the path from the root: its contexts' keys and values, with room for children."""

    first: int
    kv: list[tuple[np.ndarray, np.ndarray] | None]  # per block [n, length + n_vocab, n_embd] each; None: silent


def _walk(model: Model, table, size: int, min_length: int, deepest: int, path: dict[int, _Level],
          start: tuple[int, int, int], evaluator: Pass = FLOAT) -> Iterator[TreeBatch]:
    """Depth first from the batch ``start`` = (length, first, n) down to length ``deepest``.

    A batch of length L is evaluated right after the batch of length L-1 that
    holds its parents, so the keys and values of every ancestor are on ``path``.
    """
    n_vocab, n_embd, params = model.n_vocab, model.n_embd, model.params
    stack = [start]  # (length, first, n) of the batches still to evaluate
    while stack:
        length, first, n = stack.pop()
        parents = path[length - 1]
        rows = slice(first // n_vocab - parents.first, (first + n) // n_vocab - parents.first)
        kv = [None if past is None else (past[0][rows], past[1][rows])
              for past in parents.kv]  # per block [c, length-1 + n_vocab, n_embd] x2, None: a silent attention
        tokens = np.arange(first, first + n) % n_vocab  # [n]
        logits = evaluator.position(params, model.n_head, tokens, length - 1, kv, table)
        if length >= min_length:
            yield TreeBatch(length, first, logits)
        if length < model.n_ctx:  # the children's keys: this batch's, then room for their own
            level = path.get(length)
            if level is None:  # the first batch of this length on this walk: make room, reused by the next ones
                shape = (n, length + n_vocab, n_embd + evaluator.extra * model.n_head)
                level = path[length] = _Level(first, [None if past is None else (np.empty(shape), np.empty(shape))
                                                      for past in kv])
            level.first = first
            for past, own in zip(kv, level.kv):
                if past is not None and own is not None:
                    inherit(past[0], own[0])
                    inherit(past[1], own[1])
        if length < deepest:
            step = min(n * n_vocab, size)
            children = range(first * n_vocab, (first + n) * n_vocab, step)
            stack.extend((length + 1, child, step) for child in reversed(children))


def batch_size(model: Model, chunk: int, memory: int = PATH_MEMORY) -> int:
    """Contexts per batch: a power of n_vocab (whole families of siblings), at most ``chunk``,
    path within ``memory``."""
    n_vocab = model.n_vocab
    kept = sum(length + n_vocab for length in range(1, model.n_ctx))  # key rows per context on a full path
    per_context = 8 * 2 * max(1, model.n_layer) * model.n_embd * kept  # bytes: float64 keys and values
    size = n_vocab
    while n_vocab > 1 and size * n_vocab <= min(chunk, memory // max(1, per_context)):
        size *= n_vocab
    return size


def evaluate_tree(model: Model, min_length: int = 1, chunk: int | None = None,
                  workers: int | None = None, evaluator: Pass = FLOAT) -> Iterator[TreeBatch]:
    """The logits of every context of length min_length…n_ctx, a batch of at most ``chunk`` at a time.

    Contexts shorter than ``min_length`` are evaluated (their descendants need
    them) but not yielded. The first few lengths are evaluated here, whole; the
    subtrees below them are walked depth first on ``workers`` threads (numpy
    releases the GIL in its loops), their batches yielded in a fixed
    round-robin order. ``evaluator``: the float pass, or another with the same walk (the certified one).
    """
    n_vocab, n_embd = model.n_vocab, model.n_embd
    workers = WORKERS if workers is None else workers
    table = evaluator.setup(model)  # block 0's q, k, v depend on token and position only: looked up
    size = batch_size(model, CHUNK if chunk is None else chunk)  # as the float pass's: the certified path keeps a
    shape = (1, n_vocab, n_embd + evaluator.extra * model.n_head)  # key's extra numbers beyond the memory figure
    root = _Level(0, [None if silent_attention(block) else (np.empty(shape), np.empty(shape))
                      for block in model.params["blocks"]])
    path = {0: root}
    # The top: the shortest lengths, until there are enough subtrees to share out.
    top = 0
    if workers > 1 and n_vocab > 1 and n_vocab**model.n_ctx >= PARALLEL_FROM:
        while n_vocab**top < 2 * workers and n_vocab ** (top + 1) <= size and top + 1 < model.n_ctx:
            top += 1
    if top:
        yield from _walk(model, table, size, min_length, top, path, (1, 0, n_vocab), evaluator)
        subtrees = [_walk(model, table, size, min_length, model.n_ctx, dict(path), (top + 1, first * n_vocab, n_vocab),
                          evaluator)
                    for first in range(n_vocab**top)]
        yield from _in_threads([subtrees[i::workers] for i in range(workers)])
    else:
        yield from _walk(model, table, size, min_length, model.n_ctx, path, (1, 0, n_vocab), evaluator)


_DONE = object()


def _in_threads(groups: list[list[Iterator[TreeBatch]]]) -> Iterator[TreeBatch]:
    """Run each group of walks on its own thread; yield one batch from each thread in turn."""
    stop = threading.Event()
    queues: list[queue.Queue] = [queue.Queue(maxsize=QUEUE) for _ in groups]

    def put(out: queue.Queue, item) -> None:
        while not stop.is_set():
            try:
                return out.put(item, timeout=0.1)
            except queue.Full:
                continue

    def work(walks: list[Iterator[TreeBatch]], out: queue.Queue) -> None:
        try:
            for walk in walks:
                for batch in walk:
                    if stop.is_set():
                        return
                    put(out, batch)
            put(out, _DONE)
        except BaseException as error:  # handed to the consumer, which raises it
            put(out, error)

    for group, out in zip(groups, queues):
        threading.Thread(target=work, args=(group, out), daemon=True, name="handwired-tree").start()
    try:
        active = list(queues)
        while active:
            for out in list(active):
                item = out.get()
                if item is _DONE:
                    active.remove(out)
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
    finally:
        stop.set()  # the consumer stopped early (Ctrl-C, an error): the threads stop at their next batch
