"""puzzles: the game. List, show, start, check, hint and the reference solution."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from handwired.cli.app import EXIT_INTERRUPTED, ForceOption, HtmlOption, Output, SvgOption, app, stdout, user_errors
from handwired.cli.check import NEAR_MISS, failure_view, report_json, run_with_progress
from handwired.errors import HandwiredError
from handwired.weightfile import dumps, load, write_new

if TYPE_CHECKING:
    from handwired import progress as progressing
    from handwired import puzzles

# The puzzle core (and the check machinery under it) is imported inside each command, so that
# registering these commands costs the other commands nothing at start-up.

puzzles_app = typer.Typer(
    help="The puzzles: a rule for the next token; wire a transformer that follows it on every context.",
    invoke_without_command=True,
)
app.add_typer(puzzles_app, name="puzzles")

NameArgument = Annotated[str, typer.Argument(help="The puzzle's name, e.g. previous (see: handwired puzzles).")]


def _warn(message: str) -> None:
    Console(stderr=True, highlight=False).print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=True)


def _progress() -> "progressing.Progress":
    from handwired import progress as progressing

    return progressing.load(warn=_warn)


@puzzles_app.callback()
@user_errors
def puzzles_main(ctx: typer.Context) -> None:
    """With no command: the list of puzzles and your progress."""
    if ctx.invoked_subcommand is None:
        puzzles_list()


@puzzles_app.command("list")
@user_errors
def puzzles_list() -> None:
    """Every puzzle: level, name, what to build, caps, solved?, your best score."""
    from handwired import puzzles

    catalogue = puzzles.catalogue()
    console = stdout()
    if not catalogue:
        console.print("No puzzles are installed.")
        return
    progress = _progress()
    table = Table(title="puzzles: each judged on every context", title_justify="left")
    for column, justify in (("level", "right"), ("name", "left"), ("to build", "left"), ("vocab", "left"),
                            ("n_ctx", "right"), ("caps", "left"), ("solved", "left")):
        table.add_column(column, justify=justify, no_wrap=column != "to build", ratio=1 if column == "to build" else None)
    table.caption = ("caps: at most n_embd, heads, blocks; MLP where allowed · solved: ✓ and your best score, "
                     "in non-zero parameters")
    for puzzle in catalogue:
        best = progress.best(puzzle.name)
        solved = progress.solved(puzzle.name)
        table.add_row(
            str(puzzle.level), Text(puzzle.name, style="bold"), puzzle.summary, "".join(puzzle.vocab),
            str(puzzle.n_ctx), _caps_short(puzzle.caps),
            Text(f"✓ {best.parameters}" if solved and best else "·", style="green" if solved else "dim"),
        )
    console.print(table)
    unsolved = [p.name for p in catalogue if not progress.solved(p.name)]
    solved = f"{len(catalogue) - len(unsolved)} of {len(catalogue)} solved."
    if not unsolved:
        console.print(Text(f"{solved} Every puzzle is solved: now beat par (fewer non-zero parameters).", style="dim"))
    else:
        start = "Start with" if len(unsolved) == len(catalogue) else "Next"
        console.print(Text(f"{solved} {start}: handwired puzzles show {unsolved[0]}", style="dim"))


def _caps_short(caps: puzzles.Caps) -> str:
    return f"{caps.n_embd}, {caps.n_head}, {caps.n_layer}{', MLP' if caps.mlp else ''}"


@puzzles_app.command("show")
@user_errors
def puzzles_show(name: NameArgument) -> None:
    """The statement: story, rule, examples with their answers, caps, par."""
    from handwired import puzzles

    puzzle = puzzles.load_puzzle(name)
    progress = _progress()
    console = stdout()
    examples = Table(title="examples (the answers are the rule's)", title_justify="left")
    examples.add_column("context")
    examples.add_column("next token")
    for context in puzzle.examples:
        answer = puzzles.answer(puzzle, context)
        examples.add_row(context, Text(answer.text(), style="bold green" if answer.status == 0 else "yellow"))
    par = progress.par(puzzle)
    best = progress.best(name)
    parts = [
        Text(puzzle.story),
        Text.assemble(("\nrule: ", "bold"), puzzle.rule.description),
        Text.assemble(("judged: ", "bold"), f"on every context of length 1…{puzzle.n_ctx} over {', '.join(puzzle.vocab)} "
                      f"({puzzle.n_contexts:,} contexts), each fed from position 0, by this rule alone — not by the "
                      "stream test that `handwired check` runs on a model's target"
                      + (", which starts the pattern at phase 0" if puzzle.rule_spec["kind"] == "pattern" else "")
                      + ". A context passes when the right token's logit is strictly above every other; "
                      "ambiguous and out-of-domain contexts are counted, never judged."),
        Text.assemble(("caps: ", "bold"), f"vocab {' '.join(puzzle.vocab)} (in this order), n_ctx {puzzle.n_ctx}, ",
                      puzzle.caps.text(), "; LayerNorm always allowed"),
        examples,
        Text.assemble(("par: ", "bold"), par.text() if par else "no reference solution"),
    ]
    if best is not None:
        parts.append(Text.assemble(("your best: ", "bold"), best.text()))
    parts.append(Text(f"hints: {progress.hints(name)} of {len(puzzle.hints)} revealed (handwired puzzles hint {name})",
                      style="dim"))
    parts.append(Text(f"Next: handwired puzzles start {name} -o {name}.json, wire it, then "
                      f"handwired puzzles check {name} {name}.json", style="dim"))
    title = Text.assemble((f"{puzzle.name}", "bold magenta"), f" — {puzzle.title}  (level {puzzle.level})",
                          ("  solved ✓" if progress.solved(name) else "", "green"))
    console.print(Panel(Group(*parts), title=title, title_align="left", expand=False))


@puzzles_app.command("start")
@user_errors
def puzzles_start(
    name: NameArgument,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="The file to create; default NAME.json.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Write a starter weight file: the puzzle's vocab and n_ctx, shapes at the caps, all zeros."""
    from handwired import puzzles

    puzzle = puzzles.load_puzzle(name)
    output = output or Path(f"{name}.json")
    write_new(output, dumps(puzzles.starter(puzzle)), force=force)
    stdout().print(f"wrote {escape(str(output))}: vocab {' '.join(puzzle.vocab)}, n_ctx {puzzle.n_ctx}, "
                   f"{puzzle.caps.text()}; all zeros. Next: wire it, then "
                   f"handwired puzzles check {name} {escape(str(output))}")


