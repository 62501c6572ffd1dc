"""The command line: a thin layer on top that parses arguments, calls the core and renders.

Each command lives in a module of its own and is imported only when it runs
(click's lazily loaded sub-commands, :class:`LazyGroup`), so ``handwired
predict`` loads the forward pass and its view and nothing of checks, puzzles or
exports. Shared options, output and error handling are in :mod:`.common`.
"""

import functools
import importlib
import inspect
import os
import sys
import warnings
from typing import Annotated

# handwired's matrices are tiny: BLAS threads only add overhead, while the
# batched evaluation spreads whole chunks of contexts over the cores instead.
# This must happen before numpy is first imported; a user's own setting wins.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

# A model whose numbers leave float64's range is reported in one line naming where (engine.logits);
# numpy's own warnings about it, from any thread, would only repeat that in worse words.
for _message in ("overflow encountered", "invalid value encountered"):
    warnings.filterwarnings("ignore", message=_message, category=RuntimeWarning)

import typer  # noqa: E402
from typer.core import TyperGroup  # noqa: E402

from handwired.cli.common import DEBUG_VARIABLE, guard, internal_error, with_budget  # noqa: E402

COMMANDS = {  # name -> "module:app", in the order --help lists them; a module is imported when its command runs
    "predict": "handwired.cli.predict:app",
    "explain": "handwired.cli.explain:app",
    "complete": "handwired.cli.complete:app",
    "check": "handwired.cli.check:app",
    "watch": "handwired.cli.watch:app",
    "diff": "handwired.cli.diff:app",
    "spread": "handwired.cli.spread:app",
    "sweep": "handwired.cli.sweep:app",
    "ablate": "handwired.cli.ablate:app",
    "attend": "handwired.cli.attend:app",
    "weights": "handwired.cli.weights:app",
    "puzzles": "handwired.cli.puzzles:app",
    "export": "handwired.cli.interop:export_app",
    "import": "handwired.cli.interop:import_app",
}


COMPLETION_OPTIONS = ("install_completion", "show_completion")  # what typer adds to a Typer made with the defaults


class LazyGroup(TyperGroup):
    """A group whose sub-commands are imported on first use (click's documented pattern for lazy loading).

    ``lazy`` maps each name, in the order help lists them, to ``"module:app"``, or to ``"module:app name"``
    for one command of an app that holds several (``puzzles check``); a command the group already holds is
    not loaded again.
    """

    lazy: dict[str, str] = COMMANDS

    def list_commands(self, ctx) -> list[str]:
        return list(self.lazy)

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self.commands and cmd_name in self.lazy:
            spec, _, sub = self.lazy[cmd_name].partition(" ")
            module, attribute = spec.split(":")
            command = typer.main.get_command(getattr(importlib.import_module(module), attribute))
            if sub:  # one command of an app that holds several: typer makes such an app a group
                assert isinstance(command, TyperGroup)
                command = command.commands[sub]
            command.name = cmd_name
            # handwired offers no shell completion (the top command turns typer's off): no sub-command offers it
            command.params = [param for param in command.params if param.name not in COMPLETION_OPTIONS]
            self.commands[cmd_name] = guard(with_budget(one_line_paragraphs(command)))
            if "numpy" in sys.modules:  # a command that computes (and ctypes is loaded: numpy imports it)
                keep_freed_memory()
        return super().get_command(ctx, cmd_name)


def one_line_paragraphs(command):
    """Put each paragraph of the help of ``command`` (and of every sub-command of a group) on one line.

    A docstring breaks its lines where the source does; typer's rich help keeps those breaks in a group's list
    of commands, so a sentence broke mid-way there. Rich wraps a one-line paragraph to the terminal's width.
    """
    for sub in getattr(command, "commands", {}).values():
        one_line_paragraphs(sub)
    if command.help:
        command.help = "\n\n".join(" ".join(part.split()) for part in inspect.cleandoc(command.help).split("\n\n"))
    return command


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version  # only for --version: it costs every other command start-up time

        typer.echo(f"handwired {version('handwired')}")
        raise typer.Exit()


def _debug(value: bool) -> None:
    if value:
        os.environ[DEBUG_VARIABLE] = "1"


app = typer.Typer(
    cls=LazyGroup,
    help="Wire a transformer's weights by hand, run it, see every number, and prove it right.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def handwired(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print handwired's version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", callback=_debug, is_eager=True,
                                        help=f"Show the traceback of an internal error (as {DEBUG_VARIABLE}=1 does).")
                     ] = False,
) -> None:
    """Wire a transformer's weights by hand, run it, see every number, and prove it right."""


TOP_PAD = 16 << 20  # bytes glibc's malloc keeps at the top of its heap (see keep_freed_memory)


@functools.cache  # asked once
def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep TOP_PAD bytes at the top of its heap rather than hand each freed array back to the
    system: a walk's step makes and frees arrays of a megabyte or two thousands of times, and every page given back
    faults again when taken (1.3 million faults, a sixth of a 10-second check). Asked when a command that loads
    numpy is loaded; only where malloc is glibc's and MALLOC_TOP_PAD_ is not set (a user's own setting wins).
    True when set here."""
    if "MALLOC_TOP_PAD_" in os.environ or not hasattr(os, "confstr"):
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
    except (ValueError, OSError):  # not glibc
        return False
    import ctypes  # (numpy imports it anyway)

    return bool(ctypes.CDLL(None).mallopt(-2, TOP_PAD))  # -2: M_TOP_PAD


def main() -> None:
    """The entry point: the commands guard themselves (see common.guard); this catches what fails around them."""
    try:
        app()
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except Exception as error:  # outside any command: loading one, or typer itself
        raise SystemExit(internal_error(error).exit_code) from None


__all__ = ["app", "main"]
