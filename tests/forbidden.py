"""Proving that work was refused before it began, without a clock: the functions that do the work are
replaced by ones that record the call and raise, so a refusal that came too late fails the test by name."""

import importlib
import pkgutil
import sys
from collections.abc import Callable

import pytest

import handwired


class WorkBegan(AssertionError):
    """A function the refusal should have kept from running ran."""


def forbid(monkeypatch: pytest.MonkeyPatch, *functions: Callable) -> list[str]:
    """Make each of ``functions`` raise WorkBegan wherever handwired holds it: in the module that defines it (a
    method on its class), and under any name a loaded handwired module imported it as. Returns the calls made,
    by name, for a caller that swallows exceptions to be checked too."""
    for module in pkgutil.walk_packages(handwired.__path__, "handwired."):
        # every module, now: one imported later, while the function is replaced, would keep the replacement
        if module.name != "handwired.__main__":
            importlib.import_module(module.name)
    calls: list[str] = []
    for function in functions:
        name = f"{function.__module__}.{function.__qualname__}"

        def refused(*args, _name=name, **kwargs):
            calls.append(_name)
            raise WorkBegan(f"{_name} ran: the work began before the refusal")

        owner = sys.modules[function.__module__]
        *outer, last = function.__qualname__.split(".")
        for part in outer:
            owner = getattr(owner, part)
        assert getattr(owner, last) is function, name
        monkeypatch.setattr(owner, last, refused)
        for module_name, module in list(sys.modules.items()):
            if module_name.split(".")[0] != "handwired" or module is None:
                continue
            for attribute, value in list(vars(module).items()):
                if value is function:
                    monkeypatch.setattr(module, attribute, refused)
    return calls
