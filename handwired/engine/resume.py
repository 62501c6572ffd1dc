"""Variants of one model over one trie of contexts, sharing the stages they agree on.

A sweep of a constant, or an ablation, evaluates the same contexts with models that differ in a few parameters.
The forward pass is a row of *stages* — the embeddings (``wte``, ``wpe``; ``wte`` is the unembedding too), then
for each block its attention's pattern and values (``ln_1``, ``c_attn``), its attention's output (``c_proj``) and
its MLP (``ln_2``, ``mlp``), then the final LayerNorm — and what enters a stage depends only on the stages before
it. So what enters the first stage any variant changes (the residual stream; for an attention's output, also the
heads' ``z``) is computed once, at every node of the trie, by the base model
(:func:`handwired.engine.trie.capture_trie`), and each variant resumes there: its own stages run level by level as
the trie runs them, one new position per node, with forward.py's functions. The logits are the same, bit for bit,
as evaluating the variant from its embeddings (the same operations on the same numbers, in the same chunks).
"""

from dataclasses import dataclass

import numpy as np

from handwired.engine.batch import pool
from handwired.engine.forward import layer_norm, linear, matmul, mlp
from handwired.engine.trie import CHUNK, Trie, _block_rest, capture_trie, evaluate_trie
from handwired.weightfile import Model


def stages(params: dict) -> list[dict]:
    """Each stage's parameters, in forward order: the embeddings; per block its attention's pattern and values
    (ln_1, c_attn), its attention's output (c_proj) and its MLP (ln_2, mlp); the final LayerNorm."""
    out = [{"wte": params["wte"], "wpe": params["wpe"]}]
    for block in params["blocks"]:
        out.append({"c_attn": block["attn"]["c_attn"], **{key: block[key] for key in ("ln_1",) if key in block}})
        out.append({"c_proj": block["attn"]["c_proj"]})
        out.append({key: block[key] for key in ("ln_2", "mlp") if key in block})
    out.append({key: params[key] for key in ("ln_f",) if key in params})
    return out


def _same(a, b) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(
            _same(a[key], b[key]) for key in a)
    return a is b or np.array_equal(a, b)


def shared_stages(base: dict, other: dict) -> int:
    """How many leading stages two models' parameters share (all of them when they are equal)."""
    mine, theirs = stages(base), stages(other)
    if len(mine) != len(theirs):
        return 0
    for i, (a, b) in enumerate(zip(mine, theirs)):
        if not _same(a, b):
            return i
    return len(mine)


def _entry(model: Model, stage: int) -> tuple[tuple[str, ...], bool] | None:
    """The hooks holding what enters ``stage`` (1: block 0's attention …, 3·n_layer + 1: ln_f), and whether a
    later stage attends (so every level is needed, not only the judged ones); None: nothing is kept for it."""
    n_layer = model.n_layer
    if stage < 2 or n_layer == 0:  # the embeddings are cheaper to compute than to keep
        return None
    if stage > 3 * n_layer:
        return (f"blocks.{n_layer - 1}.hook_resid_post",), False
    block, kind = divmod(stage - 1, 3)
    at = f"blocks.{block}."
    if kind == 0:
        return (at + "hook_resid_pre",), True
    if kind == 1:  # the attention's output: its pattern and values are the base model's, held in z
        return (at + "hook_resid_pre", at + "attn.hook_z"), block < n_layer - 1
    if "mlp" not in model.params["blocks"][block]:
        return None  # nothing is recorded between a block without an MLP and the next
    return (at + "hook_resid_mid",), block < n_layer - 1


@dataclass(frozen=True)
class Shared:
    """What the base model computes before ``stage``, at every node it is needed: per hook, per level [m, …]."""

    stage: int  # 0: nothing is shared
    inputs: tuple[tuple[np.ndarray | None, ...], ...]
    logits: tuple[np.ndarray | None, ...]  # the base model's own next-token logits, per level judged


def share(model: Model, trie: Trie, stage: int, lengths: set[int]) -> Shared:
    """Evaluate the base model, keeping what variants that change nothing before ``stage`` share."""
    entry = _entry(model, stage)
    while entry is None and stage > 1:  # a block without an MLP: resume at its attention's output instead
        stage -= 1
        entry = _entry(model, stage)
    if entry is None:
        return Shared(0, (), tuple(evaluate_trie(model, trie, lengths)))
    hooks, attends = entry
    captured = [capture_trie(model, trie, hook, None if attends else lengths) for hook in hooks]
    return Shared(stage, tuple(tuple(kept) for _, kept in captured), tuple(captured[0][0]))


