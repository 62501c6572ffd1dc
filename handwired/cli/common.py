"""What every command shares: options, the weight file's two spellings, errors in one line, output and saving.

Errors from the core name its parameters (``{min_length}``); :func:`guard`
prints them with the flag the running command maps each one to
(``--min-length``), on one line of stderr, and exits with code 2. Anything
else that escapes a command is a bug in handwired: :func:`internal_error`
says so in one line and exits with code 70 (``EX_SOFTWARE``), the traceback
kept for ``HANDWIRED_DEBUG=1``.
"""

import errno
import io
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperOption

from handwired import budget
from handwired.defaults import DEFAULT_MODEL
from handwired.errors import HandwiredError, Note
from handwired.views.display import EXPORT_WIDTH, recorded
from handwired.views.terminal import SafeConsole
from handwired.weightfile.axes import printable
from handwired.weightfile.jsonfile import check_path
from handwired.weightfile.writing import check_writable, write_new

EXIT_CHECK_FAILED = 1
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_INTERNAL_ERROR = 70  # EX_SOFTWARE in sysexits.h: a bug, not the user's input
DEBUG_VARIABLE = "HANDWIRED_DEBUG"
STDOUT = "-"  # as an output file: write it to stdout

WeightsOption = Annotated[
    str | None,
    typer.Option("--weights", "-w", metavar="NAME|PATH",
                 help=f"A weight file, or the name of a bundled model (default: {DEFAULT_MODEL}).", show_default=False),
]
WeightsArgument = Annotated[
    str | None,
    typer.Argument(metavar="[NAME|PATH]", help="A weight file or bundled model (or give it with -w).",
                   show_default=False),
]
BlockOption = Annotated[int | None, typer.Option(help="Show only this block.")]
HeadOption = Annotated[int | None, typer.Option(help="Show only this head.")]
ShowAllOption = Annotated[
    bool, typer.Option("--all", help="Also show the rows and columns that are all zero (folded away by default).")
]
PositionOption = Annotated[int | None, typer.Option(help="The position the why step explains; default: the last.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print a machine-readable result on stdout.")]
NoProofOption = Annotated[
    bool, typer.Option("--no-proof", help="Skip the certified bounds: the verdict then says passed in float64, never "
                                          "proved, and a puzzle is not counted as solved.")
]
ByCasesOption = Annotated[
    bool, typer.Option("--by-cases", help="Prove every context by cases (sets of contexts bounded at once, split "
                                          "where they must be), whatever the domain's size; by default only a domain "
                                          "too large to walk is.")
]
SvgOption = Annotated[
    Path | None, typer.Option("--svg", help=f"Also save the view as SVG, nothing folded, {EXPORT_WIDTH}+ columns "
                                            "wide (- for stdout, instead of the view).")
]
HtmlOption = Annotated[
    Path | None,
    typer.Option("--html", help=f"Also save the view as HTML, nothing folded, {EXPORT_WIDTH}+ columns wide "
                                "(- for stdout, instead of the view)."),
]
ForceOption = Annotated[bool, typer.Option("--force", help="Replace an existing output file.")]
ShowOption = Annotated[int, typer.Option(help="How many failing contexts to list, shortest first.")]
NearMissOption = Annotated[float, typer.Option(help="Warn when the margin is below this many logits.")]
NoMaskOption = Annotated[
    bool, typer.Option("--no-mask", help="Run without the causal mask: bidirectional self-attention, as an encoder.")
]


def weight_spec(positional: str | None, option: str | None, default: str | None = DEFAULT_MODEL) -> str:
    """The weight file, given either as the positional argument or with -w (not both), else ``default``."""
    if positional is not None and option is not None:
        raise HandwiredError(f"{positional} and --weights {option}: give the weight file once")
    spec = positional if positional is not None else option if option is not None else default
    if spec is None:
        raise HandwiredError("no weight file: give one, e.g. -w my.json")
    return spec


def stdout() -> Console:
    # no :name: codes in handwired's output; skips loading rich's emoji table
    return SafeConsole(highlight=False, emoji=False)


