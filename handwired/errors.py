"""The one exception type for mistakes a user can fix.

Everything the user supplies (a weight file, a context, a parameter) is checked
where it is read; a problem becomes a :class:`HandwiredError` whose message is
one line saying where, what was expected and what was found.

The core knows nothing of a command line. A message that names one of the
caller's parameters writes it as ``{name}`` and lists it in ``parameters``:
``str(error)`` spells it as the parameter's own name (``min_length 0: expected
at least 1``), and the command line spells it as the flag it maps to
(``--min-length 0: …``) through :meth:`HandwiredError.render`. A :class:`Note` (a warning
to show beside a result) names them the same way.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass


def render(template: str, parameters: Iterable[str], spell: Callable[[str], str] = str) -> str:
    """``template`` with each ``{parameter}`` written as ``spell(parameter)``; other braces are left alone."""
    for name in parameters:
        template = template.replace("{" + name + "}", spell(name))
    return template


class HandwiredError(Exception):
    """A problem with the user's input, phrased for the user, in one line."""

    def __init__(self, message: str, parameters: Iterable[str] = ()) -> None:
        self.template = message
        self.parameters = tuple(parameters)
        super().__init__(self.render())

    def render(self, spell: Callable[[str], str] = str) -> str:
        """The message with each ``{parameter}`` written as ``spell(parameter)``."""
        return render(self.template, self.parameters, spell)


@dataclass(frozen=True)
class Note:
    """A warning to show beside a result (the command line on stderr, Python as a UserWarning), naming the caller's
    parameters as a HandwiredError does."""

    template: str
    parameters: tuple[str, ...] = ()

    def render(self, spell: Callable[[str], str] = str) -> str:
        return render(self.template, self.parameters, spell)

    def __str__(self) -> str:
        return self.render()


def bad_value(parameter: str, value: object, problem: str) -> HandwiredError:
    """``{parameter} VALUE: problem`` — a parameter given a value it cannot take."""
    return HandwiredError(f"{{{parameter}}} {value}: {problem}", (parameter,))


def bad_head(head: int, n_head: int) -> HandwiredError:
    """``{head} 3: the model has heads 0…1`` (or ``one head, 0``): a head the model does not have."""
    has = "one head, 0" if n_head == 1 else f"heads 0…{n_head - 1}"
    return bad_value("head", head, f"the model has {has}")
