"""A sweep: the verdict of a model at each value of one or two of its constants, and where it passes.

Each value is the file with that constant set (its dependants recomputed, as the file's own expressions say),
judged on every context a check of the file judges (:class:`handwired.judge.workbench.variants.Bench`). With one
constant, each edge between a value that passes and one that fails is refined by bisection: the result says
exactly which values were tried, never that a value between two of them passes.
"""

import copy
import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from handwired.engine.cost import copy_cost
from handwired.errors import HandwiredError, bad_value
from handwired.judge.workbench import variants as workbench
from handwired.judge.workbench.spread import Source
from handwired.judge.workbench.variants import Bench, Tally
from handwired.weightfile import Model, parse

RANGE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+?)\.\.(.+?)(:log)?$")  # :log: this one on a log scale
MAX_STEPS = 1000  # values per constant
MAX_POINTS = 10_000  # values in all, with two constants
MAX_HALVINGS = 60  # bisection steps per edge, at most (each narrows the bracket to 3/5 of its width or less)
REFINE = 1024  # by default an edge is refined to 1/REFINE of the grid step it lies in
SPECULATE = 3  # bisection steps judged in one walk, when each walk runs the file too (2^3 - 1 values)


@dataclass(frozen=True)
class Range:
    name: str
    values: np.ndarray  # [steps] the grid, increasing
    log: bool


@dataclass(frozen=True)
class Point:
    values: tuple[float, ...]  # one per constant
    verdict: Tally


@dataclass(frozen=True)
class Edge:
    fails: float  # a value tried that fails
    passes: float  # the nearest value tried that passes, on the side of the interval
    tried: int  # the values bisection tried that pass (all of them between passes and the grid)
    reached: bool = True  # False: float64 or MAX_HALVINGS stopped the bisection before the width asked for


@dataclass(frozen=True)
class Interval:
    low: float  # the lowest value tried that passes, in this run of passing values
    high: float
    below: Edge | None  # None: the run starts at the range's end, nothing below was tried
    above: Edge | None
    tried: int  # values tried in [low, high], every one of which passes


@dataclass(frozen=True)
class Sweep:
    ranges: tuple[Range, ...]
    source: str  # the contexts, in words
    points: tuple[Point, ...]  # the grid, the first constant's values fastest
    intervals: tuple[Interval, ...]  # one constant only: where every context passes
    precision: float | None  # the bisection's target width, when given
    judged: int  # contexts judged at each value
    base: Tally  # at the file's own values


def parse_range(model: Model, text: str, steps: int, log: bool) -> Range:
    """``NAME=LO..HI`` -> the grid of ``steps`` values, evenly spaced (or on a log scale, with ``log`` or for
    ``NAME=LO..HI:log``) from LO to HI."""
    match = RANGE.match(text)
    if not match:
        raise HandwiredError(f"{text!r}: expected NAME=LO..HI, e.g. Lg=1..4096 (or Lg=1..4096:log, on a log scale)")
    name, low_text, high_text, scale = match.groups()
    if name not in model.written.constants:
        known = ", ".join(model.written.constants) or "none"
        raise HandwiredError(f"{text!r}: the file has no constant {name!r}; its constants: {known}")
    try:
        low, high = float(low_text), float(high_text)
    except ValueError:
        raise HandwiredError(f"{text!r}: LO and HI must be numbers, e.g. {name}=1..4096 (or {name}=1..4096:log, on "
                             "a log scale)") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise HandwiredError(f"{text!r}: expected finite numbers LO < HI")
    if (log or scale) and low <= 0:
        raise HandwiredError(f"{text!r}: {':log' if scale else '{log}'} spaces the values on a log scale, which needs "
                             "LO > 0", ("log",))
    log = log or scale is not None
    if log:
        values = np.geomspace(low, high, steps)
    elif math.isfinite(high - low):
        values = np.linspace(low, high, steps)
    else:  # HI - LO beyond float64 (-1e308..1e308): each end weighed, never their difference
        t = np.linspace(0, 1, steps)
        values = low * (1 - t) + high * t
    values[0], values[-1] = low, high  # exactly the ends asked for
    return Range(name, values, log)


def with_constants(model: Model, values: dict[str, float]) -> Model:
    """The model the file would be with these constants (each dependant recomputed by its own expression)."""
    document = copy.deepcopy(model.written.document)
    document["constants"].update({name: float(value) for name, value in values.items()})
    variant, problems = parse(document, model.source)
    if variant is None:
        shown = ", ".join(f"{name}={value:g}" for name, value in values.items())
        raise HandwiredError(f"{model.source} with {shown}: {problems[0]}")
    return variant


