"""Where a value's groups lie on one axis: each group's range and histogram, and the thresholds that separate them.

Pure numpy on the values of a spread (:mod:`handwired.judge.workbench.spread`). Along the axis, every value belongs
to one group; sorted, the values fall into *runs* of one group. When no value is shared by two groups, a threshold
between each pair of neighbouring runs tells them apart: one threshold for two groups side by side, two when one
group lies on both sides of another (a bump an MLP unit makes). A value shared by two groups, or groups that
come back along the axis more often than a few thresholds can say, is an overlap.
"""

from dataclasses import dataclass

import numpy as np

BINS = 24  # histogram bins across the shared axis: one terminal cell each
MAX_THRESHOLDS = 3  # a group coming back with more boundaries than this reads as an overlap, not a recipe


@dataclass(frozen=True)
class GroupStats:
    key: str
    count: int
    low: float
    high: float
    histogram: np.ndarray  # [BINS] counts on the shared axis


@dataclass(frozen=True)
class Separation:
    runs: tuple[str, ...]  # the groups in order along the axis, a group again where it comes back
    thresholds: tuple[tuple[float, float], ...]  # the open interval between each pair of neighbouring runs
    shared: tuple[float, float] | None  # where two groups' values overlap (both ends values of them), if they do

    @property
    def separated(self) -> bool:
        return self.shared is None


def axis(values: np.ndarray, bins: int = BINS) -> np.ndarray:  # [n] -> [bins + 1] bin edges shared by every group
    low, high = float(values.min()), float(values.max())
    if low == high:  # one value: one bin around it
        low, high = low - 0.5, high + 0.5
    return np.linspace(low, high, bins + 1)


def group_stats(key: str, values: np.ndarray, edges: np.ndarray) -> GroupStats:  # values [n], edges [bins + 1]
    counts, _ = np.histogram(values, bins=edges)  # [bins]; the last bin includes the right edge
    return GroupStats(key, len(values), float(values.min()), float(values.max()), counts)


def runs(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """values [n], group index [n] -> along the sorted axis, each run's group, lowest and highest value [r]."""
    order = np.lexsort((groups, values))  # by value, then group
    v, g = values[order], groups[order]  # [n]
    starts = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]]))  # [r] where a new run begins
    ends = np.concatenate([starts[1:], [len(v)]]) - 1  # [r]
    return g[starts], v[starts], v[ends]


def separate(keys: list[str], values: np.ndarray, groups: np.ndarray) -> Separation:
    """How the groups (``keys[groups[i]]`` is value i's) lie along the axis: the runs and their thresholds,
    or the interval where two groups' values overlap."""
    run_groups, lows, highs = runs(values, groups)  # [r] each
    touching = lows[1:] <= highs[:-1]  # [r - 1]: the same value ends one run and starts the next
    comes_back = len(run_groups) > len(set(run_groups.tolist()))  # a group in more than one run
    if touching.any() or (comes_back and len(run_groups) - 1 > MAX_THRESHOLDS):
        return Separation(tuple(keys[g] for g in run_groups), (), _shared(values, groups))
    return Separation(tuple(keys[g] for g in run_groups),
                      tuple((float(h), float(lo)) for h, lo in zip(highs[:-1], lows[1:])), None)


def _shared(values: np.ndarray, groups: np.ndarray) -> tuple[float, float]:
    # the widest stretch where two groups' ranges meet: from the largest of their lows to the smallest of their highs
    best = None
    found = sorted(set(groups.tolist()))
    for i in found:
        for j in found:
            if i < j:
                a, b = values[groups == i], values[groups == j]
                low, high = max(a.min(), b.min()), min(a.max(), b.max())
                if low <= high and (best is None or high - low > best[1] - best[0]):
                    best = (float(low), float(high))
    if best is None:  # interleaved in many runs, ranges apart pairwise: cannot happen, but say the whole axis
        best = (float(values.min()), float(values.max()))
    return best
