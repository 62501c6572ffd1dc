"""watch: the explain view and the check verdict of a weight file, redrawn each time it is saved."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from handwired import explain as explaining
from handwired.cli.app import BlockOption, HeadOption, PositionOption, ShowAllOption, StepOption, app, user_errors
from handwired.errors import HandwiredError

POLL_SECONDS = 0.1  # how often the file's modification time and size are looked at


@app.command()
@user_errors
def watch(
    file: Annotated[Path, typer.Argument(help="The weight file you are editing.")],
    text: Annotated[Optional[str], typer.Argument(help="The context; default: the weight file's example.")] = None,
    step: StepOption = None,
    block: BlockOption = None,
    head: HeadOption = None,
    position: PositionOption = None,
    show_all: ShowAllOption = False,
    puzzle: Annotated[
        Optional[str], typer.Option(help="Judge by this puzzle's rule (handwired puzzles) instead of the file's target.")
    ] = None,
) -> None:
    """Show the explain view and the check verdict of FILE, and redraw them each time it is saved (Ctrl-C quits)."""
    from rich.live import Live  # here, not above: the other commands start faster without them

    from handwired import watch as watching
    if not file.is_file():
        raise HandwiredError(f"{file}: no such file" if not file.exists() else f"{file}: is not a file")
    wanted = explaining.expand(step or [])
    named = any(name in explaining.BLOCK_STEPS for name in step or [])  # heads/concat asked for by name
    if puzzle is not None:
        from handwired import puzzles

        judge = watching.puzzle_verdict(puzzles.load_puzzle(puzzle))
    else:
        judge = watching.check_verdict
    console = Console(highlight=False)
    if not console.is_terminal:
        raise HandwiredError("watch redraws a terminal screen and stdout is not a terminal; for a one-off view "
                             f"use handwired explain --weights {file} or handwired check --weights {file}")
    state = watching.State()
    seen: tuple | None | str = "never"
    try:
        with Live(console=console, screen=True, auto_refresh=False, transient=True) as live:
            size = console.size
            while True:
                now = watching.fingerprint(file)
                if now != seen:
                    seen = now
                    started = time.monotonic()
                    state = state.advance(watching.load_snapshot(file, text, wanted, block, head, judge, named, position))
                    took = (time.monotonic() - started) * 1000
                    header = f" handwired watch {file} · loaded in {took:.0f} ms · Ctrl-C to quit "
                    live.update(watching.Cropped(watching.screen(state, header, show_all)), refresh=True)
                elif console.size != size:
                    size = console.size
                    live.refresh()
                time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how one leaves: not an error
