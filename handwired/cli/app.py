"""The typer application and what every command shares: options, error handling, saving output."""

from __future__ import annotations

import functools
import io
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer
from rich.console import Console
from rich.markup import escape

from handwired import explain as explaining
from handwired.errors import HandwiredError
from handwired.weightfile import check_writable, write_new

app = typer.Typer(
    help="Wire a transformer's weights by hand, run it, see every number, and prove it right.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
weights_app = typer.Typer(help="Show, validate and create weight files.", no_args_is_help=True)
app.add_typer(weights_app, name="weights")

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
# Columns of a saved --svg/--html page: EXPORT_WIDTH, or as wide as its widest table up to EXPORT_MAX_WIDTH.
# Never the width of the terminal that made it, so the same command always saves the same picture.
EXPORT_WIDTH = 120
EXPORT_MAX_WIDTH = 400

WeightsOption = Annotated[
    str,
    typer.Option("--weights", "-w", help="A weight file, or the name of a bundled model.", show_default=True),
]
# The explain view's narrowing options, shared by explain and watch.
StepOption = Annotated[
    Optional[list[str]],
    typer.Option("--step", "-s", help=f"Steps to show, repeatable: {', '.join(explaining.CHOICES)}. Default: all."),
]
BlockOption = Annotated[Optional[int], typer.Option(help="Show only this block.")]
HeadOption = Annotated[Optional[int], typer.Option(help="Show only this head.")]
ShowAllOption = Annotated[
    bool, typer.Option("--all", help="Also show rows and columns that are all zero (folded by default).")
]
PositionOption = Annotated[Optional[int], typer.Option(help="The position the why step explains; default: the last.")]

SvgOption = Annotated[
    Optional[Path], typer.Option("--svg", help=f"Also save the view as SVG, nothing folded, {EXPORT_WIDTH}+ columns wide.")
]
HtmlOption = Annotated[
    Optional[Path], typer.Option("--html", help=f"Also save the view as HTML, nothing folded, {EXPORT_WIDTH}+ columns wide.")
]
ForceOption = Annotated[bool, typer.Option("--force", help="Replace an existing --svg/--html file.")]


def stdout() -> Console:
    return Console(highlight=False, emoji=False)  # no :name: codes in handwired's output; skips loading rich's emoji table


def user_errors(command: Callable) -> Callable:
    """Turn a HandwiredError into one line on stderr and exit code 2."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except HandwiredError as error:
            Console(stderr=True, highlight=False).print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
            raise typer.Exit(EXIT_USER_ERROR) from None

    return wrapper


def save_view(build: Callable[[bool], list], svg: Optional[Path], html: Optional[Path], force: bool) -> None:
    """Save a view as SVG and/or HTML with nothing folded: ``build(True)`` gives its parts, all rows and columns shown.

    The page is EXPORT_WIDTH columns wide, or as wide as its widest part up to EXPORT_MAX_WIDTH, so it
    pages only what no screen could show and does not depend on the terminal (or COLUMNS) of the run;
    the paths were vetted by check_outputs before any work.
    """
    if svg is None and html is None:
        return
    parts = build(True)
    measure = Console(width=EXPORT_MAX_WIDTH, file=io.StringIO())
    width = max([EXPORT_WIDTH] + [min(EXPORT_MAX_WIDTH, measure.measure(part).maximum) for part in parts])
    console = Console(width=width, file=io.StringIO(), record=True, highlight=False, force_terminal=True,
                      color_system="truecolor")
    for part in parts:
        console.print(part)
    for path, export in ((svg, console.export_svg), (html, console.export_html)):
        if path is not None:
            write_new(path, export(clear=False), force=force)
            Console(stderr=True, highlight=False).print(f"saved {escape(str(path))}")


def check_outputs(weights_path: Optional[Path], force: bool, *paths: Optional[Path], what: str = "weight file") -> None:
    """Refuse bad output paths before doing any work."""
    for path in paths:
        if path is None:
            continue
        if weights_path is not None and path.resolve() == weights_path.resolve():
            raise HandwiredError(f"{path}: that is the {what} being read; choose another file")
        check_writable(path, force)


class Output:
    """What a rendering command shows: on the terminal, and with --svg/--html also saved (see save_view).

    Create it first: it vets the output paths before any work. Then ``show(view)``, where ``view(everything)``
    builds the parts of the view, folded for the terminal unless ``everything``.
    """

    def __init__(self, svg: Optional[Path], html: Optional[Path], force: bool, reading: tuple[Path, ...] = (),
                 as_json: bool = False, what: str = "weight file") -> None:
        if as_json and (svg is not None or html is not None):
            raise HandwiredError("--json prints data for programs and --svg/--html save the view: choose one")
        for source in reading or (None,):
            check_outputs(source, force, svg, html, what=what)
        if svg is not None and html is not None and svg.resolve() == html.resolve():
            raise HandwiredError(f"--svg and --html: both are {svg}; choose two files")
        self.svg, self.html, self.force = svg, html, force

    def show(self, view: Callable[[bool], list], show_all: bool = False) -> None:
        console = stdout()
        for part in view(show_all):
            console.print(part)
        save_view(view, self.svg, self.html, self.force)
