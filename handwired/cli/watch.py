"""watch: the explain view and the check verdict of a weight file, redrawn each time it is saved."""

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live

from handwired.cli.common import (
    BlockOption,
    HeadOption,
    NoProofOption,
    PositionOption,
    ShowAllOption,
    WeightsOption,
    spelling,
    weight_spec,
)
from handwired.cli.explain import StepOption
from handwired.errors import HandwiredError
from handwired.judge.game.catalogue import load_puzzle
from handwired.views import steps as explaining
from handwired.views import watch as watching
from handwired.views.terminal import SafeConsole
from handwired.weightfile.jsonfile import check_path

app = typer.Typer()

POLL_SECONDS = 0.1  # how often the file's modification time and size are looked at


@app.command()
def watch(
    ctx: typer.Context,
    file: Annotated[
        str | None,
        typer.Argument(metavar="[PATH]", help="The weight file you are editing (or -w PATH)."),
    ] = None,
    text: Annotated[str | None, typer.Argument(help="The context; default: under a puzzle, its shortest failing "
                                                    "context while there is one; else the weight file's example.")
                    ] = None,
    weights: WeightsOption = None,
    step: StepOption = None,
    block: BlockOption = None,
    head: HeadOption = None,
    position: PositionOption = None,
    show_all: ShowAllOption = False,
    puzzle: Annotated[
        str | None, typer.Option(help="Judge by this puzzle's rule (handwired puzzles); default: the puzzle the file "
                                      "names, else its target. While it fails, its shortest failure is drawn.")
    ] = None,
    no_proof: NoProofOption = False,
    page: Annotated[bool, typer.Option("--page", help="Show it in your browser instead: a page on 127.0.0.1, every "
                                                      "step a heatmap, redrawn at each save (Ctrl-C: exit code 130).")
                    ] = False,
    open_page: Annotated[bool, typer.Option("--open", help="With --page: also open the page in your browser.")
                         ] = False,
    port: Annotated[int | None, typer.Option(help="With --page: the port on 127.0.0.1 (default: a free one).",
                                             min=0, max=65535)] = None,
) -> None:
    """Show the explain view and the check verdict of PATH, and redraw them each time it is saved (Ctrl-C quits)."""
    if weights is not None and text is None:  # watch -w PATH TEXT: the one positional is the text
        file, text = None, file
    path = Path(weight_spec(file, weights, default=None))
    check_path(path)
    if not path.is_file():
        raise HandwiredError(f"{path}: no such file" if not path.exists() else f"{path}: is not a file")
    wanted = explaining.expand(step or [])
    named = any(name in explaining.BLOCK_STEPS for name in step or [])  # heads/concat asked for by name
    judge = watching.judge(load_puzzle(puzzle) if puzzle is not None else None, not no_proof)
    spell = spelling(ctx.command)  # errors on the screen name this command's flags, as its own errors do
    if page or open_page or port is not None:
        return _page(path, text, wanted, block, head, judge, named, position, spell, page, open_page, port,
                     show_all)
    console = SafeConsole(highlight=False)
    if not console.is_terminal:
        raise HandwiredError("watch redraws a terminal screen and stdout is not a terminal; for a one-off view "
                             f"use handwired explain -w {path} or handwired check -w {path}, or watch it in "
                             f"your browser: handwired watch {path} --page")

    def load() -> watching.Snapshot:
        return watching.load_snapshot(path, text, wanted, block, head, judge, named, position, spell)

    try:
        with Live(console=console, screen=True, auto_refresh=False, transient=True) as live:
            _redraw_on_save(live, console, path, load, show_all)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how one leaves: not an error


def _page(path: Path, text: str | None, wanted: list[str], block: int | None, head: int | None,
          judge: watching.Judge, named: bool, position: int | None, spell: Callable[[str], str], page: bool,
          open_page: bool, port: int | None, show_all: bool) -> None:
    """watch --page: the same snapshots, served to a browser (handwired.cli.page) until Ctrl-C (exit code 130)."""
    if not page:
        raise HandwiredError(f"{'--open' if open_page else '--port'} is for the page: add --page")
    from handwired.cli import page as serving  # only for the page: the terminal's watch loads no server

    def load(asked: str | None) -> watching.Snapshot:
        shown = asked if asked is not None else text
        return watching.load_snapshot(path, shown, wanted, block, head, judge, named, position, spell)

    serving.run(path, load, port or 0, open_page, show_all, echo=lambda line: typer.echo(line))


def _redraw_on_save(live: Live, console: Console, path: Path, load: Callable[[], watching.Snapshot],
                    show_all: bool) -> None:
    """Poll the file; load each save off this thread, and draw what is loaded (or that it is loading)."""
    state = watching.State()
    seen: tuple | None | str = "never"
    loading: Loading | None = None
    size = console.size
    while True:
        now = watching.fingerprint(path)
        if loading is None and now != seen:  # a save, and nothing loading: say so, then load it off this thread
            header = f" handwired watch {path} · loading the save of {time.strftime('%H:%M:%S')} … · Ctrl-C to quit "
            live.update(watching.Cropped(watching.screen(state, header, show_all)), refresh=True)
            seen, loading = now, Loading(load)  # after the drawing, which would share the interpreter with it
        elif loading is not None and loading.done.is_set():
            finished, loading = loading, None
            snapshot = finished.snapshot()
            if now != seen:
                continue  # saved again meanwhile: this result is stale, the newest save is loaded next
            state = state.advance(snapshot)
            header = f" handwired watch {path} · loaded in {finished.took * 1000:.0f} ms · Ctrl-C to quit "
            live.update(watching.Cropped(watching.screen(state, header, show_all)), refresh=True)
        elif console.size != size:
            size = console.size
            live.refresh()
        time.sleep(POLL_SECONDS)


class Loading:
    """One load running on a thread of its own, so the screen says it is working and new saves are seen.

    A daemon thread: Ctrl-C leaves at once, even in the middle of a long load.
    """

    def __init__(self, load: Callable[[], watching.Snapshot]) -> None:
        self.done = threading.Event()
        self.result: watching.Snapshot | None = None
        self.error: BaseException | None = None
        self.took = 0.0
        threading.Thread(target=self._run, args=(load,), daemon=True, name="handwired-watch").start()

    def snapshot(self) -> watching.Snapshot:
        """What the finished load made; what it raised, raised here (on the main thread)."""
        if self.error is not None:
            raise self.error
        if self.result is None:
            raise RuntimeError("the load has not finished")
        return self.result

    def _run(self, load: Callable[[], watching.Snapshot]) -> None:
        started = time.monotonic()
        try:
            self.result = load()
        except BaseException as error:  # a bug, not a bad file (the snapshot holds those): raised on the main thread
            self.error = error
        finally:
            self.took = time.monotonic() - started
            self.done.set()

