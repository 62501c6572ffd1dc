"""check: prove a model right on a stream, every context, or a sample; or judge it as a puzzle's answer."""

from pathlib import Path
from typing import Annotated

import typer

from handwired.cli.checking import explain_command, files_puzzle, progress_and_stop, puzzle_verdict
from handwired.cli.common import (
    EXIT_CHECK_FAILED,
    EXIT_INTERRUPTED,
    ForceOption,
    HtmlOption,
    JsonOption,
    NearMissOption,
    NoProofOption,
    Output,
    ShowAllOption,
    ShowOption,
    SvgOption,
    WeightsArgument,
    WeightsOption,
    given_flags,
    warn,
    weight_spec,
)
from handwired.defaults import FAILURES_SHOWN, MIN_LENGTH, NEAR_MISS, SEED, STREAM_MIN_LENGTH
from handwired.errors import HandwiredError
from handwired.judge.catalogue import bundled_puzzles, load_puzzle
from handwired.judge.plans import Plan, chosen_plan
from handwired.judge.puzzle import Puzzle
from handwired.judge.report import check_near_miss, run
from handwired.judge.verdict import puzzle_sample_plan
from handwired.views.report import failure_view, report_json
from handwired.weightfile import Model, load
from handwired.weightfile.writing import json_text

app = typer.Typer()


@app.command()
def check(
    file: WeightsArgument = None,
    weights: WeightsOption = None,
    target: Annotated[str | None, typer.Option(help="The repeating pattern; default: the file's target.")] = None,
    length: Annotated[int | None, typer.Option(help="Stream length in tokens; default: ten repeats of the target less "
                                                    "one, as the published test.")] = None,
    exhaustive: Annotated[bool, typer.Option("--exhaustive", help="Check every context of length --min-length…n_ctx.")
                          ] = False,
    sample: Annotated[int | None, typer.Option(help="Check this many random contexts instead.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed for --sample.")] = SEED,
    min_length: Annotated[
        int | None,
        typer.Option(help=f"Shortest context to check; default {STREAM_MIN_LENGTH} for a stream, "
                          f"{MIN_LENGTH} otherwise."),
    ] = None,
    show: ShowOption = FAILURES_SHOWN,
    near_miss: NearMissOption = NEAR_MISS,
    as_json: JsonOption = False,
    puzzle: Annotated[
        str | None, typer.Option(help="Judge the model as an answer to this puzzle, on every context by its rule.")
    ] = None,
    show_all: ShowAllOption = False,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
    no_proof: NoProofOption = False,
) -> None:
    """Score the model on its target pattern, or on its puzzle's rule when it names one (or --puzzle), with bounds on
    every rounding; exit code 0 only if nothing fails and every passing context is proved."""
    spec = weight_spec(file, weights)
    check_near_miss(near_miss)
    given = given_flags(target=target, length=length, exhaustive=exhaustive, sample=sample, min_length=min_length)
    shown = {"svg": svg, "html": html, "force": force, "show_all": show_all, "proof": not no_proof}
    if puzzle is not None:
        other = [flag for flag in given if flag not in ("--exhaustive", "--sample")]  # a verdict is every context
        if other:
            raise HandwiredError(f"--puzzle judges every context by the puzzle's rule, or --sample some of them; "
                                 f"{other[0]} does not apply")
        if exhaustive and sample is not None:
            raise HandwiredError("--exhaustive and --sample: choose one")
        if sample is not None:
            _sample_check(load_puzzle(puzzle), load(spec), spec, sample, seed, show, near_miss, as_json, shown)
            return
        puzzle_verdict(load_puzzle(puzzle), spec, show, near_miss, as_json, **shown)
        return
    model = load(spec)
    named = files_puzzle(model) if given == ["--sample"] and model.puzzle and model.target is None else None
    if named is not None:  # a sample of the contexts of the puzzle the file names
        _sample_check(named, model, spec, sample or 0, seed, show, near_miss, as_json, shown)
        return
    named = _named_puzzle(model, given)
    if named is not None:
        puzzle_verdict(named, spec, show, near_miss, as_json, model=model, asked=False, **shown)
        return
    plan = chosen_plan(model, target, length, exhaustive, sample, seed, min_length, _named_after(model),
                       proof=not no_proof)
    if model.puzzle is not None:  # a flag asked for the target check: say which judges the file
        _target_instead(model, given, target if target is not None else model.target)
    _check_plan(model, spec, plan, show, near_miss, as_json, Output(svg, html, force, reading=(Path(model.source),),
                                                                     as_json=as_json), show_all)


def _sample_check(puzzle: Puzzle, model: Model, spec: str, sample: int, seed: int, show: int, near_miss: float,
                  as_json: bool, shown: dict) -> None:
    """A random sample of the puzzle's contexts judged by its rule: a check (exit code 1 if it fails), never the
    puzzle's verdict: nothing is solved or recorded."""
    plan = puzzle_sample_plan(puzzle, model, sample, seed, proof=shown["proof"])
    out = Output(shown["svg"], shown["html"], shown["force"], reading=(Path(model.source),), as_json=as_json)
    _check_plan(model, spec, plan, show, near_miss, as_json, out, shown["show_all"])


def _target_instead(model: Model, given: list[str], pattern: str | None) -> None:
    """A file that names a puzzle, checked on a target because a flag asks: a warning saying which judges it."""
    asked = "--target" if "--target" in given else given[0]
    warn(f"{model.source} names the puzzle {model.puzzle!r}; checked on the target {pattern!r} instead, as {asked} "
         "asks (with no flag, it is judged as the puzzle's answer)")


def _check_plan(model: Model, spec: str, plan: Plan, show: int, near_miss: float, as_json: bool, out: Output,
                show_all: bool) -> None:
    """Run a target's check and show it: the report as JSON or the failure view; exit code 1 if it fails."""
    with progress_and_stop(not as_json) as (progress, should_stop):
        report = run(model, plan, show, progress, should_stop)
    if as_json:
        typer.echo(json_text(report_json(report, near_miss), indent=2))
    else:
        reveal = explain_command(model, spec, report.failures[0].context) if report.failures else None
        out.show(lambda everything: failure_view(model, report, near_miss, everything, reveal), show_all)
    if report.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if not report.ok:
        raise typer.Exit(EXIT_CHECK_FAILED)


def _named_after(model: Model) -> str | None:
    """The bundled puzzle the file is named after, as a reference written by puzzles solution -o is."""
    return model.name if model.name in bundled_puzzles() else None


def _named_puzzle(model: Model, given: list[str]) -> Puzzle | None:
    """The puzzle the file names, when it judges the file: with no flag, or with --exhaustive alone on a file without
    a target (a puzzle's verdict is every context of its domain). Other flags are a target check's."""
    if model.puzzle is None:
        return None
    if "--target" in given or (given and model.target is not None):
        return None
    other = [flag for flag in given if flag != "--exhaustive"]
    if other:
        named = files_puzzle(model)
        if named is not None:
            raise HandwiredError(f"{model.source}: names the puzzle {named.name!r}, judged on every context of its "
                                 f"domain by its rule; {other[0]} does not apply (a target check needs --target)")
        return None
    return files_puzzle(model)