def check_steps(steps: int, ranges: int) -> None:
    if not 2 <= steps <= MAX_STEPS:
        raise bad_value("steps", steps, f"expected 2…{MAX_STEPS} values per constant")
    if steps**ranges > MAX_POINTS:
        raise bad_value("steps", steps, f"{steps}^{ranges} = {steps**ranges:,} values in all, more than the "
                                        f"{MAX_POINTS:,} a sweep tries; ask for fewer")


def check_precision(precision: float | None) -> None:
    if precision is not None and not (precision > 0 and math.isfinite(precision)):
        raise bad_value("precision", precision, "expected a positive number")


def halvings(swept: Range, precision: float | None) -> int:
    """The most bisection steps one edge of ``swept``'s grid takes: each narrows its bracket to 3/5 of its width or
    less (of its logarithm's, on a log scale), from the widest grid step down to ``precision`` (default: 1/REFINE of
    the step), at most MAX_HALVINGS."""
    check_precision(precision)
    values = swept.values
    step = float(np.max(np.diff(values)))
    # no bisection narrows a bracket below the spacing of floats where it ends
    target = max(precision if precision is not None else step / REFINE, float(np.spacing(np.max(np.abs(values)))))
    if swept.log:  # a bracket [a, a·r] near the top of the range is narrow enough once r <= 1 + target / top
        ratio = float(np.max(values[1:] / values[:-1]))
        shrink = math.log(ratio) / math.log1p(target / float(values[-1]))
    else:
        shrink = step / target
    return min(MAX_HALVINGS, max(0, math.ceil(math.log(shrink) / math.log(5 / 3)))) if shrink > 1 else 0


def tried_at_most(steps: int, depth: int = SPECULATE) -> int:
    """The most values bisecting one edge of at most ``steps`` steps tries when each walk judges the next ``depth``
    steps whichever way each goes (2^depth - 1 values), the last walk only the steps left."""
    return steps // depth * (2**depth - 1) + 2 ** (steps % depth) - 1


