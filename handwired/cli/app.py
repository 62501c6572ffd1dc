"""The typer application and what every command shares: options, error handling, saving output."""

from __future__ import annotations

import functools
import io
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer
from rich.console import Console
from rich.markup import escape

from handwired.errors import HandwiredError
from handwired.weightfile import write_new

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
EXPORT_MAX_WIDTH = 400  # columns of a saved --svg/--html page

WeightsOption = Annotated[
    str,
    typer.Option("--weights", "-w", help="A weight file, or the name of a bundled model.", show_default=True),
]


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

    The saved page is as wide as its widest table (up to EXPORT_MAX_WIDTH columns), so it pages only what
    no screen could show; the paths were vetted by check_outputs before any work.
    """
    if svg is None and html is None:
        return
    parts = build(True)
    measure = Console(width=EXPORT_MAX_WIDTH, file=io.StringIO())
    width = max([stdout().width] + [min(EXPORT_MAX_WIDTH, measure.measure(part).maximum) for part in parts])
    console = Console(width=width, file=io.StringIO(), record=True, highlight=False, force_terminal=True)
    for part in parts:
        console.print(part)
    for path, export in ((svg, console.export_svg), (html, console.export_html)):
        if path is not None:
            write_new(path, export(clear=False), force=force)
            Console(stderr=True, highlight=False).print(f"saved {escape(str(path))}")


def check_outputs(weights_path: Path, force: bool, *paths: Optional[Path]) -> None:
    """Refuse bad output paths before doing any work."""
    for path in paths:
        if path is None:
            continue
        if path.resolve() == weights_path.resolve():
            raise HandwiredError(f"{path}: that is the weight file being read; choose another file")
        if path.exists() and not force:
            raise HandwiredError(f"{path}: already exists; use --force to replace it")
