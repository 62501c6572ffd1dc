"""A sweep: the verdict of a model at each value of one or two of its constants, and where it passes.

Each value is the file with that constant set (its dependants recomputed, as the file's own expressions say),
judged on every context a check of the file judges (:class:`handwired.judge.workbench.Bench`). With one
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

from handwired.errors import HandwiredError, bad_value
from handwired.judge import workbench
from handwired.judge.spread import Source
from handwired.judge.workbench import Bench, Verdict
from handwired.weightfile import Model, parse

RANGE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+?)\.\.(.+?)(:log)?$")  # :log: this one on a log scale
MAX_STEPS = 1000  # values per constant
MAX_POINTS = 10_000  # values in all, with two constants
MAX_HALVINGS = 60  # bisection steps per edge, at most (each narrows the bracket to 3/5 of its width or less)
REFINE = 1024  # by default an edge is refined to 1/REFINE of the grid step it lies in


@dataclass(frozen=True)
class Range:
    name: str
    values: np.ndarray  # [steps] the grid, increasing
    log: bool


@dataclass(frozen=True)
class Point:
    values: tuple[float, ...]  # one per constant
    verdict: Verdict


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
    base: Verdict  # at the file's own values


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
    values = np.geomspace(low, high, steps) if log else np.linspace(low, high, steps)
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


def refuse_long(model: Model, source: Source, steps: int, ranges: int) -> None:
    """Refuse a sweep estimated at more than a few minutes, before any value is tried."""
    workbench.refuse_long(model, source, steps**ranges, f"{{steps}} {steps}", "ask for fewer values", ("steps",))


def sweep(model: Model, source: Source, ranges: list[Range], precision: float | None = None,
          progress: Callable[[int, int], None] | None = None) -> Sweep:
    """The verdict at every point of the grid; with one constant, the intervals where every context passes.
    ``progress(done, total)`` is told after each point of the grid."""
    if len({r.name for r in ranges}) < len(ranges):
        raise HandwiredError(f"{ranges[0].name} is swept twice: give two different constants")
    if precision is not None and not (precision > 0 and math.isfinite(precision)):
        raise bad_value("precision", precision, "expected a positive number")
    grid = [tuple(reversed(point)) for point in itertools.product(*[r.values for r in reversed(ranges)])]
    variants = [with_constants(model, dict(zip((r.name for r in ranges), point))) for point in grid]
    bench = Bench(model, source, variants)
    points = []
    for point, variant in zip(grid, variants):
        points.append(Point(tuple(map(float, point)), bench.verdict(variant)))
        if progress is not None:
            progress(len(points), len(grid))
    points = tuple(points)
    done = (lambda: progress(len(grid), len(grid))) if progress is not None else (lambda: None)  # bisecting
    intervals = () if len(ranges) > 1 else tuple(_intervals(model, bench, ranges[0], points, precision, done))
    return Sweep(tuple(ranges), source.description, points, intervals, precision, bench.total, bench.base)


def _intervals(model: Model, bench: Bench, swept: Range, points: tuple[Point, ...], precision: float | None,
               done: Callable[[], None]):
    """Each run of passing grid values, its edges refined by bisection."""
    ok = [point.verdict.ok for point in points]
    values = swept.values
    i = 0
    while i < len(ok):
        if not ok[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(ok) and ok[j + 1]:
            j += 1
        below = _bisect(model, bench, swept, values[i - 1], values[i], precision, done) if i > 0 else None
        above = _bisect(model, bench, swept, values[j + 1], values[j], precision, done) if j + 1 < len(ok) else None
        low = below.passes if below else values[i]
        high = above.passes if above else values[j]
        tried = j - i + 1 + (below.tried if below else 0) + (above.tried if above else 0)  # bisection: all pass
        yield Interval(float(low), float(high), below, above, tried)
        i = j + 1


def _bisect(model: Model, bench: Bench, swept: Range, fails: float, passes: float, precision: float | None,
            done: Callable[[], None]) -> Edge:
    """Narrow a (fails, passes) bracket to ``precision`` (default: its width / REFINE); the values that pass
    on the way move ``passes`` (and are counted), the ones that fail move ``fails``."""
    target = precision if precision is not None else abs(passes - fails) / REFINE
    tried_passing = 0
    for _ in range(MAX_HALVINGS):
        if abs(passes - fails) <= target:
            break
        middle = _short_middle(fails, passes, swept.log)
        if middle in (fails, passes):  # float64 has nothing between them
            break
        passing = bench.verdict(with_constants(model, {swept.name: middle})).ok
        done()
        if passing:
            passes, tried_passing = middle, tried_passing + 1
        else:
            fails = middle
    return Edge(float(fails), float(passes), tried_passing, bool(abs(passes - fails) <= target))


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
