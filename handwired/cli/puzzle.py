"""puzzles' commands on one puzzle, or a new one: show, start, new, check and hint (the group and its list are
:mod:`.puzzles`; the reference solution, which loads a syntax highlighter, is :mod:`.solution`)."""

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.text import Text

from handwired.cli.checking import puzzle_verdict
from handwired.cli.common import (
    ByCasesOption,
    ForceOption,
    HtmlOption,
    JsonOption,
    NearMissOption,
    NoProofOption,
    ShowAllOption,
    ShowOption,
    SvgOption,
    WeightsOption,
    is_stdout,
    stdout,
    weight_spec,
    write_output,
)
from handwired.cli.puzzles import progress
from handwired.defaults import FAILURES_SHOWN, NEAR_MISS
from handwired.judge.game.catalogue import load_puzzle, puzzle_reference
from handwired.judge.game.puzzle import starter, template
from handwired.views.puzzles import statement_view
from handwired.weightfile.axes import escaped, shown
from handwired.weightfile.writing import dumps

app = typer.Typer(add_completion=False)

NameArgument = Annotated[str, typer.Argument(
    metavar="PUZZLE", help="A puzzle's name, e.g. previous (see: handwired puzzles), or a statement's path.")]


@app.command("show")
def puzzles_show(name: NameArgument) -> None:
    """The statement: story, rule, examples with their answers, caps, par."""
    stdout().print(statement_view(load_puzzle(name), progress()))


@app.command("start")
def puzzles_start(
    name: NameArgument,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="The file to create; default NAME.json (NAME-answer.json for a "
                     "statement you wrote)."),
    ] = None,
    force: ForceOption = False,
) -> None:
    """Write a starter weight file: the puzzle's vocab and n_ctx, shapes at the caps, all zeros."""
    puzzle = load_puzzle(name)
    output = output or Path(puzzle.answer_file)  # a plain file name (a statement's name is one): the current folder
    key = puzzle_reference(puzzle, Path.cwd() if is_stdout(output) else output.parent)
    say = write_output(output, dumps(starter(puzzle, key)), force)
    names = (f"it names its puzzle, so check, watch, diff and predict judge it by {escape(puzzle.name)}" if key else
             "the statement is not beside it, so it names no puzzle (a weight file names only a statement in its own "
             "folder)")
    say.print(f"wrote {escape(str(output))}: vocab {escape(' '.join(map(shown, puzzle.vocab)))}, n_ctx {puzzle.n_ctx}, "
              f"{puzzle.caps.text()}; all zeros; {names}. Next: wire it, then "
              f"handwired puzzles check {escape(puzzle.ref)} {escape(str(output))}")


@app.command("new")
def puzzles_new(
    output: Annotated[Path, typer.Option("--output", "-o", help="The statement to create, e.g. my-puzzle.json.")],
    force: ForceOption = False,
) -> None:
    """Write a puzzle statement to edit: a small working puzzle, every part commented."""
    say = write_output(output, template("my-puzzle" if is_stdout(output) else output.stem), force)
    say.print(f"wrote {escape(str(output))}: a puzzle statement to edit. Next: handwired puzzles show "
              f"{escape(str(output))}, then handwired puzzles start {escape(str(output))}")


@app.command("check")
def puzzles_check(
    name: NameArgument,
    file: Annotated[str | None, typer.Argument(metavar="[PATH]", help="Your weight file; default NAME.json, "
                                                  "as start writes it (or give it with -w).")] = None,
    weights: WeightsOption = None,
    show: ShowOption = FAILURES_SHOWN,
    near_miss: NearMissOption = NEAR_MISS,
    as_json: JsonOption = False,
    show_all: ShowAllOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
    no_proof: NoProofOption = False,
    by_cases: ByCasesOption = False,
) -> None:
    """Judge PATH on every context by the puzzle's rule, with bounds on every rounding (a domain too large to walk:
    by cases); exit code 0 only if it solves the puzzle, proved on every context."""
    puzzle = load_puzzle(name)
    puzzle_verdict(puzzle, weight_spec(file, weights, default=puzzle.answer_file), show, near_miss, as_json, svg, html,
                   force, show_all, proof=not no_proof, by_cases=by_cases or None)


@app.command("hint")
def puzzles_hint(
    name: NameArgument,
    every_hint: Annotated[bool, typer.Option(
        "--every-hint", help="Reveal every hint at once and show them all, the ones revealed before too.")] = False,
) -> None:
    """Reveal the next hint, one more each time (only the new one is shown; --every-hint shows them all)."""
    puzzle = load_puzzle(name)
    before, revealed = progress().reveal_next(puzzle.key, len(puzzle.hints), every_hint)
    console = stdout()
    for number, hint in enumerate(puzzle.hints[:revealed], start=1):
        new = number > before
        if not (new or every_hint):
            continue
        line = Text.assemble((f"hint {number} of {len(puzzle.hints)}: ", "bold" if new else "dim"),
                             (escaped(hint), "" if new else "dim"))
        console.print(line, soft_wrap=not console.is_terminal)  # in a pipe: one a line
    if before == revealed and puzzle.hints and not every_hint:
        console.print(Text(f"Every hint is revealed already ({revealed} of {len(puzzle.hints)}); see them again with "
                           f"handwired puzzles hint {puzzle.ref} --every-hint", style="dim"))
    if revealed == len(puzzle.hints) and before == revealed and puzzle.bundled:
        console.print(Text("That was the last hint. The reference solution: "
                           f"handwired puzzles solution {puzzle.ref} (once solved, or with --spoil)", style="dim"))