def stderr() -> Console:
    return SafeConsole(stderr=True, highlight=False, emoji=False)


def warn(message: str) -> None:
    stderr().print(f"[yellow]warning:[/] {escape(printable(message))}", soft_wrap=True)


def flag(name: str) -> str:
    """A core parameter's name as the flag every command spells it with, when it has one (``--min-length``)."""
    return "--" + name.replace("_", "-")


def warn_notes(notes: Iterable[Note]) -> None:
    """The core's notes beside a result (handwired.judge.judging), as warnings naming the command's flags."""
    for note in notes:
        warn(note.render(flag))


def debugging() -> bool:
    return os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def internal_error(error: BaseException) -> typer.Exit:
    """Report an exception no check foresaw: one line (the traceback too with HANDWIRED_DEBUG=1); exit code 70."""
    if debugging():
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    what = "ran out of memory" if isinstance(error, MemoryError) else f"{type(error).__name__}: {error}"
    hint = ("the traceback is above" if debugging()
            else f"run again with {DEBUG_VARIABLE}=1 or --debug for the traceback")
    stderr().print(f"[bold red]internal error:[/] {escape(printable(what))} — a bug in handwired, not in your "
                   f"input; please report it ({hint})", soft_wrap=True)
    return typer.Exit(EXIT_INTERNAL_ERROR)


def _is_control_flow(error: BaseException) -> bool:
    """typer's and click's own exceptions (exit, abort, usage errors), and stdout's reader gone (``| head``, which
    click ends quietly): how a command ends, not bugs."""
    return (isinstance(error, (typer.Exit, typer.Abort, BrokenPipeError))
            or type(error).__module__.split(".")[0] in ("typer", "click"))


def spelling(command) -> Callable[[str], str]:
    """A core parameter's name -> how this command spells it: its flag (--min-length), or its argument (TEXT)."""
    params = {param.name: param for param in command.params}

    def spell(name: str) -> str:
        param = params.get(name)
        if param is None:
            return flag(name)
        if param.param_type_name == "argument":
            return param.human_readable_name
        return max(param.opts, key=len)  # --weights rather than -w

    return spell


def _allow(name: str):
    """The callback of ``--max-seconds`` or ``--max-memory``: what the user allows, for this command's work."""

    def allow(ctx, param, value) -> None:
        if value is None:
            return
        ctx.call_on_close(budget.reset)  # the allowance is this command's
        try:
            budget.allow(**{name: value})
        except HandwiredError:
            what = "a size such as 8G, 512M or 1.5GB" if name == "max_memory" else "a positive number of seconds"
            raise typer.BadParameter(f"{value!r}: expected {what}") from None

    return allow


BUDGET_HELP = {
    "max_seconds": "Allow work estimated at up to this many seconds (by default 30 for a check of every context or a "
                   "view, 600 for a sample, stream, sweep, ablation or proof by cases); refusals say what the work "
                   "needs.",
    "max_memory": "Allow work whose arrays take up to this much memory at their peak, e.g. 8G (by default 2G).",
}


def with_budget(command):
    """Give ``command`` (and every sub-command of a group) --max-seconds and --max-memory: a refusal by estimate
    names them, and they must work wherever on the line they are given."""
    for sub in getattr(command, "commands", {}).values():
        with_budget(sub)
    if getattr(command, "commands", None) is None and not any(p.name == "max_seconds" for p in command.params):
        command.params += [
            TyperOption(param_decls=["--max-seconds"], type=float, metavar="SECONDS", expose_value=False,
                        is_eager=True, callback=_allow("max_seconds"), help=BUDGET_HELP["max_seconds"]),
            TyperOption(param_decls=["--max-memory"], type=str, metavar="SIZE", expose_value=False, is_eager=True,
                        callback=_allow("max_memory"), help=BUDGET_HELP["max_memory"]),
        ]
    return command


