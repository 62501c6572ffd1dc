"""handwired: wire a transformer's weights by hand, run it, and prove it right.

The layers, bottom to top: :mod:`handwired.weightfile` (the file format),
:mod:`handwired.engine` (the forward pass), :mod:`handwired.judge` (rules,
checks, puzzles), :mod:`handwired.views` (what a person reads) and
:mod:`handwired.interop` (TransformerLens), with :mod:`handwired.cli` on top.
A module imports only from its own layer and those below it.
"""


def __getattr__(name: str):
    if name == "__version__":  # written once, in the package metadata (pyproject.toml)
        from importlib.metadata import version

        return version("handwired")
    raise AttributeError(f"module 'handwired' has no attribute {name!r}")
