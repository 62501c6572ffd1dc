"""Errors and warnings as Python reads them: the core names a caller's parameter as ``{sample}``, the command line
spells it as its flag (``--sample 1,000``) and the Python face as the keyword a caller writes (``sample=1000``,
``proof=False``); what the command line prints as a warning on stderr is a Python warning.

Every public function and method of the Python face is wrapped in :func:`speaks_python`: a HandwiredError it
raises keeps its template and parameters (``error.render`` still spells them any way) and reads, as ``str(error)``,
in the caller's keywords.
"""

import functools
import re
import sys
import warnings
from collections.abc import Callable
from typing import TypeVar

from handwired.api import arguments
from handwired.errors import HandwiredError

# a core parameter given with no value: the keyword and value that ask for it (the rest are their own names)
SWITCHES = {"no_proof": "proof=False", "exhaustive": "exhaustive=True", "force": "force=True",
            "by_cases": "by_cases=True"}
# a number as the core prints it, with thousands separators (or None, True, False)
NUMBER = r"(-?(?:\d+(?:,\d{3})*|inf\b|nan\b)|None\b|True\b|False\b)"
QUOTED = r"(?=['\"])"  # a string the core quotes with repr

Function = TypeVar("Function", bound=Callable)


def python_message(error: HandwiredError) -> str:
    """The error's message with each parameter written as a Python keyword: ``sample=1000000`` where the core gave
    it a value, ``proof=False`` for a switch, the keyword's own name otherwise."""
    text = error.template
    for name in error.parameters:
        here = re.escape("{" + name + "}")
        text = re.sub(here + " " + NUMBER, lambda match, name=name: f"{name}={match[1].replace(',', '')}", text)
        text = re.sub(here + " " + QUOTED, f"{name}=", text)
        text = text.replace("{" + name + "}", SWITCHES.get(name, name))
    keywords = "|".join(map(re.escape, error.parameters))
    if keywords:  # one keyword given after another, as a call writes them: sample=1000000, seed=0
        text = re.sub(rf"\b((?:{keywords})=[^\s,;:)]+) (?=(?:{keywords})=)", r"\1, ", text)
    return text


def speaks_python(function: Function) -> Function:
    """``function``, its HandwiredErrors reading in Python's keywords (see the module), each argument given a
    value of a plain type its annotation does not allow (``sample="5"``, ``seed=None``) refused in one line naming
    it, as a HandwiredError: see :mod:`handwired.api.arguments`."""
    checked = arguments.Checked(function)

    @functools.wraps(function)
    def spoken(*args, **kwargs):
        try:
            checked.check(args, kwargs)
            return function(*args, **kwargs)
        except HandwiredError as error:
            error.args = (python_message(error),)
            raise

    return spoken  # type: ignore[return-value]


def warn(message: str) -> None:
    """What the command line prints as ``warning:`` on stderr, as a Python warning (UserWarning) pointing at the
    caller's own line, the first outside handwired."""
    package = __name__.split(".")[0]
    level, frame = 2, sys._getframe(1)  # 1 is this line, 2 its caller
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == package:
        level, frame = level + 1, frame.f_back
    warnings.warn(message, UserWarning, stacklevel=level)