def guard(command):
    """Make ``command`` (and every sub-command of a group) report a HandwiredError as one line, exit code 2,
    and anything unforeseen as one line naming it a bug, exit code 70."""
    for sub in getattr(command, "commands", {}).values():
        guard(sub)
    invoke = command.invoke

    def guarded(ctx):
        try:
            try:
                return invoke(ctx)
            except OSError as error:
                if error.errno == errno.ENAMETOOLONG:  # a path no file system holds is the input's, never a bug
                    check_path(error.filename or "")  # names the path and the limit, unless the path was fine
                raise
        except HandwiredError as error:
            message = printable(error.render(spelling(ctx.command)))
            stderr().print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
            raise typer.Exit(EXIT_USER_ERROR) from None
        except KeyboardInterrupt:  # a command that does not stop cleanly on Ctrl-C still ends without a traceback
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as error:
            if _is_control_flow(error):
                raise
            raise internal_error(error) from None

    command.invoke = guarded
    return command


def is_stdout(path: Path | None) -> bool:
    return path is not None and str(path) == STDOUT


def given_flags(**options) -> list[str]:
    """The options given, as their flags (``min_length`` -> ``--min-length``): a value of 0 is given, None and
    an unset switch (False) are not."""
    return [flag(name) for name, value in options.items()
            if value is not None and value is not False]


def write_output(path: Path, text: str, force: bool = False) -> Console:
    """Write ``text`` to the file ``path`` (atomically, see write_new), or to stdout when it is ``-``.

    Returns the console to say what was written on: stdout, or a silent one when stdout carries the file
    itself (``-o - > x.json``, ``-o - | jq``: only the file, nothing to skip over).
    """
    if is_stdout(path):
        sys.stdout.write(text)
        sys.stdout.flush()
        return Console(file=io.StringIO())
    write_new(path, text, force=force)
    return stdout()


def save_view(build: Callable[[bool], list], svg: Path | None, html: Path | None, force: bool) -> None:
    """Save a view as SVG and/or HTML with nothing folded: ``build(True)`` gives its parts, all rows and columns shown.

    The page is as wide as views.display makes it, so it pages only what no screen could show and does not
    depend on the terminal (or COLUMNS) of the run; the paths were vetted by check_outputs before any work.
    """
    if svg is None and html is None:
        return
    console = recorded(build(True))
    for path, export in ((svg, console.export_svg), (html, console.export_html)):
        if path is not None:
            write_output(path, export(clear=False), force)
            if not is_stdout(path):
                stderr().print(f"saved {escape(str(path))}")


def check_outputs(weights_path: Path | None, force: bool, *paths: Path | None, what: str = "weight file") -> None:
    """Refuse bad output paths before doing any work."""
    for path in paths:
        if path is None or is_stdout(path):
            continue
        if weights_path is not None and path.resolve() == weights_path.resolve():
            raise HandwiredError(f"{path}: that is the {what} being read; choose another file")
        check_writable(path, force)


def _same_output(first: Path, second: Path) -> bool:
    if is_stdout(first) or is_stdout(second):
        return is_stdout(first) and is_stdout(second)
    return first.resolve() == second.resolve()


class Output:
    """What a rendering command shows: on the terminal, and with --svg/--html also saved (see save_view).

    Create it first: it vets the output paths before any work. Then ``show(view)``, where ``view(everything)``
    builds the parts of the view, folded for the terminal unless ``everything``.
    """

    def __init__(self, svg: Path | None, html: Path | None, force: bool, reading: tuple[Path, ...] = (),
                 as_json: bool = False, what: str = "weight file") -> None:
        if as_json and (svg is not None or html is not None):
            raise HandwiredError("--json prints data for programs and --svg/--html save the view: choose one")
        for source in reading or (None,):
            check_outputs(source, force, svg, html, what=what)
        if svg is not None and html is not None and _same_output(svg, html):
            raise HandwiredError(f"--svg and --html: both are {svg}; choose two files")
        self.svg, self.html, self.force = svg, html, force

    def show(self, view: Callable[[bool], list], show_all: bool = False) -> None:
        if not (is_stdout(self.svg) or is_stdout(self.html)):  # else stdout carries the picture alone
            console = stdout()
            for part in view(show_all):
                console.print(part)
        save_view(view, self.svg, self.html, self.force)
