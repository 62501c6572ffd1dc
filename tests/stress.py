"""The stress tests' sizes: full in CI, smaller in the README's test command on a developer's machine.

CI (which sets ``CI=true``) and ``HANDWIRED_STRESS=1`` run each stress test at its full size; otherwise each runs a
fifth of it or so, the same test on fewer files, rounds or corruptions, so the whole suite stays within a few
minutes on a quiet 2-core machine. Nothing is dropped: every assertion runs at both sizes.
"""

import os

FULL = os.environ.get("CI", "").lower() in ("true", "1") or os.environ.get("HANDWIRED_STRESS") == "1"


def size(full: int, quick: int) -> int:
    """``full`` in CI (or with HANDWIRED_STRESS=1), else ``quick``."""
    return full if FULL else quick
