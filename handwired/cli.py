"""The command line: parse arguments, call the core, render. No maths here."""

from __future__ import annotations

import os

# handwired's matrices are tiny: BLAS threads only add overhead, while the
# batched evaluation spreads whole chunks of contexts over the cores instead.
# This must happen before numpy is first imported; a user's own setting wins.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import functools  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from handwired import check as checking
from handwired import explain as explaining
from handwired import render, run
from handwired.errors import HandwiredError
from handwired.weightfile import (
    DEFAULT_MODEL,
    MAX_SIZE,
    bundled_models,
    dumps,
    load,
    starter_document,
    validate,
    write_new,
)

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

WeightsOption = Annotated[
    str,
    typer.Option("--weights", "-w", help="A weight file, or the name of a bundled model.", show_default=True),
]


def stdout() -> Console:
    return Console(highlight=False)


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


def _save_console(console: Console, svg: Optional[Path], html: Optional[Path], force: bool) -> None:
    """Save what the console printed; the paths were vetted by _check_outputs before any work."""
    for path, export in ((svg, console.export_svg), (html, console.export_html)):
        if path is None:
            continue
        write_new(path, export(clear=False), force=force)
        Console(stderr=True, highlight=False).print(f"saved {escape(str(path))}")


def _check_outputs(weights_path: Path, force: bool, *paths: Optional[Path]) -> None:
    """Refuse bad output paths before doing any work."""
    for path in paths:
        if path is None:
            continue
        if path.resolve() == weights_path.resolve():
            raise HandwiredError(f"{path}: that is the weight file being read; choose another file")
        if path.exists() and not force:
            raise HandwiredError(f"{path}: already exists; use --force to replace it")


@app.command()
@user_errors
def predict(
    text: Annotated[str, typer.Argument(help="The context, one character per token, e.g. aabaa.")],
    weights: WeightsOption = DEFAULT_MODEL,
    all_positions: Annotated[bool, typer.Option("--all", help="Show the prediction at every position.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable result.")] = False,
) -> None:
    """Predict the next token after TEXT."""
    model = load(weights)
    trace = run.trace(model, text)
    if as_json:
        typer.echo(json.dumps(_prediction_json(model, trace, all_positions), indent=2, ensure_ascii=False))
        return
    stdout().print(render.prediction_view(model, trace, all_positions))


def _prediction_json(model, trace: run.Trace, all_positions: bool) -> dict:
    def at(i: int) -> dict:
        best, tied = run.top_token(trace.logits[i])
        return {
            "position": i,
            "token": trace.window[i],
            "prediction": model.vocab[best],
            "tied": tied,
            "logits": trace.logits[i].tolist(),
            "probabilities": trace.probs[i].tolist(),
        }

    last = at(len(trace.window) - 1)
    result = {
        "model": model.name,
        "weights": model.source,
        "vocab": list(model.vocab),
        "text": trace.text,
        "window": trace.window,
        "truncated": trace.truncated,
        "tokens": trace.tokens.tolist(),
        "prediction": last["prediction"],
        "tied": last["tied"],
        "logits": last["logits"],
        "probabilities": last["probabilities"],
    }
    if all_positions:
        result["positions"] = [at(i) for i in range(len(trace.window))]
    return result


@app.command()
@user_errors
def explain(
    text: Annotated[Optional[str], typer.Argument(help="The context; default: the weight file's example.")] = None,
    weights: WeightsOption = DEFAULT_MODEL,
    step: Annotated[
        Optional[list[str]],
        typer.Option("--step", "-s", help=f"Steps to show, repeatable: {', '.join(explaining.CHOICES)}. Default: all."),
    ] = None,
    block: Annotated[Optional[int], typer.Option(help="Show only this block.")] = None,
    head: Annotated[Optional[int], typer.Option(help="Show only this head.")] = None,
    svg: Annotated[Optional[Path], typer.Option(help="Also save what was printed as SVG.")] = None,
    html: Annotated[Optional[Path], typer.Option(help="Also save what was printed as HTML.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --svg/--html file.")] = False,
) -> None:
    """Show every intermediate of the forward pass on TEXT, step by step."""
    model = load(weights)
    _check_outputs(Path(model.source), force, svg, html)
    if text is None:
        if model.example is None:
            raise HandwiredError(f"{model.source}: has no 'example'; give the context, e.g. handwired explain {model.vocab[0] * 3}")
        text = model.example
    wanted = explaining.expand(step or [])
    trace = run.trace(model, text)
    panels = explaining.steps(model, trace, wanted, block, head)
    console = Console(highlight=False, record=svg is not None or html is not None)
    console.print(render.model_line(model))
    console.print(Text.assemble(("context ", "dim"), (trace.window, "bold"), f"  ({len(trace.window)} tokens)"))
    note = render.window_note(model, trace)
    if note:
        console.print(note)
    for panel in panels:
        console.print(render.step_panel(panel))
    _save_console(console, svg, html, force)