def variant_logits(shared: Shared, variant: Model, trie: Trie, lengths: set[int], base: Model,
                   chunk: int = CHUNK) -> list[np.ndarray | None]:
    """The variant's next-token logits per level in ``lengths``: resumed from ``shared`` when the variant changes
    nothing before its stage, else evaluated whole."""
    if shared.stage == 0 or shared_stages(base.params, variant.params) < shared.stage:
        return evaluate_trie(variant, trie, lengths)
    block, kind = divmod(shared.stage - 1, 3)
    attending = range(block + (kind > 0), variant.n_layer)  # the blocks whose attention runs again
    store = {b: (np.empty((trie.nodes, variant.n_embd)), np.empty((trie.nodes, variant.n_embd))) for b in attending}
    out: list[np.ndarray | None] = []
    for length, level in enumerate(trie.levels, start=1):
        wanted = length in lengths
        logits = np.empty((len(level.prefixes), variant.n_vocab)) if wanted else None
        if wanted or store:
            def run(start: int, level=level, logits=logits, length=length) -> None:
                rows = slice(start, start + chunk)
                inputs = [_kept(kept, length)[rows] for kept in shared.inputs]
                result = _resume(variant, level, rows, inputs, block, kind, store, logits is not None)
                if logits is not None:
                    logits[rows] = result

            starts = range(0, len(level.prefixes), chunk)
            list(pool().map(run, starts)) if len(starts) > 1 else run(0)
        out.append(logits)
    return out


def _mlp(x: np.ndarray, block: dict) -> np.ndarray:  # [n, n_embd] -> [n, n_embd] after the block's MLP, if any
    if "mlp" not in block:
        return x
    h = layer_norm(x, **block["ln_2"]) if "ln_2" in block else x  # [n, n_embd]
    return x + mlp(h, **block["mlp"])


def _kept(kept: tuple[np.ndarray | None, ...], length: int) -> np.ndarray:
    """The base model's value at every prefix of ``length``: kept, as every level is that a variant resumes on."""
    level = kept[length - 1]
    if level is None:
        raise ValueError(f"the prefixes of length {length} were not kept")
    return level


def _resume(model: Model, level, rows: slice, inputs: list, first: int, kind: int, store: dict,
            logits: bool) -> np.ndarray | None:
    # the nodes `rows` of `level`, inputs: what enters block `first` at stage `kind` (0 attention: x; 1 its
    # output: x and z [n, head, d_head]; 2 its MLP: x) [n, …] -> their next-token logits [n, n_vocab]
    params, n_embd = model.params, model.n_embd
    x = inputs[0]  # [n, n_embd]
    own = np.arange(level.first, level.first + len(x)) + rows.start  # [n] these nodes' numbers
    seen = np.concatenate([level.ancestors[rows], own[:, None]], axis=1)  # [n, length]: ancestors, then itself
    for b in range(first, model.n_layer):
        block = params["blocks"][b]
        if b == first and kind:  # this block's attention pattern (and with kind 2 its output) is the base model's
            if kind == 1:
                x = x + linear(inputs[1].reshape(len(x), n_embd), **block["attn"]["c_proj"])  # [n, n_embd]
            x = _mlp(x, block)
            continue
        h = layer_norm(x, **block["ln_1"]) if "ln_1" in block else x  # [n, n_embd]
        qkv = linear(h, **block["attn"]["c_attn"])  # [n, 3*n_embd]
        keys, values = store[b]
        keys[own], values[own] = qkv[:, n_embd:2 * n_embd], qkv[:, 2 * n_embd:]
        if not logits and b == model.n_layer - 1:  # only descendants read this node: its keys are stored
            return None
        x = _block_rest(x, block, qkv, np.take(keys, seen, axis=0), np.take(values, seen, axis=0), model.n_head)
    if not logits:
        return None
    if "ln_f" in params:
        x = layer_norm(x, **params["ln_f"])  # [n, n_embd]
    return matmul(x, params["wte"].T)  # [n, n_vocab], tied unembedding
