"""The certified bounds assume round-to-nearest; the thread computing them checks it rather than assuming it.

The mode is changed as another library in the process could: through the C library's fesetround, which sets the
x86-64 SSE control register numpy and Python's floats use.
"""

import ctypes
import ctypes.util
import platform

import numpy as np
import pytest

from handwired.engine.arithmetic import interval as iv
from handwired.engine.certify import certified_logits
from handwired.errors import HandwiredError
from handwired.weightfile import load as load_model

MODES = {"downward": 0x400, "upward": 0x800, "towards zero": 0xC00}  # x86-64 glibc's FE_* values
pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or not ctypes.util.find_library("m"),
                                reason="the FE_* values here are x86-64's")


@pytest.fixture
def libm():
    lib = ctypes.CDLL(ctypes.util.find_library("m"))
    yield lib
    lib.fesetround(0)  # FE_TONEAREST, whatever the test did


def test_nearest_tells_each_rounding_mode_apart(libm):
    assert iv.nearest()
    seen = {}
    for name, mode in MODES.items():
        assert libm.fesetround(mode) == 0
        seen[name] = iv.nearest()
        one_plus = np.float64(1.0) + np.float64(2.0**-54)  # numpy sees the same mode: the check is not Python's alone
        libm.fesetround(0)
        assert (one_plus == 1.0) == (name != "upward")
    assert seen == {name: False for name in MODES}
    assert iv.nearest()


@pytest.mark.parametrize("mode", sorted(MODES))
def test_no_bound_is_made_in_another_rounding_mode(libm, mode):
    model = load_model("aab")
    contexts = np.array([model.encode("aabaa"), model.encode("abaab")])
    logits, radius = certified_logits(model, contexts)  # to nearest: bounded
    assert np.isfinite(radius).all()
    libm.fesetround(MODES[mode])
    try:
        with pytest.raises(HandwiredError, match="not rounding floats to nearest"):
            certified_logits(model, contexts)
    finally:
        libm.fesetround(0)
    assert np.array_equal(certified_logits(model, contexts)[0], logits)
