"""handwired: wire a transformer's weights by hand, run it, and prove it right.

From Python (see docs/python-api.md)::

    import handwired
    model = handwired.load("aab")
    logits, cache = model.run_with_cache("aabaa")
    handwired.check(model, exhaustive=True)

The layers, bottom to top: :mod:`handwired.weightfile` (the file format),
:mod:`handwired.engine` (the forward pass), :mod:`handwired.judge` (rules,
checks, puzzles), :mod:`handwired.views` (what a person reads) and
:mod:`handwired.interop` (TransformerLens), with :mod:`handwired.cli` (the
command line) and :mod:`handwired.api` (the Python face) on top. A module
imports only from its own layer and those below it.

The names of :mod:`handwired.api` load on first use, so that the command line,
which imports this package, pays nothing for them.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for type checkers and editors; at run time __getattr__ loads them
    from handwired.api import (
        ActivationCache,
        CheckReport,
        Factored,
        HookedModel,
        HookPoint,
        ModelDiff,
        PuzzleHandle,
        Verdict,
        View,
        act_name,
        allow,
        check,
        diff,
        load,
        puzzle,
    )
    from handwired.errors import HandwiredError

    __version__: str

__all__ = ["ActivationCache", "CheckReport", "Factored", "HandwiredError", "HookPoint", "HookedModel", "ModelDiff",
           "PuzzleHandle", "Verdict", "View", "__version__", "act_name", "allow", "check", "diff", "load", "puzzle"]
API = frozenset(__all__) - {"HandwiredError", "__version__"}  # the names handwired.api gives


def __getattr__(name: str):
    if name == "__version__":  # written once, in the package metadata (pyproject.toml)
        from importlib.metadata import version

        return version("handwired")
    if name == "HandwiredError":
        from handwired.errors import HandwiredError

        return HandwiredError
    if name in API:
        import handwired.api

        return getattr(handwired.api, name)
    raise AttributeError(f"module 'handwired' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