@puzzles_app.command("check")
@user_errors
def puzzles_check(
    name: NameArgument,
    file: Annotated[Optional[str], typer.Argument(help="Your weight file; default NAME.json, as start writes it.")] = None,
    show: Annotated[int, typer.Option(help="How many failing contexts to list, shortest first.")] = 10,
    near_miss: Annotated[float, typer.Option(help="Warn when the margin is below this many logits.")] = NEAR_MISS,
    as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable verdict.")] = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """Judge FILE on every context by the puzzle's rule; exit code 0 only if it solves the puzzle."""
    check_puzzle(name, file or f"{name}.json", show, near_miss, as_json, svg, html, force)


def check_puzzle(name: str, file: str, show: int, near_miss: float, as_json: bool,
                 svg: Optional[Path] = None, html: Optional[Path] = None, force: bool = False) -> None:
    """The puzzle verdict, shared by `handwired puzzles check` and `handwired check --puzzle`."""
    from handwired import puzzles

    if show < 1:
        raise HandwiredError(f"--show {show}: expected 1 or more")
    puzzle = puzzles.load_puzzle(name)
    model = load(file)
    out = Output(svg, html, force, reading=(Path(model.source),), as_json=as_json)
    plan = puzzles.plan(puzzle, model)  # the caps first: one line, exit 2
    report = run_with_progress(model, plan, show, show_progress=not as_json)
    score = puzzles.score(model, report)
    progress = _progress()
    best_before = progress.best(name)
    new_best = progress.record(name, score) if score is not None else False
    par = progress.par(puzzle) if score is not None else None
    if as_json:
        result = {"puzzle": name, **report_json(report, near_miss), "solved": score is not None,
                  "score": None if score is None else score.to_json(), "par": None if par is None else par.to_json(),
                  "best": None if progress.best(name) is None else progress.best(name).to_json(), "new_best": new_best}
        typer.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        def view(everything: bool) -> list:
            parts: list = [Text.assemble(("puzzle ", "dim"), (puzzle.name, "bold magenta"),
                                         f" — {puzzle.title} (level {puzzle.level})"),
                           *failure_view(model, report, near_miss, file, everything)]
            if score is not None:
                parts.append(_score_view(puzzle, score, par, best_before, new_best))
            elif not report.interrupted:
                parts.append(Text(f"\nNot solved yet. Stuck? handwired puzzles hint {name}", style="dim"))
            return parts

        out.show(view)
    if report.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if score is None:
        raise typer.Exit(1)


def _score_view(puzzle: puzzles.Puzzle, score: puzzles.Score, par: puzzles.Score | None,
                best_before: puzzles.Score | None, new_best: bool) -> Group:
    from handwired import puzzles

    table = Table(title="score (better: fewer non-zero parameters, then n_embd, blocks, heads; then a larger margin)",
                  title_justify="left")
    table.add_column("")
    for column in ("non-zero parameters", "n_embd", "heads", "blocks", "margin"):
        table.add_column(column, justify="right")
    rows = [("yours", score), ("par", par), ("your best before", best_before)]
    for label, figures in rows:
        if figures is not None:
            table.add_row(label, str(figures.parameters), str(figures.n_embd), str(figures.n_head),
                          str(figures.n_layer), puzzles.format_margin(figures.margin))
    verdict = f"\nSolved puzzle {puzzle.name!r}!"
    if par is not None and score.key() < par.key():
        verdict += " Better than par."
    elif par is not None and score.key() == par.key():
        verdict += " Level with par."
    if new_best and best_before is not None:
        verdict += " A new best."
    notes = [Text(verdict, style="bold green"), table,
             Text(f"How the reference does it: handwired puzzles solution {puzzle.name}", style="dim")]
    if score.margin < NEAR_MISS:
        notes.append(Text(f"The margin is under {NEAR_MISS:g} logit: it counts, but a more robust wiring "
                          "would lead by more.", style="yellow"))
    return Group(*notes)


@puzzles_app.command("hint")
@user_errors
def puzzles_hint(
    name: NameArgument,
    all_hints: Annotated[bool, typer.Option("--all", help="Reveal every hint.")] = False,
) -> None:
    """Reveal the next hint (one more each time); the ones already revealed are shown again."""
    from handwired import puzzles

    puzzle = puzzles.load_puzzle(name)
    progress = _progress()
    before = progress.hints(name)
    revealed = len(puzzle.hints) if all_hints else min(before + 1, len(puzzle.hints))
    progress.reveal(name, revealed)
    console = stdout()
    for number, hint in enumerate(puzzle.hints[:revealed], start=1):
        new = number > before
        console.print(Text.assemble((f"hint {number} of {len(puzzle.hints)}: ", "bold" if new else "dim"),
                                    (hint, "" if new else "dim")))
    if revealed == len(puzzle.hints) and before == revealed:
        console.print(Text("That was the last hint. The reference solution: "
                           f"handwired puzzles solution {name} (once solved, or with --spoil)", style="dim"))


@puzzles_app.command("solution")
@user_errors
def puzzles_solution(
    name: NameArgument,
    spoil: Annotated[bool, typer.Option("--spoil", help="Show it even though you have not solved the puzzle.")] = False,
) -> None:
    """The reference solution, once you have solved the puzzle (or with --spoil)."""
    from handwired import puzzles

    puzzle = puzzles.load_puzzle(name)
    path = puzzles.solution_path(name)
    if path is None:
        raise HandwiredError(f"puzzle {name!r} has no reference solution")
    progress = _progress()
    if not spoil and not progress.solved(name):
        raise HandwiredError(f"puzzle {name!r} is not solved yet: solve it first "
                             f"(handwired puzzles check {name} FILE), or add --spoil to see the solution anyway")
    model = load(str(path))
    par = progress.par(puzzle)
    console = stdout()
    console.print(Text.assemble(("reference solution of ", "dim"), (name, "bold"), ("  ", ""), (str(path), "dim")))
    if model.description:
        console.print(Text(model.description, style="italic"))
    console.print(Text.assemble(("par: ", "bold"), par.text() if par else "it does not solve the puzzle"))
    from rich.syntax import Syntax  # pygments: only here

    console.print(Syntax(path.read_text(encoding="utf-8"), "json", theme="ansi_dark", word_wrap=True))
    console.print(Text(f"Every matrix, labelled: handwired weights show {path}", style="dim"))
