"""puzzles solution: the reference solution of a bundled puzzle, once solved; a module of its own, imported only
when it runs, since its JSON view loads a syntax highlighter (pygments) that no other puzzles command needs."""

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.syntax import Syntax
from rich.text import Text

from handwired.cli.common import ForceOption, stdout, write_output
from handwired.cli.puzzle import NameArgument
from handwired.cli.puzzles import progress
from handwired.errors import HandwiredError
from handwired.judge.game.catalogue import load_puzzle, solution_path
from handwired.views.puzzles import score_text
from handwired.weightfile import load

app = typer.Typer(add_completion=False)


@app.command("solution")
def puzzles_solution(
    name: NameArgument,
    spoil: Annotated[bool, typer.Option("--spoil", help="Show it even though you have not solved the puzzle.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the solution's weight file here instead of showing it.")
    ] = None,
    force: ForceOption = False,
) -> None:
    """The reference solution, once you have solved the puzzle (or with --spoil). In a pipe, or with -o, the weight
    file alone, as it is written."""
    puzzle = load_puzzle(name)
    path = solution_path(puzzle.name) if puzzle.bundled else None
    if path is None:
        raise HandwiredError(f"puzzle {name!r} has no reference solution")
    if not spoil and not progress().solved(puzzle.key):
        raise HandwiredError(f"puzzle {name!r} is not solved yet: solve it first "
                             f"(handwired puzzles check {name} FILE), or add --spoil to see the solution anyway")
    text = path.read_text(encoding="utf-8")
    console = stdout()
    if output is not None:
        say = write_output(output, text, force)
        say.print(f"wrote {escape(str(output))}: the reference solution of {escape(name)}. "
                  f"See it: handwired weights show {escape(str(output))}")
        return
    if not console.is_terminal:  # the file alone, so `> f` is a weight file
        typer.echo(text, nl=not text.endswith("\n"))
        return
    model = load(str(path))
    console.print(Text.assemble(("reference solution of ", "dim"), (name, "bold"), ("  ", ""), (str(path), "dim")))
    if model.description:
        console.print(Text(model.description, style="italic"))
    console.print(Text.assemble(("par: ", "bold"), score_text(puzzle.par) if puzzle.par else "not stated"))
    console.print(Syntax(text, "json", theme="ansi_dark", word_wrap=True))
    console.print(Text(f"Every matrix, labelled: handwired weights show {path}", style="dim"))
