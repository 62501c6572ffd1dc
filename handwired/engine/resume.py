"""Variants of one model walked together over one set of contexts, sharing the stages they agree on.

A sweep of a constant, or an ablation, evaluates the same contexts with models that differ in a few parameters.
The forward pass is a row of *stages* — the embeddings (``wte``, ``wpe``; ``wte`` is the unembedding too), then
for each block its attention's pattern and values (``ln_1``, ``c_attn``), its attention's output (``c_proj``) and
its MLP (``ln_2``, ``mlp``), then the final LayerNorm — and what enters a stage depends only on the stages before
it. The contexts are walked once as a trie of their prefixes (:mod:`handwired.engine.walk`, depth first, in bounded
batches): at each batch the base model's own walk (:func:`handwired.engine.arithmetic.floats.float_walk`, in step with
this one) records what enters the first stage each variant changes (the residual stream; for an attention's output, also
the heads' ``z``), and each variant resumes there on the same batch: the walk's one block step
(:func:`handwired.engine.block_step.block_step`) in the float step's arithmetic, entering at that stage, keeping its own
keys and values for the blocks whose attention it runs again. What a variant does not change is computed once per batch,
for all of them; nothing is kept beyond the walk's path. A variant that changes its embeddings is its own float walk;
the others' logits are their own walk's to rounding (the same operations, sums perhaps in another order).
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from handwired.engine import walk as walking
from handwired.engine.arithmetic.floats import Floats, float_walk, prepare, silent
from handwired.engine.block_step import ATTENTION, MLP, PROJECTION, Entry, block_step
from handwired.engine.cost import table_bytes, variant_node_bytes
from handwired.engine.walk import Shape, Visit, batch_nodes
from handwired.weightfile import Model

VARIANT_MEMORY = 2 * walking.PATH_MEMORY  # bytes of the variants' own keys and values one walk keeps, at most


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


def _entry(model: Model, stage: int) -> tuple[str, ...] | None:
    """The hooks holding what enters ``stage`` (1: block 0's attention …, 3·n_layer + 1: ln_f); None: nothing is
    recorded there (the embeddings, or between a block without an MLP and the next)."""
    n_layer = model.n_layer
    if stage < 2 or n_layer == 0:  # the embeddings are cheaper to compute again than to hand over
        return None
    if stage > 3 * n_layer:
        return (f"blocks.{n_layer - 1}.hook_resid_post",)
    block, kind = divmod(stage - 1, 3)
    at = f"blocks.{block}."
    if kind == 0:
        return (at + "hook_resid_pre",)
    if kind == 1:  # the attention's output: its pattern and values are the base model's, held in z
        return (at + "hook_resid_pre", at + "attn.hook_z")
    return (at + "hook_resid_mid",) if "mlp" in model.params["blocks"][block] else None


@dataclass(frozen=True)
class Resumed:
    """A variant and where it resumes: at ``stage`` (0: from its embeddings), entering with the base model's
    ``hooks``; it runs again the attention of the blocks ``attends`` names (keeping their keys and values)."""

    model: Model
    stage: int
    hooks: tuple[str, ...]

    @property
    def block(self) -> int:  # the first block it runs (n_layer: only ln_f and the unembedding)
        return min(self.model.n_layer, (self.stage - 1) // 3) if self.stage else 0

    @property
    def part(self) -> str:  # where in that block it starts
        return (ATTENTION, PROJECTION, MLP)[(self.stage - 1) % 3]

    @property
    def attends(self) -> list[int]:
        first = self.block + (self.stage > 0 and (self.stage - 1) % 3 > 0)
        return [b for b in range(first, self.model.n_layer) if not silent(self.model.params["blocks"][b]["attn"])]


def resumed(base: Model, variant: Model) -> Resumed:
    """Where ``variant`` resumes from ``base``: the first stage it changes, or earlier where nothing is recorded."""
    stage = shared_stages(base.params, variant.params)
    entry = _entry(base, stage)
    while entry is None and stage > 1:  # a block without an MLP: resume at its attention's output instead
        stage -= 1
        entry = _entry(base, stage)
    return Resumed(variant, stage if entry is not None else 0, entry or ())


def groups(model: Model, variants: list[Resumed], chunk: int) -> list[list[int]]:
    """The variants (by index) walked together, in order: what they keep (``cost.variant_node_bytes``, and the q, k,
    v table of one run from its embeddings) within VARIANT_MEMORY per walk; at least one walk, empty with no
    variants."""
    out: list[list[int]] = [[]]
    used = 0
    for i, variant in enumerate(variants):
        size = chunk * variant_node_bytes(model, len(variant.attends)) + (0 if variant.stage else table_bytes(model))
        if out[-1] and used + size > VARIANT_MEMORY:
            out.append([])
            used = 0
        out[-1].append(i)
        used += size
    return out


def variant_walk(base: Model, variants: list[Resumed], shape: Shape, chunk: int | None = None,
                 replay: Sequence[dict[str, np.ndarray]] | None = None,
                 ) -> Iterator[tuple[Visit, np.ndarray | None, dict[str, np.ndarray]]]:
    """Every batch of ``shape``'s walk: the visit (its logits the base model's), the variants' logits when the
    batch has judged nodes ([variants, n, n_vocab]; else None), and what the base model handed them at each node
    (the hooks they enter with, [n, …] each). The base model, and each variant that changes its embeddings, is its
    own :func:`float_walk`, run in step with this one (the same shape in the same batches: the same batches come in
    the same order). With ``replay``, what an earlier walk of the same shape handed over, batch by batch, the base
    model is not run (the visit's logits are None); ``record`` is for such a walk: the base model then hands over at
    every batch that has children too."""
    nodes, shape = chunk or batch_nodes(base, base.n_ctx), _Echo(shape)
    names = frozenset(hook for variant in variants for hook in variant.hooks)
    entries: dict[str, np.ndarray] = {}
    handing = entries.__setitem__ if names else None
    mine: Iterator[Any] = iter(replay) if replay is not None else float_walk(base, shape, nodes, handing, names)
    whole = [float_walk(v.model, shape, nodes) if not v.stage else None for v in variants]
    floats = [Floats(v.model, prepare(v.model, [b in v.attends for b in range(base.n_layer)], False))
              if v.stage else None for v in variants]  # each resumed variant's arithmetic, its attentions' lookups
    root = [[None] * base.n_layer if f is None else f.root() for f in floats]  # the empty prefix: no keys yet

    def step(past: list, rows, family, length, logits, keep) -> tuple[Any, list]:
        entries.clear()
        own = next(mine)  # the base model's batch (the same as this one), or what it handed over then
        handed = own if replay is not None else dict(entries)
        outs = np.empty((len(variants), len(family.tokens), base.n_vocab)) if logits else None
        pasts = []
        for i, (variant, kv, walking_alone, arithmetic) in enumerate(zip(variants, past, whole, floats)):
            got, its = None, kv  # (a list of None: a variant that keeps no keys)
            if walking_alone is not None:
                got = next(walking_alone).logits
            elif arithmetic is not None and (logits or (keep and variant.attends)):
                parents = [None if pair is None else (pair[0][..., rows], pair[1][..., rows]) for pair in kv]
                got, its = resume_step(variant, arithmetic, parents, [handed[hook] for hook in variant.hooks],
                                       family, length, logits, keep)
            if outs is not None:
                outs[i] = got
            pasts.append(its)
        return (None if replay is not None else own.logits, outs, handed), pasts

    for visit in walking.walk(shape, step, root, nodes):
        returned: Any = visit.logits  # what step returned for the batch
        base_logits, logits, handed = returned
        yield Visit(visit.prefixes, visit.judged, base_logits), logits, handed


class _Echo:
    """A shape shared by walks in step: each batch's children and judged nodes are asked of ``shape`` once, by the
    first walk there; the others, at the same batch, are told the same (one batch per length is remembered)."""

    def __init__(self, shape: Shape) -> None:
        self.shape, self.said = shape, {}

    def _ask(self, kind: str, prefixes: np.ndarray) -> np.ndarray:
        known = self.said.get((kind, prefixes.shape[1]))
        if known is not None and np.array_equal(known[0], prefixes):
            return known[1]
        answer = getattr(self.shape, kind)(prefixes)
        self.said[kind, prefixes.shape[1]] = (prefixes, answer)
        return answer

    def children(self, prefixes: np.ndarray) -> np.ndarray:
        return self._ask("children", prefixes)

    def judged(self, prefixes: np.ndarray) -> np.ndarray:
        return self._ask("judged", prefixes)


def resume_step(variant: Resumed, arithmetic: Floats, past: list, entry: list[np.ndarray], family, length: int,
                logits: bool, keep: bool) -> tuple[np.ndarray | None, list]:
    """A variant's step of the walk from the stage it resumes at: the block step in ``arithmetic`` (the variant's
    :class:`~handwired.engine.arithmetic.floats.Floats`), entering with ``entry``, what enters that stage at the
    batch's new positions ([n, n_embd]; with z [n, head, d_head] for an attention's output); ``past`` its parents' keys
    and values in the blocks it attends in. -> the next-token logits [n, n_vocab] (when ``logits``), and the children's
    past (when ``keep``)."""
    x = entry[0].T.copy()  # [n_embd, n], the step's own: it is added to in place
    z = np.moveaxis(entry[1], 0, -1).reshape(-1, len(x[0])) if len(entry) > 1 else None  # [n_embd, n]
    return block_step(arithmetic, past, family, length, logits, keep,
                      Entry(variant.block, variant.part, x, z))


def recorded_walk(model: Model, shape: Shape, names: frozenset[str],
                  ) -> Iterator[tuple[Visit, dict[str, np.ndarray]]]:
    """Every batch of ``shape``'s walk by ``model`` alone, with the intermediates ``names`` holds at each node's
    new position (every node evaluated in full, judged or not: the visit's ``judged`` is the shape's)."""
    recorded: dict[str, np.ndarray] = {}
    for visit in float_walk(model, _Whole(shape), hook=recorded.__setitem__, names=names):
        yield Visit(visit.prefixes, shape.judged(visit.prefixes), visit.logits), recorded


@dataclass(frozen=True)
class _Whole:
    """A shape whose every node is evaluated in full (its intermediates recorded at every prefix)."""

    shape: Shape

    def children(self, prefixes: np.ndarray) -> np.ndarray:
        return self.shape.children(prefixes)

    def judged(self, prefixes: np.ndarray) -> np.ndarray:
        return np.ones(len(prefixes), dtype=bool)
