"""The Python face's arguments checked against their annotations before a function runs: a value of a plain type an
annotation does not allow (``sample="5"``, ``seed=None``, ``exhaustive="yes"``) is one HandwiredError naming the
parameter, never a TypeError from deep inside. Only plain types are checked (numbers, strings, bools, None, paths,
dicts, callables, Literal choices); an annotation with anything else (an array, ``object``) is left to the function,
which checks such values itself."""

import inspect
import os
import types
import typing
from collections.abc import Callable
from typing import Any

import numpy as np

from handwired.errors import HandwiredError

# a plain annotation -> what a value must be (bool is never a number here: True is not a sample size)
PLAIN: dict[Any, Callable[[object], bool]] = {
    int: lambda value: isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)),
    float: lambda value: isinstance(value, (int, float, np.integer, np.floating))
    and not isinstance(value, (bool, np.bool_)),
    bool: lambda value: isinstance(value, (bool, np.bool_)),
    str: lambda value: isinstance(value, str),
    type(None): lambda value: value is None,
    os.PathLike: lambda value: isinstance(value, os.PathLike),
    dict: lambda value: isinstance(value, dict),
}
NAMES = {int: "a whole number", float: "a number", bool: "True or False", str: "a string", type(None): "None",
         os.PathLike: "a path", dict: "a dict"}


def _tests(annotation: Any) -> list[tuple[Callable[[object], bool], str]] | None:
    """The tests a value must pass one of, with what each expects; None: not a plain annotation, left unchecked."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        parts = [_tests(member) for member in typing.get_args(annotation)]
        return None if any(part is None for part in parts) else [test for part in parts for test in part or []]
    if origin is typing.Literal:
        choices = typing.get_args(annotation)
        return [(lambda value, c=choices: value in c and type(value) in {type(x) for x in c},
                 " or ".join(map(repr, choices)))]
    if origin is list and len(typing.get_args(annotation)) == 1:
        inner = _tests(typing.get_args(annotation)[0])
        if inner is None:
            return None
        what = " or ".join(dict.fromkeys(w.removeprefix("a ") for _, w in inner))
        return [(lambda value, tests=inner: isinstance(value, list)
                 and all(any(test(item) for test, _ in tests) for item in value), f"a list of ({what})")]
    if origin in (dict, os.PathLike):
        return [(PLAIN[origin], NAMES[origin])]
    if origin is Callable or annotation is Callable or origin is typing.get_origin(Callable[[], None]):
        return [(callable, "a function")]
    if isinstance(annotation, type) and annotation in PLAIN:
        return [(PLAIN[annotation], NAMES[annotation])]
    if isinstance(annotation, type) and annotation.__module__.startswith("handwired."):
        return [(lambda value, kind=annotation: isinstance(value, kind), f"a {annotation.__name__}")]
    return None


class Checked:
    """A function's plain-typed parameters, read from its annotations on first call."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self._tests: dict[str, list[tuple[Callable[[object], bool], str]]] | None = None
        self._signature: inspect.Signature | None = None

    def _read(self) -> tuple[inspect.Signature, dict[str, list[tuple[Callable[[object], bool], str]]]]:
        if self._signature is None or self._tests is None:
            self._signature = inspect.signature(self.function)
            try:
                hints = typing.get_type_hints(self.function)
            except Exception:  # an annotation that does not resolve: nothing checked, as before
                hints = {}
            tests = {name: _tests(hint) for name, hint in hints.items() if name != "return"}
            self._tests = {name: test for name, test in tests.items() if test}
        return self._signature, self._tests

    def check(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        signature, tests = self._read()
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:  # a keyword the function does not take, or too many arguments
            raise HandwiredError(f"{self.function.__name__}: {error}") from None
        for name, value in bound.arguments.items():
            if name in tests and not any(test(value) for test, _ in tests[name]):
                expected = " or ".join(dict.fromkeys(what for _, what in tests[name]))
                raise HandwiredError(f"{name}={shown(value)}: expected {expected}; found {type(value).__name__}",
                                     (name,))  # already in the caller's keywords


def shown(value: object) -> str:
    """A value in a message: short, on one line (an array as its type and shape)."""
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(shape, property):
        return f"<{type(value).__name__} of shape {list(shape)}>"
    text = " ".join(repr(value).split())
    return text if len(text) <= 40 else text[:37] + "…"