def refuse_long(model: Model, source: Source, ranges: list[Range], precision: float | None = None,
                edges: int | None = None) -> None:
    """Refuse a sweep estimated at more than a few minutes, before any value is tried: the grid's values and, with
    one constant, the bisection of one edge (what a sweep finds most often: a passing interval reaching one end of
    the range). With ``edges``, the sweep has judged its grid and found that many: refused before it bisects them
    when their bisection alone would be too long."""
    steps = len(ranges[0].values)
    grid = steps ** len(ranges) if edges is None else 0
    halved = halvings(ranges[0], precision) if len(ranges) == 1 else 0
    per_edge = tried_at_most(halved)
    bisection = per_edge * (1 if edges is None else edges)
    if edges is None:
        what = f"{{steps}} {steps}" + (f" (and up to {per_edge:,} values bisecting each edge the grid finds, one "
                                       "counted here)" if bisection else "")
    else:
        what = f"{{steps}} {steps}: the grid's {edges} edges, up to {bisection:,} values bisecting them"
    size, seconds = copy_cost(model)  # each value's copy of the model: the grid's are held together
    walks = (grid > 0) + -(-halved // SPECULATE) * (bisection > 0)  # the bisection's: each runs the file again
    workbench.refuse_long(model, source, grid + bisection, what, "ask for fewer values"
                          + (", or a coarser {precision}" if bisection else ""), ("steps", "precision"),
                          (grid, grid * size, (grid + bisection) * seconds), walks)


def sweep(model: Model, source: Source, ranges: list[Range], precision: float | None = None,
          progress: Callable[[int, int], None] | None = None) -> Sweep:
    """The verdict at every point of the grid; with one constant, the intervals where every context passes.
    ``progress(done, total)`` is told after each variant is set up and after each batch of the walk; it may raise
    to stop the sweep (Ctrl-C)."""
    if len({r.name for r in ranges}) < len(ranges):
        raise HandwiredError(f"{ranges[0].name} is swept twice: give two different constants")
    check_precision(precision)
    report = progress or (lambda done, total: None)
    grid = [tuple(reversed(point)) for point in itertools.product(*[r.values for r in reversed(ranges)])]
    variants = []
    for point in grid:  # setting up: told too, so that a stop asked now is not kept waiting
        variants.append(with_constants(model, dict(zip((r.name for r in ranges), point))))
        report(0, len(grid))
    bench = Bench(model, source)
    verdicts = bench.verdicts(variants, lambda done: report(done, len(grid)))
    points = tuple(Point(tuple(map(float, point)), verdict) for point, verdict in zip(grid, verdicts))
    assert bench.base is not None, "the walk judged the base model"
    if len(ranges) > 1:
        return Sweep(tuple(ranges), source.description, points, (), precision, bench.total, bench.base)
    edges = sum(1 for a, b in zip(points, points[1:]) if a.verdict.ok != b.verdict.ok)
    if edges > 1:  # one was counted before the grid
        refuse_long(model, source, ranges, precision, edges)
    depth = SPECULATE if bench.shares_run(variants[0]) else 1
    intervals = tuple(_intervals(model, bench, ranges[0], points, precision, depth,
                                 lambda: report(len(grid), len(grid))))
    return Sweep(tuple(ranges), source.description, points, intervals, precision, bench.total, bench.base)


@dataclass
class _Bracket:
    fails: float  # a value that fails
    passes: float  # one that passes
    target: float  # the width to narrow it to
    tried: int = 0  # the values tried that pass
    steps: int = 0

    def middle(self, log: bool) -> float | None:
        """The next value to try, or None when the bracket is narrow enough or float64 has nothing between."""
        if self.steps >= MAX_HALVINGS or abs(self.passes - self.fails) <= self.target:
            return None
        middle = _short_middle(self.fails, self.passes, log)
        return None if middle in (self.fails, self.passes) else middle

    def ahead(self, log: bool, depth: int) -> list[float]:
        """The values the next ``depth`` steps may try, whichever way each goes."""
        middle = self.middle(log)
        if middle is None or depth == 0:
            return []
        after = [_Bracket(middle, self.passes, self.target, 0, self.steps + 1),
                 _Bracket(self.fails, middle, self.target, 0, self.steps + 1)]
        return [middle] + [value for bracket in after for value in bracket.ahead(log, depth - 1)]

    def edge(self) -> Edge:
        return Edge(float(self.fails), float(self.passes), self.tried, bool(abs(self.passes - self.fails)
                                                                          <= self.target))


def _intervals(model: Model, bench: Bench, swept: Range, points: tuple[Point, ...], precision: float | None,
               depth: int, done: Callable[[], None]):
    """Each run of passing grid values, its edges refined by bisection."""
    ok = [point.verdict.ok for point in points]
    values = swept.values
    runs = []
    i = 0
    while i < len(ok):
        if not ok[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(ok) and ok[j + 1]:
            j += 1
        runs.append((i, j))
        i = j + 1

    def bracket(fails: float, passes: float) -> _Bracket:
        return _Bracket(fails, passes, precision if precision is not None else abs(passes - fails) / REFINE)

    brackets = {(i, j): (bracket(float(values[i - 1]), float(values[i])) if i > 0 else None,
                         bracket(float(values[j + 1]), float(values[j])) if j + 1 < len(ok) else None) for i, j in runs}
    _bisect([b for pair in brackets.values() for b in pair if b is not None], model, bench, swept, depth, done)
    for (i, j), (below, above) in brackets.items():
        low = below.passes if below else values[i]
        high = above.passes if above else values[j]
        tried = j - i + 1 + (below.tried if below else 0) + (above.tried if above else 0)  # bisection: all pass
        yield Interval(float(low), float(high), below and below.edge(), above and above.edge(), tried)


def _bisect(brackets: list[_Bracket], model: Model, bench: Bench, swept: Range, depth: int,
            done: Callable[[], None]) -> None:
    """Narrow every bracket (fails, passes) to its target: the values that pass on the way move ``passes`` (and
    are counted), the ones that fail move ``fails``. Each walk judges the next ``depth`` steps of every bracket
    at once, whichever way each goes: the values tried are those one step at a time would try."""
    while True:
        ahead = sorted({value for bracket in brackets for value in bracket.ahead(swept.log, depth)})
        if not ahead:
            return
        variants = []
        for value in ahead:
            variants.append(with_constants(model, {swept.name: value}))
            done()
        verdicts = dict(zip(ahead, (verdict.ok for verdict in bench.verdicts(variants, lambda _: done()))))
        for bracket in brackets:
            for _ in range(depth):
                middle = bracket.middle(swept.log)
                if middle is None:
                    break
                if verdicts[middle]:
                    bracket.passes, bracket.tried = middle, bracket.tried + 1
                else:
                    bracket.fails = middle
                bracket.steps += 1

def _short_middle(a: float, b: float, log: bool) -> float:
    """A value near the middle of (a, b) — within its middle fifth, on a log scale with ``log`` — with as few
    significant digits as that allows, so the values tried print short and exactly (2.7495, not 2.74951171875).
    Each step still narrows the bracket to at most 3/5 of its width."""
    if log:
        middle, ends = math.sqrt(a) * math.sqrt(b), (a**0.6 * b**0.4, a**0.4 * b**0.6)
    else:
        middle, ends = a / 2 + b / 2, (a * 0.6 + b * 0.4, a * 0.4 + b * 0.6)  # no overflow near the float64 limits
    low, high = min(ends), max(ends)
    for digits in range(1, 18):
        short = float(f"{middle:.{digits}g}")
        if low <= short <= high:
            return short
    return middle
