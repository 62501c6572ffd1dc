"""What `puzzles check` loads, in a fresh interpreter: a small puzzle's check is mostly start-up, so it imports
only what it runs and draws (its cost is measured by benchmarks/bench_puzzles.py, never here)."""

import subprocess
import sys

import pytest

from handwired.judge.game.catalogue import solution_path

NOT_FOR_A_QUICK_CHECK = ("rich.syntax", "pygments", "rich.progress", "concurrent.futures")
NOT_FOR_A_PASSING_CHECK = ("handwired.views.failure", "handwired.engine.attribution", "handwired.views.steps")


def loaded_by(*args: str) -> tuple[subprocess.CompletedProcess, int, set[str]]:
    """Run handwired with ``args`` in a fresh interpreter: what it printed, its exit code, the modules it loaded."""
    program = (f"import sys\nsys.argv = ['handwired', *{list(args)!r}]\n"
               "from handwired.cli import main\n"
               "try:\n    main()\nexcept SystemExit as done:\n    print(done.code or 0, file=sys.stderr)\n"
               "print(' '.join(sorted(sys.modules)), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    code, modules = done.stderr.splitlines()[-2:]
    return done, int(code), set(modules.split())


def absent(module: str, loaded: set[str]) -> bool:
    return not [name for name in loaded if name == module or name.startswith(module + ".")]


@pytest.mark.parametrize("solved", [True, False])
def test_a_quick_check_loads_only_what_it_runs_and_draws(solved, tmp_path):
    """No syntax highlighter (only the solution shows JSON), no progress bar (drawn only after a second on a
    terminal), no thread pool (the walk makes none); a check that passes loads none of the views that follow a
    failure through the model either."""
    weights = str(solution_path("max")) if solved else str(tmp_path / "max.json")
    if not solved:
        assert loaded_by("puzzles", "start", "max", "-o", weights)[1] == 0
    done, code, loaded = loaded_by("puzzles", "check", "max", weights)
    assert code == (0 if solved else 1)
    assert ("Solved puzzle 'max'" in done.stdout) is solved
    assert ("Why the shortest failing context" in done.stdout) is not solved
    assert {"handwired.cli.checking", "handwired.judge.game.verdict", "handwired.views.report", "rich.table",
            "numpy"} <= loaded  # the probe is real
    assert absent("handwired.views.failure", loaded) is solved  # and it sees a failure followed when there is one
    for module in (*NOT_FOR_A_QUICK_CHECK, *(NOT_FOR_A_PASSING_CHECK if solved else ())):
        assert absent(module, loaded), module


def test_the_solution_still_loads_its_highlighter():
    """The probe on the command that does show JSON: `puzzles solution` (its own module) loads rich.syntax."""
    done, code, loaded = loaded_by("puzzles", "solution", "max", "--spoil")
    assert code == 0 and '"name": "max"' in done.stdout
    assert {"handwired.cli.solution", "rich.syntax"} <= loaded
