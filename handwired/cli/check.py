"""check: prove a model right on a stream, every context, or a sample; or judge it as a puzzle's answer."""

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from handwired.cli.checking import explain_command, load_answer, progress_and_stop, puzzle_verdict, warn_spent
from handwired.cli.common import (
    EXIT_CHECK_FAILED,
    EXIT_INTERRUPTED,
    ByCasesOption,
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
    warn_notes,
    weight_spec,
)
from handwired.defaults import FAILURES_SHOWN, MIN_LENGTH, NEAR_MISS, SEED, STREAM_MIN_LENGTH
from handwired.judge.checking.plans import Plan
from handwired.judge.checking.report import check_near_miss, run
from handwired.judge.game.catalogue import load_puzzle
from handwired.judge.judging import ANSWER, Choice, decide
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
    by_cases: ByCasesOption = False,
) -> None:
    """Score the model on its target pattern, or on its puzzle's rule when it names one (or --puzzle), with bounds on
    every rounding; exit code 0 only if nothing fails and every passing context is proved."""
    spec = weight_spec(file, weights)
    check_near_miss(near_miss)
    choice = Choice(puzzle=puzzle, target=target, length=length, exhaustive=exhaustive, sample=sample, seed=seed,
                    min_length=min_length, proof=not no_proof, by_cases=by_cases or None)
    asked = load_puzzle(puzzle) if puzzle is not None else None
    model = load_answer(asked, spec) if asked is not None and sample is None else load(spec)
    judging = decide(model, replace(choice, puzzle=asked))
    shown = {"svg": svg, "html": html, "force": force, "show_all": show_all}
    if judging.kind == ANSWER:
        assert judging.puzzle is not None, "an answer's judging names its puzzle"
        puzzle_verdict(judging.puzzle, spec, show, near_miss, as_json, model=model, judging=judging, **shown)
        return
    assert judging.plan is not None, "a check that is not a puzzle's verdict has a plan (or an error)"
    warn_notes(judging.notes)
    _check_plan(model, spec, judging.plan, show, near_miss, as_json, Output(svg, html, force, reading=(
        Path(model.source),), as_json=as_json), show_all)


def _check_plan(model: Model, spec: str, plan: Plan, show: int, near_miss: float, as_json: bool, out: Output,
                show_all: bool) -> None:
    """Run a target's check (or a sample of a puzzle's contexts: a check, never the puzzle's verdict, so nothing is
    solved or recorded) and show it: the report as JSON or the failure view; exit code 1 if it fails."""
    with progress_and_stop(not as_json) as (progress, should_stop):
        report = run(model, plan, show, progress, should_stop)
    if as_json:
        typer.echo(json_text(report_json(report, near_miss), indent=2))
    else:
        reveal = explain_command(model, spec, report.failures[0].context) if report.failures else None
        out.show(lambda everything: failure_view(model, report, near_miss, everything, reveal), show_all)
    warn_spent(report)
    if report.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if not report.ok:
        raise typer.Exit(EXIT_CHECK_FAILED)
