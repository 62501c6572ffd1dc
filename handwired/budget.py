"""The budget: what handwired will spend on one piece of work, and how a user allows more.

Every heavy piece of work is estimated before it starts, its time from the work's size and the model's widths and its
memory at its peak, and refused when an estimate is over the budget: one line with the figure, what would narrow the
work, and how to allow it. By default a check of every context and a view may take 30 seconds (a random sample is
there instead), a sample, a stream, a sweep or an ablation ten minutes, and any of them 2 GB at its peak. A user who
wants the work done allows more, for one command (``--max-seconds 120``, ``--max-memory 8G``) or around Python calls
(``with handwired.allow(max_seconds=120):``); the allowance then stands for every kind of work.

A module that imports only the error type, at the bottom of the layers with :mod:`handwired.defaults`, so the
engine's memory refusals, the judge's time refusals and the views' are all measured against the same budget.
"""

import math
from collections.abc import Iterator
from contextlib import contextmanager

from handwired.errors import HandwiredError

CHECK_SECONDS = 30.0  # a check of every context, and a view: a random sample is the alternative to waiting
RUN_SECONDS = 600.0  # a sample, a stream, a sweep or an ablation: what narrows it is named
MEMORY = 2 * 2**30  # bytes a command's arrays may take at their peak
TIME = ("max_seconds",)  # the parameter a refusal for time names, as its caller spells it
SPACE = ("max_memory",)  # and for memory

_allowed: dict[str, float] = {}  # what the user allows instead of the defaults: "seconds", "memory"


def seconds(default: float) -> float:
    """The seconds work of a kind whose default is ``default`` may take: the user's allowance, else the default."""
    return _allowed.get("seconds", default)


def memory() -> float:
    """The bytes work may take at its peak: the user's allowance, else :data:`MEMORY`."""
    return _allowed.get("memory", MEMORY)


def allow(max_seconds: float | None = None, max_memory: float | str | None = None) -> None:
    """Allow work estimated at up to ``max_seconds`` and ``max_memory`` (bytes, or a size such as ``"8G"``) at its
    peak; None leaves that limit as it is."""
    if isinstance(max_memory, str):
        try:
            max_memory = parse_size(max_memory)
        except (ValueError, IndexError):
            raise HandwiredError(f"{{max_memory}} {max_memory!r}: expected a number of bytes or a size such as 8G, "
                                 "512M or 1.5GB", SPACE) from None
    for key, value in (("seconds", max_seconds), ("memory", max_memory)):
        if value is not None:
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
                    and math.isfinite(value)):
                raise HandwiredError(f"{{max_{key}}} {value!r}: expected a positive number", (f"max_{key}",))
            _allowed[key] = float(value)


def reset() -> None:
    """Back to the defaults (the command line's options last one command)."""
    _allowed.clear()


@contextmanager
def allowing(max_seconds: float | None = None, max_memory: float | str | None = None) -> Iterator[None]:
    """Allow more (or less) inside a ``with`` block, then restore what was allowed before: from Python,
    ``with handwired.allow(max_seconds=120):`` around the calls whose refusals asked for it."""
    before = dict(_allowed)
    allow(max_seconds, max_memory)
    try:
        yield
    finally:
        _allowed.clear()
        _allowed.update(before)


def _rounded_up(value: float) -> float:
    """``value`` rounded up to two significant digits: 122 -> 130, 3.41 -> 3.5."""
    if value <= 0 or not math.isfinite(value):
        return value
    step = 10 ** (math.floor(math.log10(value)) - 1)
    return math.ceil(value / step - 1e-9) * step


def more_time(estimate: float) -> str:
    """How to allow work estimated at ``estimate`` seconds (twice the estimate: it may be off by as much), for the
    end of a refusal; the refusal lists :data:`TIME` among its parameters."""
    if not math.isfinite(estimate) or estimate > 1e9:
        return ""
    return f" (or allow it: {{max_seconds}} {max(1, _rounded_up(2 * estimate)):g})"


def more_memory(size: float) -> str:
    """How to allow work estimated at ``size`` bytes at its peak (a quarter more), for the end of a refusal; the
    refusal lists :data:`SPACE` among its parameters."""
    if not math.isfinite(size) or size > 2**50:
        return ""
    if 1.25 * size < 2**30:
        return f" (or allow it: {{max_memory}} {max(1, _rounded_up(1.25 * size / 2**20)):g}M)"
    return f" (or allow it: {{max_memory}} {_rounded_up(1.25 * size / 2**30):g}G)"


def parse_size(text: str) -> float:
    """``8G``, ``512M``, ``1.5GB``, ``2000000000`` -> bytes; ValueError for anything else."""
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    cleaned = text.strip().upper().removesuffix("B").removesuffix("I")
    number, unit = (cleaned[:-1], cleaned[-1]) if cleaned[-1:] in units else (cleaned, "")
    value = float(number) * units[unit]
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(text)
    return value