@app.command()
@user_errors
def complete(
    text: Annotated[str, typer.Argument(help="The context to continue.")],
    n: Annotated[int, typer.Option("-n", help="How many tokens to generate.")] = 10,
    weights: WeightsOption = DEFAULT_MODEL,
) -> None:
    """Continue TEXT greedily, the model always seeing the last n_ctx tokens."""
    model = load(weights)
    completed = run.complete(model, text, n)
    stdout().print(Text.assemble((text, "bold"), (completed[len(text):], "green")), soft_wrap=True)


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
    near_miss: Annotated[float, typer.Option(help="Warn when the margin is below this many logits.")] = checking.NEAR_MISS,
    as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable verdict.")] = False,
) -> None:
    """Score the model on its target pattern; exit code 0 only if nothing fails."""
    model = load(weights)
    pattern = target or model.target
    if pattern is None:
        raise HandwiredError(f"{model.source}: has no 'target'; give one with --target, e.g. --target {model.vocab[0] * 2}")
    if exhaustive and sample is not None:
        raise HandwiredError("--exhaustive and --sample: choose one")
    if (exhaustive or sample is not None) and length is not None:
        raise HandwiredError("--length is for a stream check; --exhaustive and --sample choose their own contexts")
    if show < 1:
        raise HandwiredError(f"--show {show}: expected 1 or more")
    if exhaustive:
        plan = checking.exhaustive_plan(model, checking.pattern_rule(model, pattern), 1 if min_length is None else min_length)
    elif sample is not None:
        plan = checking.sample_plan(model, checking.pattern_rule(model, pattern), sample, seed,
                                    1 if min_length is None else min_length)
    else:
        plan = checking.stream_plan(model, pattern, length or 10 * len(pattern) - 1, 2 if min_length is None else min_length)
    report = _run_with_progress(model, plan, show, show_progress=not as_json)
    if as_json:
        typer.echo(json.dumps(_report_json(report, near_miss), indent=2, ensure_ascii=False))
    else:
        console = stdout()
        console.print(render.report_view(model, report, near_miss))
        failure = report.shortest_failure
        if failure is not None:
            console.print(Text(f"\nWhy the shortest failing context {failure.context!r} fails: the attention view",
                               style="bold"))
            trace = run.trace(model, failure.context)
            for panel in explaining.steps(model, trace, explaining.expand(["attention", "probs"])):
                console.print(render.step_panel(panel))
    if report.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if not report.ok:
        raise typer.Exit(1)


def _run_with_progress(model, plan: checking.Plan, show: int, show_progress: bool) -> checking.Report:
    """Run a check; a progress bar appears only on a terminal and only once it has taken a second."""
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


def _report_json(report: checking.Report, near_miss: float) -> dict:
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


@weights_app.command("show")
@user_errors
def weights_show(
    path: Annotated[Optional[str], typer.Argument(help="A weight file or bundled model; default: aab.")] = None,
    weights: WeightsOption = DEFAULT_MODEL,
) -> None:
    """Show every weight matrix, labelled."""
    stdout().print(render.weights_view(load(path or weights)))


@weights_app.command("validate")
@user_errors
def weights_validate(
    path: Annotated[str, typer.Argument(help="The weight file to check.")],
) -> None:
    """List every problem in a weight file, or say it is OK."""
    file, model, problems = validate(path)
    if problems:
        err = Console(stderr=True, highlight=False)
        for problem in problems:
            err.print(f"{escape(str(file))}: {escape(problem)}", soft_wrap=True)
        err.print(f"{len(problems)} problem{'s' if len(problems) > 1 else ''}")
        raise typer.Exit(EXIT_USER_ERROR)
    stdout().print(Text.assemble(("OK ", "bold green"), f"{file}: ", render.model_line(model)))


@weights_app.command("new")
@user_errors
def weights_new(
    output: Annotated[Path, typer.Option("--output", "-o", help="The file to create.")],
    vocab: Annotated[str, typer.Option(help="The tokens, one character each, e.g. ab.")] = "ab",
    ctx: Annotated[int, typer.Option(help="n_ctx: how many tokens the model sees.")] = 5,
    embd: Annotated[int, typer.Option(help="n_embd: residual stream width.")] = 8,
    head: Annotated[int, typer.Option(help="n_head: attention heads (must divide --embd).")] = 1,
    blocks: Annotated[int, typer.Option(help="How many blocks.")] = 1,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Write a zero-filled starter weight file that validates."""
    if len(set(vocab)) != len(vocab) or not vocab:
        raise HandwiredError(f"--vocab {vocab!r}: expected distinct characters, e.g. ab")
    for option, value, lowest in (("--ctx", ctx, 1), ("--embd", embd, 1), ("--head", head, 1), ("--blocks", blocks, 0)):
        if not lowest <= value <= MAX_SIZE:
            raise HandwiredError(f"{option} {value}: expected {lowest} to {MAX_SIZE}")
    if embd % head:
        raise HandwiredError(f"--embd {embd} is not divisible by --head {head}")
    doc = starter_document(vocab, ctx, embd, head, blocks)
    write_new(output, dumps(doc), force=force)
    stdout().print(f"wrote {escape(str(output))}: vocab {' '.join(vocab)}, n_ctx {ctx}, n_embd {embd}, n_head {head}, "
                   f"{blocks} block{'s' if blocks != 1 else ''}, all zeros. Next: edit it, then "
                   f"handwired explain --weights {escape(str(output))}")


@weights_app.command("list")
def weights_list() -> None:
    """List the bundled models."""
    console = stdout()
    for name, path in bundled_models().items():
        console.print(Text.assemble((name, "bold"), f"  {path}"))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
