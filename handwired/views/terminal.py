"""Text from a file is shown, never obeyed: every console handwired prints on escapes control characters.

A statement's title, a hint, a weight file's description or a token may hold
ESC (``\\x1b]0;…``, ``\\x1b[2J``), other C0 and C1 control characters or DEL:
written raw to a terminal they would set its title, clear it or plant a hidden
link. Views escape the strings they know come from a file before laying them
out (:func:`handwired.weightfile.axes.printable`); :class:`SafeConsole` makes
sure of it for everything else, escaping what is left in the text a view
renders (rich's own styles and cursor moves are not text, and stay). With
``--json`` the strings are data, written as JSON escapes
(:func:`handwired.weightfile.writing.json_text`).
"""

from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

from handwired.weightfile.axes import CONTROL, escaped


class SafeConsole(Console):
    """A rich console whose rendered text never carries a control character to the terminal."""

    def render(self, renderable, options=None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            text, style, control = segment
            if control is None and CONTROL.search(text):
                yield Segment(escaped(text), style)
            else:
                yield segment
