"""Ablation: the verdict with one part of the model removed, for every part, and which parts are not needed.

The parts: each block's attention and each of its heads, each block's MLP and each of its hidden units, the final
LayerNorm, and (when asked) every non-zero weight entry. Removing a part is an edit of the weights, so each
variant is judged exactly as ``check`` judges a file:

* a head: its rows of ``c_proj.w`` set to 0, so its output ``z`` adds nothing (``c_proj.b`` stays, it is no head's);
* an attention or an MLP: its ``c_proj.w`` and ``c_proj.b`` set to 0, so the block adds nothing there;
* an MLP unit: its row of the MLP's ``c_proj.w`` set to 0;
* the final LayerNorm: taken out, so the residual stream reaches the unembedding as it is;
* a weight entry: set to 0.

With ``mean``, a head, unit, attention or MLP is replaced by its mean output instead, over every position of every
judged context (each distinct prefix once): the rows are zeroed and their mean contribution added to ``c_proj.b``.
The final LayerNorm and weight entries are removed as above (a mean of a weight is itself).
"""

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from handwired.engine.cost import ablation_cost
from handwired.engine.resume import recorded_walk
from handwired.errors import HandwiredError
from handwired.judge.kinds.rules import DECIDED
from handwired.judge.workbench import variants as workbench
from handwired.judge.workbench.spread import Source
from handwired.judge.workbench.variants import Bench, Tally
from handwired.weightfile import Model
from handwired.weightfile.checker import locate, path_steps


@dataclass(frozen=True)
class Part:
    name: str  # blocks[0].attn.head 1, blocks[0].mlp.h3, ln_f, or an entry's label path
    kind: str  # head, attn, unit, mlp, ln_f, entry
    holds: frozenset[tuple[str, int]]  # the non-zero parameters it holds: (array's path, flat index)
    variant: Model  # the model without it

    @property
    def cost(self) -> int:
        """The non-zero parameters it holds."""
        return len(self.holds)


@dataclass(frozen=True)
class Ablation:
    part: Part
    verdict: Tally

    @property
    def needed(self) -> bool:
        return self.verdict.broken > 0 or not self.verdict.finite


@dataclass(frozen=True)
class Ablations:
    source: str  # the contexts, in words
    judged: int
    base: Tally  # the model as it is
    mean: bool
    rows: tuple[Ablation, ...]  # most harmful first; the parts not needed last, the costliest of them first


def _set(params: dict, path: str, value: np.ndarray) -> dict:
    """A copy of ``params`` with the array at ``path`` replaced; the arrays it does not name are shared."""
    steps = list(path_steps(path))
    top = dict(params)
    node: Any = top  # a dict or a list on the way down, by the path's steps
    for step in steps[:-1]:
        child = node[step]
        child = list(child) if isinstance(child, list) else dict(child)
        node[step] = child
        node = child
    node[steps[-1]] = value
    return top


def _edit(model: Model, edits: dict[str, np.ndarray]) -> Model:
    params = model.params
    for path, value in edits.items():
        params = _set(params, path, value)
    return replace(model, params=params)


def _without_rows(model: Model, layer: str, rows, mean_out=None) -> Model:
    """``layer`` (a c_proj's path) with ``rows`` of its w zeroed, and ``mean_out`` [n_embd] added to its b."""
    w, b = locate(model.params, f"{layer}.w").copy(), locate(model.params, f"{layer}.b")
    w[rows] = 0
    return _edit(model, {f"{layer}.w": w, f"{layer}.b": b if mean_out is None else b + mean_out})


def held(model: Model, *paths_and_index) -> frozenset[tuple[str, int]]:
    """The non-zero parameters among ``index`` of each array ``path``, as (path, flat index)."""
    out = set()
    for path, index in paths_and_index:
        values = locate(model.params, path)
        chosen = np.zeros(values.shape, dtype=bool)
        chosen[index] = True
        out.update((path, int(i)) for i in np.flatnonzero(chosen & (values != 0)))
    return frozenset(out)


def spare_parameters(rows) -> int:
    """The distinct non-zero parameters the parts of ``rows`` hold (a head's and its own entries' counted once)."""
    return len(frozenset().union(*(row.part.holds for row in rows)))


