"""Waiting for something to happen, the one place in the tests that reads a clock.

A test that waits asserts the event it waited for, never how long it took: on a busy machine anything
can take longer. The deadline is only a safety net, so that a test whose event never comes fails with
what it was waiting for instead of hanging the suite; it is long enough that a slow machine never meets
it. tests/test_no_clock.py holds every other test module to this.
"""

import time
from collections.abc import Callable
from typing import TypeVar

DEADLINE = 120.0  # seconds: a safety net against a hang, not a measure of speed
T = TypeVar("T")


def wait_until(condition: Callable[[], T], what: str, deadline: float = DEADLINE, every: float = 0.05) -> T:
    """The first truthy value of ``condition()``, asked every ``every`` seconds; AssertionError naming ``what``
    if none has come by the deadline."""
    give_up = time.monotonic() + deadline
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > give_up:
            raise AssertionError(f"{what} never happened (waited {deadline:.0f} s as a safety net)")
        time.sleep(every)
