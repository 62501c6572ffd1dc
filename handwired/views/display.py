"""A view outside the terminal: as HTML for Jupyter (``_repr_html_``), as an SVG or HTML page, from the very
renderables the terminal prints.

A saved or displayed view is never as wide as some terminal happened to be: :data:`EXPORT_WIDTH` columns, or
as wide as its widest part up to :data:`EXPORT_MAX_WIDTH` (a table, a plot; prose wraps, as in a terminal), so the
same view always gives the same picture, and nothing in it is folded.
"""

import html
import io
from collections.abc import Callable, Iterable

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.padding import Padding
from rich.panel import Panel
from rich.text import Text

from handwired.views.terminal import SafeConsole
from handwired.weightfile.axes import escaped

EXPORT_WIDTH = 120
EXPORT_MAX_WIDTH = 400
# a fragment for a notebook cell, styles inline: no page around it, no stylesheet to clash with the notebook's
FRAGMENT = ('<pre style="white-space: pre; overflow-x: auto; line-height: 1.25; '
            "font-family: Menlo, 'DejaVu Sans Mono', Consolas, monospace\">{code}</pre>")


def recorded(parts: Iterable) -> Console:
    """A console that has printed ``parts`` and recorded them, as wide as the widest (see the module)."""
    parts = list(parts)
    measure = SafeConsole(width=EXPORT_MAX_WIDTH, file=io.StringIO(), force_jupyter=False)
    width = max([EXPORT_WIDTH] + [min(EXPORT_MAX_WIDTH, unwrapped_width(measure, part)) for part in parts])
    console = SafeConsole(width=width, file=io.StringIO(), record=True, highlight=False, force_terminal=True,
                          force_jupyter=False, color_system="truecolor")  # in Jupyter too: recorded, never displayed
    for part in parts:
        console.print(part)
    return console


def unwrapped_width(measure: Console, part) -> int:
    """The width ``part`` needs with nothing in it wrapped but prose: text that wraps (a story, a sentence) counts
    its longest word, as a terminal would wrap it; a group, panel or padding what it holds; anything else (a table,
    a plot, a line that must not wrap) its whole width."""
    if isinstance(part, str):
        part = Text(part)
    if isinstance(part, Text):
        needs = measure.measure(part)
        return needs.maximum if part.no_wrap else needs.minimum
    if isinstance(part, Group):
        return max((unwrapped_width(measure, inner) for inner in part.renderables), default=0)
    if isinstance(part, Padding):
        return part.left + unwrapped_width(measure, part.renderable) + part.right
    if isinstance(part, Panel) and part.width is None:
        _, right, _, left = Padding.unpack(part.padding)
        title = measure.measure(part.title).maximum + 6 if part.title else 0  # "╭─ title ─╮"
        return max(title, 2 + left + unwrapped_width(measure, part.renderable) + right)
    return measure.measure(part).maximum


def html_fragment(parts: Iterable) -> str:
    """``parts`` as one ``<pre>`` of inline-styled HTML: what Jupyter shows for a view."""
    return recorded(parts).export_html(inline_styles=True, code_format=FRAGMENT)


def plain_text(parts: Iterable, width: int = EXPORT_WIDTH) -> str:
    """``parts`` as plain text, no colour: what a test or a log reads."""
    console = SafeConsole(width=width, file=io.StringIO(), record=True, highlight=False, color_system=None,
                          force_jupyter=False)
    for part in parts:
        console.print(part)
    return console.export_text()


class View:
    """A view with a title: printed by rich in a terminal, shown as HTML in Jupyter, saved with :meth:`svg` or
    :meth:`html`. ``build(everything)`` makes its parts, folded for a terminal unless ``everything``."""

    def __init__(self, title: str, build: Callable[[bool], list]) -> None:
        self.title = title
        self._build = build

    def parts(self, everything: bool = False) -> list:
        return self._build(everything)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.parts()

    def __repr__(self) -> str:
        return f"<view: {self.title}>"

    def __str__(self) -> str:
        return plain_text(self.parts(True))

    def _repr_html_(self) -> str:
        return html_fragment(self.parts(True))

    def svg(self) -> str:
        """The whole view, nothing folded, as an SVG picture."""
        return recorded(self.parts(True)).export_svg(title=escaped(self.title))  # a name's control characters shown

    def html(self) -> str:
        """The whole view, nothing folded, as an HTML page."""
        return recorded(self.parts(True)).export_html()


def escape(text: object) -> str:
    """``text`` for HTML, its control characters shown escaped as the terminal shows them."""
    return html.escape(escaped(str(text)))
