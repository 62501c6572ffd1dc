"""The command line: a thin layer that parses arguments, calls the core and renders.

One module per command group, each only parsing and rendering: :mod:`.model`
(predict, explain, complete), :mod:`.check`, :mod:`.weights`, :mod:`.attend`,
:mod:`.interop` (export, import), :mod:`.puzzles`, :mod:`.diff`, :mod:`.live` (watch). They register their
commands on :data:`handwired.cli.app.app`.
"""

from __future__ import annotations

import os
import warnings

# handwired's matrices are tiny: BLAS threads only add overhead, while the
# batched evaluation spreads whole chunks of contexts over the cores instead.
# This must happen before numpy is first imported; a user's own setting wins.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

# A model whose numbers leave float64's range is reported in one line naming where (run.require_finite);
# numpy's own warnings about it, from any thread, would only repeat that in worse words.
for _message in ("overflow encountered", "invalid value encountered"):
    warnings.filterwarnings("ignore", message=_message, category=RuntimeWarning)

from handwired.cli.app import app  # noqa: E402
from handwired.cli import model, check, weights, attend, interop, puzzles, diff, live  # noqa: E402,F401  (registers the commands)


def main() -> None:
    app()


__all__ = ["app", "main"]
