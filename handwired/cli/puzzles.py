"""puzzles: the game's group and its list; show, start, new, check and hint are in :mod:`.puzzle` and the solution in
:mod:`.solution`, each imported only when one of its commands runs, so that the list loads nothing of a check."""

import typer

from handwired.cli import LazyGroup
from handwired.cli.common import JsonOption, stdout, warn
from handwired.errors import HandwiredError
from handwired.judge.game import progress as progressing
from handwired.judge.game.catalogue import listing
from handwired.views.catalogue import catalogue_json, catalogue_view
from handwired.weightfile.writing import json_text

COMMANDS = {  # in the order help lists them; the list is this module's, the solution .solution's, the others .puzzle's
    "list": "handwired.cli.puzzles:app list",
    **{name: f"handwired.cli.puzzle:app {name}" for name in ("show", "start", "new", "check", "hint")},
    "solution": "handwired.cli.solution:app",
}


class PuzzlesGroup(LazyGroup):
    lazy = COMMANDS


app = typer.Typer(
    cls=PuzzlesGroup,
    name="puzzles",
    help="The puzzles: a rule for the next token; wire a transformer that follows it on every context.",
    invoke_without_command=True,
)


def progress() -> progressing.Progress:
    return progressing.load(warn=warn)


@app.callback()
def puzzles_main(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """With no command: the list of puzzles and your progress."""
    if ctx.invoked_subcommand is None:
        puzzles_list(as_json)
    elif as_json:
        raise HandwiredError(f"--json before {ctx.invoked_subcommand}: it belongs to the list "
                             "(handwired puzzles --json); give a command's own options after its name")


@app.command("list")
def puzzles_list(as_json: JsonOption = False) -> None:
    """Every puzzle: level, name, what to build, caps, par, record, solved?, your best score (★: it ties or beats
    the record)."""
    puzzles = listing()
    if as_json:
        typer.echo(json_text(catalogue_json(puzzles, progress()), indent=2))
        return
    if not puzzles:
        stdout().print("No puzzles are installed.")
        return
    console = stdout()
    console.print(catalogue_view(puzzles, progress(), console.width))


