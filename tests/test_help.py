"""Every command's --help reads as prose: no paragraph breaks a sentence before the line is full."""

import pytest
import typer
from test_cli import invoke

from handwired.cli import COMMANDS, app

SENTENCE_END = ".:;!?)"


def command_paths() -> list[list[str]]:
    """Every command and sub-command, as the words that name it."""
    root = typer.main.get_command(app)
    context = typer.Context(root)
    paths = [[]]
    for name in COMMANDS:
        paths.append([name])
        command = root.get_command(context, name)
        paths += [[name, sub] for sub in getattr(command, "commands", {})]
    return paths


def early_breaks(text: str) -> list[str]:
    """Lines of a rendered help that end mid-sentence although the next line's first word would have fit.

    Inside a panel (``│ … │``) a line continues the row above when its first columns are empty; outside, when it
    follows a non-blank line of the same paragraph. Typer's own ``[default: …]`` and ``[required]`` lines are not
    part of the sentence above them."""
    found = []
    lines = text.splitlines()
    for above, line in zip(lines, lines[1:]):
        boxed = line.startswith("│") and above.startswith("│")
        inner_above, inner = (above[1:-1], line[1:-1]) if boxed else (above, line)
        words = inner.split()
        if not words or not inner_above.strip() or words[0].startswith("[") or above.lstrip().startswith("Usage:"):
            continue
        start = len(inner) - len(inner.lstrip())
        if boxed and (start <= 4 or words[0].startswith("-")):
            continue  # a new row (a name, a flag, a required mark), not a continuation
        if not boxed and (line.startswith(("╭", "╰", "│")) or above.startswith(("╭", "╰", "│"))):
            continue
        end = len(inner_above.rstrip())
        room = len(inner) - 1  # rich keeps one column of padding on the right
        if inner_above.rstrip()[-1] not in SENTENCE_END and end + 1 + len(words[0]) <= room:
            found.append(f"{above.rstrip()}⏎{line.rstrip()}")
    return found


def test_the_finder_sees_a_sentence_broken_mid_way():
    broken = ("│ check     Score the model; exit code                                    │\n"
              "│           0 only if nothing fails.                                      │\n")
    assert early_breaks(broken) == [broken.splitlines()[0] + "⏎" + broken.splitlines()[1].rstrip()]
    full = ("│ check     Score the model on its target pattern, or on its puzzle's rule │\n"
            "│           when it names one.                                           │\n")
    assert early_breaks(full) == []


@pytest.mark.parametrize("columns", [80, 120])
def test_no_help_paragraph_breaks_mid_sentence(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    problems = {}
    for path in command_paths():
        result = invoke(*path, "--help")
        assert result.exit_code == 0, path
        assert max(len(line) for line in result.stdout.splitlines()) <= columns
        if early_breaks(result.stdout):
            problems[" ".join(path) or "handwired"] = early_breaks(result.stdout)
    assert problems == {}