def hook_means(model: Model, source: Source, names: frozenset[str], tick: Callable[[], None] = lambda: None
               ) -> dict[str, np.ndarray]:
    """Each hook's mean over every distinct prefix of the contexts the rule judges, each once (not over the
    contexts it does not judge): [...] its shape at one position. One walk; ``tick()`` after each batch."""
    sums = {name: 0.0 for name in names}
    count = 0
    path: list = []  # the batches on the walk's path: (prefixes, recorded values, included), by length

    def close(length: int) -> None:  # every batch of ``length`` or more is done with: count it, tell its parent
        nonlocal count
        while len(path) >= length:
            prefixes, values, included = path.pop()
            if path:
                parents = path[-1][0]
                path[-1][2][_rows_in(parents, prefixes[included, :-1])] = True
            count += int(included.sum())
            for name in names:
                sums[name] = sums[name] + values[name][included].reshape(int(included.sum()), -1).sum(axis=0)

    for visit, recorded in recorded_walk(model, source.shape, names):
        length = visit.prefixes.shape[1]
        close(length)
        included = np.zeros(len(visit.prefixes), dtype=bool)
        if visit.judged.any():
            assert source.rule is not None, "ablate() makes its Bench first, which refuses a source without a rule"
            included[visit.judged] = source.rule.judge(visit.prefixes[visit.judged]).status == DECIDED
        path.append((visit.prefixes, {name: np.array(recorded[name]) for name in names}, included))
        tick()
    close(1)
    if not count:
        raise HandwiredError(f"{model.source}: the rule judges none of these contexts")
    return {name: total / count for name, total in sums.items()}


