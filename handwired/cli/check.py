"""check: prove a model right on a stream, every context, or a sample."""

import json
import shlex
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.text import Text

from handwired import explain as explaining
from handwired import render, run
from handwired.cli.app import EXIT_INTERRUPTED, ForceOption, HtmlOption, Output, SvgOption, WeightsOption, app, user_errors
from handwired.errors import HandwiredError
from handwired.weightfile import DEFAULT_MODEL, load

if TYPE_CHECKING:
    from handwired import check as checking

NEAR_MISS = 1.0  # --near-miss's default, as handwired.check.NEAR_MISS (a test holds them equal), kept out of the imports


@app.command()
@user_errors
def check(
    weights: WeightsOption = DEFAULT_MODEL,
    target: Annotated[Optional[str], typer.Option(help="The repeating pattern; default: the file's target.")] = None,
    length: Annotated[
        Optional[int],
        typer.Option(help="Stream length in tokens; default: ten repeats of the target less one, as the published test."),
    ] = None,
    exhaustive: Annotated[bool, typer.Option("--exhaustive", help="Check every context of length --min-length…n_ctx.")] = False,
    sample: Annotated[Optional[int], typer.Option(help="Check this many random contexts instead.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed for --sample.")] = 0,
    min_length: Annotated[
        Optional[int], typer.Option(help="Shortest context to check; default 2 for a stream, 1 otherwise.")
    ] = None,
    show: Annotated[int, typer.Option(help="How many failing contexts to list, shortest first.")] = 10,
    near_miss: Annotated[float, typer.Option(help="Warn when the margin is below this many logits.")] = NEAR_MISS,
    as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable verdict.")] = False,
    no_mask: Annotated[bool, typer.Option("--no-mask", help="Refused: a next-token check must not let the model see the future.")] = False,
    puzzle: Annotated[
        Optional[str], typer.Option(help="Judge the model as an answer to this puzzle, on every context by its rule.")
    ] = None,
    svg: SvgOption = None,
    html: HtmlOption = None,
    force: ForceOption = False,
) -> None:
    """Score the model on its target pattern (or a puzzle's rule); exit code 0 only if nothing fails."""
    if no_mask:
        raise HandwiredError("--no-mask: check judges next-token predictions, and a model that sees the tokens after "
                             "a position can read the answer instead of predicting it; there is nothing to prove. "
                             "Use it with predict or explain")
    if puzzle is not None:
        given = [option for option, value in (("--target", target), ("--length", length), ("--exhaustive", exhaustive),
                                              ("--sample", sample), ("--min-length", min_length)) if value not in (None, False)]
        if given:
            raise HandwiredError(f"--puzzle judges every context by the puzzle's rule; {given[0]} does not apply")
        from handwired.cli.puzzles import check_puzzle  # the same verdict as `handwired puzzles check`

        check_puzzle(puzzle, weights, show, near_miss, as_json, svg, html, force)
        return
    from handwired import check as checking  # here, not above: only check needs it, and predict starts faster
    model = load(weights)
    out = Output(svg, html, force, reading=(Path(model.source),), as_json=as_json)
    pattern = target if target is not None else model.target  # --target '' is a mistake, not "the file's"
    if pattern is None:
        raise HandwiredError(f"{model.source}: has no 'target'; give one with --target, e.g. --target {model.vocab[0] * 2}")
    if exhaustive and sample is not None:
        raise HandwiredError("--exhaustive and --sample: choose one")
    if (exhaustive or sample is not None) and length is not None:
        raise HandwiredError("--length is for a stream check; --exhaustive and --sample choose their own contexts")
    if show < 1:
        raise HandwiredError(f"--show {show}: expected 1 or more")
    if not near_miss >= 0 or near_miss == float("inf"):  # also refuses nan
        raise HandwiredError(f"--near-miss {near_miss}: expected a number of logits, 0 or more")
    if exhaustive:
        plan = checking.exhaustive_plan(model, checking.pattern_rule(model, pattern), 1 if min_length is None else min_length)
    elif sample is not None:
        plan = checking.sample_plan(model, checking.pattern_rule(model, pattern), sample, seed,
                                    1 if min_length is None else min_length)
    else:
        plan = checking.stream_plan(model, pattern, 10 * len(pattern) - 1 if length is None else length,
                                    2 if min_length is None else min_length)
    report = run_with_progress(model, plan, show, show_progress=not as_json)
    if as_json:
        typer.echo(json.dumps(report_json(report, near_miss), indent=2, ensure_ascii=False))
    else:
        out.show(lambda everything: failure_view(model, report, near_miss, weights, everything))
    if report.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if not report.ok:
        raise typer.Exit(1)


def failure_view(model, report: "checking.Report", near_miss: float, weights: str, everything: bool) -> list:
    """The report, then the attention view of the shortest failing context, if any."""
    parts: list = [render.report_view(model, report, near_miss)]
    failure = report.shortest_failure
    if failure is not None:
        parts.append(Text(f"\nWhy the shortest failing context {failure.context!r} fails: the attention view",
                          style="bold"))
        trace = run.trace(model, failure.context)
        again = ["handwired", "explain", failure.context, *(["-w", weights] if weights != DEFAULT_MODEL else []),
                 "--step", "attention", "--all"]
        parts += [render.step_panel(panel, everything, reveal=shlex.join(again))
                  for panel in explaining.steps(model, trace, explaining.expand(["attention"]))]
    return parts



def run_with_progress(model, plan: "checking.Plan", show: int, show_progress: bool) -> "checking.Report":
    """Run a check; a progress bar appears only on a terminal and only once it has taken a second."""
    from handwired import check as checking
    stop = {"asked": False}
    started = time.monotonic()
    bar: dict = {}
    console = Console(stderr=True)

    def on_interrupt(signum, frame):
        stop["asked"] = True

    def progress(done: int, total: int) -> None:
        if not show_progress or not console.is_terminal or time.monotonic() - started < 1.0:
            return
        if not bar:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            bar["progress"] = Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                       console=console, transient=True)
            bar["task"] = bar["progress"].add_task("check", total=total)
            bar["progress"].start()
        bar["progress"].update(bar["task"], completed=done)

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        return checking.run(model, plan, show, progress, lambda: stop["asked"])
    finally:
        signal.signal(signal.SIGINT, previous)
        if bar:
            bar["progress"].stop()


def report_json(report: "checking.Report", near_miss: float) -> dict:
    margin = report.margin
    return {
        "checked": report.description,
        "rule": report.rule,
        "total": report.total,
        "contexts": report.checked,
        "passed": report.passed,
        "failed": report.failed,
        "ambiguous": report.ambiguous,
        "out_of_domain": report.out_of_domain,
        "ok": report.ok,
        "interrupted": report.interrupted,
        "shortest_failure": report.shortest_failure.context if report.shortest_failure else None,
        "failures": [
            {"context": f.context, "expected": list(f.acceptable), "predicted": f.predicted, "tied": f.tied,
             "logits": f.logits.tolist(), "probabilities": f.probs.tolist()}
            for f in report.failures
        ],
        "margin": None if margin is None else {
            "logits": margin.value, "context": margin.context, "right": margin.right, "wrong": margin.wrong,
            "near_miss": report.near_miss(near_miss),
        },
    }