def _rows_in(sorted_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """[m, L] rows in vocab order, [n, L] rows among them -> [n] their indices."""
    def flat(array):  # one comparable value per row: big-endian ids compare bytewise in vocab order
        array = np.ascontiguousarray(array, dtype=">u8")
        return array.view(np.dtype((np.void, array.dtype.itemsize * array.shape[1]))).ravel()
    return np.searchsorted(flat(sorted_rows), flat(rows))


def _whole(model: Model, b: int, kind: str, out: np.ndarray | None) -> Part:
    """Block ``b``'s attention or MLP (``kind``) removed: its c_proj zeroed, or with ``out`` (its mean output)
    as the bias. It costs its layers and the LayerNorm that feeds only it."""
    at, block = f"blocks[{b}]", model.params["blocks"][b]
    layers, norm = (("c_attn", "c_proj"), "ln_1") if kind == "attn" else (("c_fc", "c_proj"), "ln_2")
    keys = [f"{kind}.{layer}.{side}" for layer in layers for side in "wb"] + [f"{norm}.g", f"{norm}.b"]
    holds = held(model, *((f"{at}.{key}", ...) for key in keys if key.split(".")[0] in block))
    proj = f"{at}.{kind}.c_proj"
    return Part(f"{at}.{kind}", kind, holds, _edit(model, {
        f"{proj}.w": np.zeros_like(locate(model.params, f"{proj}.w")),
        f"{proj}.b": np.zeros(model.n_embd) if out is None else out}))


def mean_hooks(model: Model) -> frozenset[str]:
    """The outputs a mean ablation replaces parts by: each block's z, attention output, MLP output and units."""
    out = set()
    for b, block in enumerate(model.params["blocks"]):
        out |= {f"blocks.{b}.attn.hook_z", f"blocks.{b}.hook_attn_out"}
        if "mlp" in block:
            out |= {f"blocks.{b}.hook_mlp_out", f"blocks.{b}.mlp.hook_post"}
    return frozenset(out)


def block_parts(model: Model, means: dict[str, np.ndarray] | None, b: int) -> list[Part]:
    """Block ``b``'s attention, its heads, its MLP and its units, each removed (or replaced by its mean, with the
    ``means`` of :func:`mean_hooks`)."""
    block, at = model.params["blocks"][b], f"blocks[{b}]"
    proj, d_head, n_embd = f"{at}.attn.c_proj", model.d_head, model.n_embd
    mean = (lambda hook: means[f"blocks.{b}.{hook}"]) if means is not None else None
    z = mean("attn.hook_z") if mean else None
    parts = [_whole(model, b, "attn", mean("hook_attn_out") if mean else None)]
    for h in range(model.n_head):
        rows = slice(h * d_head, (h + 1) * d_head)
        columns = np.r_[rows, n_embd + h * d_head:n_embd + (h + 1) * d_head, 2 * n_embd + h * d_head:
                        2 * n_embd + (h + 1) * d_head]
        holds = held(model, (f"{at}.attn.c_attn.w", (slice(None), columns)), (f"{at}.attn.c_attn.b", columns),
                     (f"{proj}.w", rows))
        added = None if z is None else z[rows] @ block["attn"]["c_proj"]["w"][rows]
        parts.append(Part(f"{at}.attn.head {h}", "head", holds, _without_rows(model, proj, rows, added)))
    if "mlp" in block:
        parts += _mlp_parts(model, b, mean)
    return parts


def _mlp_parts(model: Model, b: int, mean) -> list[Part]:
    block, at = model.params["blocks"][b], f"blocks[{b}]"
    proj = f"{at}.mlp.c_proj"
    parts = [_whole(model, b, "mlp", mean("hook_mlp_out") if mean else None)]
    post = mean("mlp.hook_post") if mean else None
    labels = model.axes(f"{at}.mlp.c_fc.w")[1].labels
    for unit, label in enumerate(labels):
        holds = held(model, (f"{at}.mlp.c_fc.w", (slice(None), unit)), (f"{at}.mlp.c_fc.b", unit),
                     (f"{proj}.w", unit))
        added = None if post is None else post[unit] * block["mlp"]["c_proj"]["w"][unit]
        parts.append(Part(f"{at}.mlp.{label}", "unit", holds, _without_rows(model, proj, [unit], added)))
    return parts


def entry_parts(model: Model, tick: Callable[[], None] = lambda: None) -> list[Part]:
    """Every non-zero weight entry, named by its label path (as ``diff`` names it), set to 0; ``tick()`` after
    each array."""
    parts = []
    for path, axes in model.written.axes.items():
        tick()
        values = locate(model.params, path)
        for index in zip(*np.nonzero(values)):
            label = ".".join([path, *(axis.labels[i] for axis, i in zip(axes, index))])
            edited = values.copy()
            edited[index] = 0
            flat = int(np.ravel_multi_index(index, values.shape))
            parts.append(Part(label, "entry", frozenset({(path, flat)}), _edit(model, {path: edited})))
    return parts


def parts(model: Model, means: dict[str, np.ndarray] | None = None, entries: bool = False,
          tick: Callable[[], None] = lambda: None) -> list[Part]:
    """Every part of the model, each removed; with ``means`` (:func:`hook_means`), mean-ablated. ``tick()`` after
    each block and each array of entries."""
    out = []
    for b in range(model.n_layer):
        out += block_parts(model, means, b)
        tick()
    if "ln_f" in model.params:
        holds = held(model, *((f"ln_f.{key}", ...) for key in model.params["ln_f"]))
        params = {key: value for key, value in model.params.items() if key != "ln_f"}
        out.append(Part("ln_f", "ln_f", holds, replace(model, params=params)))
    return out + (entry_parts(model, tick) if entries else [])


def count_parts(model: Model, entries: bool) -> int:
    """How many parts :func:`parts` removes, before any is made."""
    count = sum(1 + model.n_head + hidden + (hidden > 0) for hidden in model.hidden) + ("ln_f" in model.params)
    if entries:
        count += sum(int(np.count_nonzero(locate(model.params, path))) for path in model.written.axes)
    return count


def refuse_long(model: Model, source: Source, entries: bool) -> None:
    """Refuse an ablation estimated at more than a few minutes, before anything is removed."""
    runs = count_parts(model, entries)
    workbench.refuse_long(model, source, runs, "ablation", "judge a smaller set of contexts, or leave out "
                          "{entries}" if entries else "judge a smaller set of contexts", ("entries",) if entries
                          else (), (runs, *ablation_cost(model, count_parts(model, False), entries)),
                          walks=2)  # the file's own, and a mean ablation's


def ablate(model: Model, source: Source, entries: bool = False, mean: bool = False,
           progress: Callable[[int, int], None] | None = None) -> Ablations:
    """Every part removed in turn, judged; sorted by harm (contexts broken, then the smallest lead).
    ``progress(done, total)`` is told as the parts are set up and after each batch of the walk; it may raise to
    stop the ablation (Ctrl-C)."""
    report, total = progress or (lambda done, total: None), count_parts(model, entries)
    bench = Bench(model, source)
    means = hook_means(model, source, mean_hooks(model), lambda: report(0, total)) if mean else None
    chosen = parts(model, means, entries, lambda: report(0, total))
    verdicts = bench.verdicts([part.variant for part in chosen], lambda done: report(done, len(chosen)))
    rows = [Ablation(part, verdict) for part, verdict in zip(chosen, verdicts)]
    rows.sort(key=lambda row: (not row.needed, -row.verdict.broken, (row.verdict.worst if row.verdict.finite
                                                                     else -np.inf) if row.needed else -row.part.cost))
    assert bench.base is not None, "the walk judged the base model"
    return Ablations(source.description, bench.total, bench.base, mean, tuple(rows))
