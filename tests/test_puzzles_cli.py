"""The puzzles commands through CliRunner, on the test puzzles in tests/data/puzzles, progress in a tmp folder."""

import json
import re

import numpy as np
import pytest
from reference import params_to_document, random_params
from test_cli import invoke, user_error

from handwired.judge.checking.report import Report
from handwired.judge.game import catalogue
from handwired.judge.game import progress as progressing
from handwired.judge.game.catalogue import bundled_puzzles, load_puzzle, puzzles_dir, reference_solution
from handwired.judge.game.puzzle import answer
from handwired.judge.game.scores import nonzero_parameters
from handwired.judge.game.verdict import Submission

pytestmark = pytest.mark.usefixtures("fixture_puzzles")
BUNDLED_DIR = puzzles_dir  # the real lookup, kept before any test replaces it


@pytest.fixture
def solution(fixture_puzzles):
    return str(fixture_puzzles / "solutions" / "aab.json")


@pytest.fixture
def starter(tmp_path):
    path = tmp_path / "mine.json"
    assert invoke("puzzles", "start", "aab", "-o", str(path)).exit_code == 0
    return str(path)


def flat(text):
    """Output without box drawing and line breaks, so wrapped phrases can be found."""
    return " ".join(text.translate({ord(c): " " for c in "│╭╮╰╯─┃━┏┓┗┛┡┩╇┳┻┼╋┣┫└┘┌┐├┤┬┴"}).split())


def progress_file(home):
    return json.loads((home / "progress.json").read_text())


def test_puzzles_alone_lists_every_puzzle_by_level(monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")  # one line per puzzle
    for command in (["puzzles"], ["puzzles", "list"]):
        result = invoke(*command)
        assert result.exit_code == 0
        out = flat(result.stdout)
        assert out.index("first") < out.index("aab")  # level 1 before level 2
        assert "Predict the context's first token." in out and "aab Continue the repeating pattern aab. 8 1 1 no" in out
        assert "first Predict the context's first token. 6 2 2 yes" in out and "0 of 2 solved" in out


def test_the_list_points_at_the_first_unsolved_puzzle(solution):
    assert "0 of 2 solved. Start with: handwired puzzles show first" in flat(invoke("puzzles").stdout)
    assert invoke("puzzles", "check", "aab", solution).exit_code == 0
    assert "1 of 2 solved. Next: handwired puzzles show first" in flat(invoke("puzzles").stdout)


@pytest.mark.parametrize("command", [["puzzles"], ["puzzles", "list", "--json"]])
def test_the_list_loads_nothing_of_a_check(command, handwired_home):
    """The list is its own module: listing the bundled puzzles imports no check, verdict, engine pass or
    check view (nor the other puzzles commands), in a fresh interpreter."""
    import subprocess
    import sys

    program = ("import sys, numpy; eager = 'numpy.ma' in sys.modules\n"  # an older numpy imports it with numpy
               f"sys.argv = ['handwired', *{command!r}]\n"
               "from handwired.cli import main\n"
               "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
               "print(' '.join(sorted(m for m in sys.modules if not (eager and m.startswith('numpy.ma')))), "
               "file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert "induction" in done.stdout and "add" in done.stdout  # the bundled puzzles, listed
    loaded = set(done.stderr.split())
    assert {"handwired.cli.puzzles", "handwired.judge.game.catalogue", "handwired.judge.game.progress",
            "handwired.views.catalogue"} <= loaded  # the probe is real
    for module in ("handwired.cli.puzzle", "handwired.cli.checking", "handwired.judge.checking.report",
                   "handwired.judge.checking.plans", "handwired.judge.game.verdict",
                   "handwired.judge.workbench.variants",
                   "handwired.engine.arithmetic.floats", "handwired.engine.parts", "handwired.engine.trace",
                   "handwired.views.puzzles", "handwired.views.report", "handwired.views.failure",
                   "handwired.views.cost", "rich.progress", "rich.syntax", "pygments",
                   "numpy.ma"):  # np.unique imports it: reading a statement calls none
        assert module not in loaded, module


def test_show_gives_story_rule_examples_caps_and_par():
    out = invoke("puzzles", "show", "aab").stdout
    for text in ("Two and one", "level 2", "A test puzzle: the published model.",
                 "the repeating pattern 'aab', at every phase the context fits", "62 contexts",
                 "not by the stream test", "ambiguous: a or b (not judged)", "out of domain (not judged)",
                 "n_embd ≤ 8, heads ≤ 1, blocks ≤ 1, no MLP",
                 "par: 26 non-zero parameters, n_embd 8, 1 head, 1 block, margin 1023",
                 "hints: 0 of 2 revealed"):
        assert text in flat(out), text
    assert re.search(r"│ aab\s+│ a\s+│", out) and re.search(r"│ aabaa\s+│ b\s+│", out)


def test_start_writes_a_starter_that_fits_and_refuses_to_overwrite(tmp_path, starter):
    doc = json.loads(open(starter).read())
    assert doc["vocab"] == ["a", "b"] and doc["n_ctx"] == 5 and doc["n_embd"] == 8 and doc["target"] == "aab"
    assert "OK" in invoke("weights", "validate", starter).stdout
    with open(starter, "a") as f:
        f.write(" ")
    edited = open(starter).read()
    assert "already exists; use --force" in user_error("puzzles", "start", "aab", "-o", starter)
    assert open(starter).read() == edited
    assert invoke("puzzles", "start", "first", "-o", starter, "--force").exit_code == 0
    first = json.loads(open(starter).read())
    assert first["n_head"] == 2 and len(first["blocks"]) == 2 and "mlp" in first["blocks"][0]


def test_start_and_check_default_to_the_puzzles_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "first.json: no such file" in user_error("puzzles", "check", "first")
    assert invoke("puzzles", "start", "first").exit_code == 0
    assert (tmp_path / "first.json").is_file()
    result = invoke("puzzles", "check", "first")
    assert result.exit_code == 1 and "model first (first.json)" in result.stdout


def test_check_a_starter_fails_with_counts_and_the_attention_view(starter, handwired_home):
    result = invoke("puzzles", "check", "aab", starter)
    assert result.exit_code == 1
    out = result.stdout
    assert "0 / 13 judged" in out and "48  out of domain" in out and "1  ambiguous" in out
    assert "Why the shortest failing context 'b' fails" in out and "hook_pattern" in out
    assert "Not solved yet" in out
    assert not (handwired_home / "progress.json").exists() or not progress_file(handwired_home)["puzzles"]


def test_check_a_solution_scores_it_against_par_and_remembers_it(solution, handwired_home):
    result = invoke("puzzles", "check", "aab", solution)
    assert result.exit_code == 0
    assert "Solved puzzle 'aab'! Ties par." in result.stdout
    saved = progress_file(handwired_home)["puzzles"]["aab"]
    assert saved["solved"] is True and saved["best"]["parameters"] == 26
    listed = invoke("puzzles").stdout
    assert "✓ 26" in listed and "1 of 2 solved" in listed


def test_a_larger_margin_ties_the_best_and_never_replaces_it(solution, aab_doc, write_json, handwired_home):
    invoke("puzzles", "check", "aab", solution)
    aab_doc["constants"]["Lg"] = 2048  # the same parameters and sizes, a margin of 2047 rather than 1023: a tie
    result = invoke("puzzles", "check", "aab", str(write_json(aab_doc)))
    verdict = " ".join(result.stdout.split())
    assert "Solved puzzle 'aab'! Ties par. Ties your best, already recorded." in verdict and "new best" not in verdict
    data = json.loads(invoke("puzzles", "check", "aab", str(write_json(aab_doc)), "--json").stdout)
    assert data["solved"] and not data["new_best"] and data["score"]["margin"] == 2047
    assert data["against_par"] == "tie" and data["best"]["margin"] == 1023
    assert progress_file(handwired_home)["puzzles"]["aab"]["best"]["margin"] == 1023


def test_check_json_has_counts_score_and_par(solution):
    data = json.loads(invoke("puzzles", "check", "aab", solution, "--json").stdout)
    assert data["puzzle"] == "aab" and data["ok"] and data["solved"]
    assert (data["contexts"], data["passed"], data["failed"], data["ambiguous"],
            data["out_of_domain"]) == (62, 13, 0, 1, 48)
    assert data["score"] == data["par"] == {"parameters": 26, "n_embd": 8, "n_head": 1, "n_layer": 1, "margin": 1023.0}


def test_check_puzzle_through_the_ordinary_check_command_gives_the_same_verdict(solution, starter):
    for file, code in ((solution, 0), (starter, 1)):
        one = invoke("puzzles", "check", "aab", file, "--json")
        other = invoke("check", "--puzzle", "aab", "-w", file, "--json")
        assert one.exit_code == other.exit_code == code
        first, second = json.loads(one.stdout), json.loads(other.stdout)
        first.pop("new_best"), second.pop("new_best")
        assert first == second
    # --exhaustive asks for what a puzzle's verdict is anyway: the same verdict, as on a file that names its puzzle
    plain, exhaustive = (json.loads(invoke("check", "--puzzle", "aab", "-w", starter, *flags, "--json").stdout)
                         for flags in ((), ("--exhaustive",)))
    assert plain == exhaustive and plain["puzzle"] == "aab" and plain["failed"] > 0
    assert user_error("check", "--puzzle", "aab", "--exhaustive", "--sample", "5") == (
        "error: --exhaustive and --sample: choose one")
    assert user_error("check", "--puzzle", "aab", "--sample", "5", "--min-length", "2") == (
        "error: --puzzle judges every context by the puzzle's rule, or --sample some of them; --min-length does not "
        "apply")


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda d: d.update(vocab=["b", "a"]), "it expects vocab a, b (in this order), the file has b, a"),
        (lambda d: (d.update(n_ctx=6), d["wpe"].append([0] * 8)), "it expects n_ctx 5, the file has 6"),
    ],
)
def test_caps_violations_are_one_line_and_exit_2(aab_doc, write_json, edit, message):
    edit(aab_doc)
    path = write_json(aab_doc)
    for command in (["puzzles", "check", "aab", str(path)], ["check", "--puzzle", "aab", "-w", str(path)]):
        line = user_error(*command)
        assert line == f"error: {path}: does not fit puzzle 'aab': {message}"


def test_too_wide_too_many_heads_blocks_and_an_mlp(tmp_path):
    rng = np.random.default_rng(3)
    doc = params_to_document(random_params(rng, n_vocab=2, n_ctx=5, n_embd=10, n_layer=2, n_hidden=4), 2, "ab", 5)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    line = user_error("puzzles", "check", "aab", str(path))
    assert ("it expects n_embd at most 8, the file has 10; n_head at most 1, the file has 2; blocks at most 1, "
            "the file has 2; no MLP, the file has one in blocks[0], blocks[1]") in line


def test_a_file_that_is_not_a_weight_file_is_one_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"format": "handwired/1"')
    assert "bad.json: not valid JSON" in user_error("puzzles", "check", "aab", str(path))


@pytest.mark.parametrize("command", [["show"], ["start"], ["check"], ["hint"], ["solution"]])
def test_bad_puzzle_names_list_the_valid_ones(command, solution):
    extra = [solution] if command == ["check"] else []
    line = user_error("puzzles", *command, "abb", *extra)
    assert line == "error: no puzzle named 'abb' (puzzles: first, aab; or give a statement's path, NAME.json)"


def test_bad_name_through_check_puzzle():
    assert "no puzzle named 'nope' (puzzles: first, aab; or give a statement's path, NAME.json)" in user_error(
        "check", "--puzzle", "nope")


def test_hints_one_more_each_time_and_all(handwired_home):
    first = invoke("puzzles", "hint", "first").stdout
    assert "hint 1 of 3: Every query can look at position 0." in first and "hint 2" not in first
    second = invoke("puzzles", "hint", "first").stdout
    # one more each time: only the new hint, not the ones revealed before
    assert "hint 2 of 3: A constant query bias" in second and "hint 1" not in second and "hint 3" not in second
    assert progress_file(handwired_home)["puzzles"]["first"]["hints"] == 2
    every = invoke("puzzles", "hint", "first", "--every-hint").stdout
    assert [line.split(":")[0] for line in every.splitlines()] == ["hint 1 of 3", "hint 2 of 3", "hint 3 of 3"]
    assert "hint 3 of 3: Copy the token" in every
    again = invoke("puzzles", "hint", "first").stdout
    assert "That was the last hint" in again and "hint 1 of 3" not in again and "hint 3 of 3" not in again
    assert "Every hint is revealed already (3 of 3); see them again with handwired puzzles hint first --every-hint" \
        in " ".join(again.split())
    assert "hints: 3 of 3 revealed" in invoke("puzzles", "show", "first").stdout


def test_solution_only_once_solved_or_spoiled(solution):
    line = user_error("puzzles", "solution", "aab")
    assert "puzzle 'aab' is not solved yet" in line and "--spoil" in line
    spoiled = invoke("puzzles", "solution", "aab", "--spoil")
    assert spoiled.exit_code == 0 and json.loads(spoiled.stdout)["constants"] == {"Lg": 1024}
    invoke("puzzles", "check", "aab", solution)
    assert "scratch dim 'out'" in invoke("puzzles", "solution", "aab").stdout


def test_interrupted_check_exits_130_and_records_nothing(solution, monkeypatch, handwired_home):
    from handwired.judge import judging

    def interrupted(puzzle, model, show, progress, should_stop, proof=True, by_cases=None):
        report = Report("every context", "the rule", 62, checked=3, passed=3, interrupted=True)
        return Submission(puzzle, model, (), report, None)

    monkeypatch.setattr(judging, "submit", interrupted)
    result = invoke("puzzles", "check", "aab", solution)
    assert result.exit_code == 130 and "Interrupted: 3 of 62" in result.stdout
    assert not (handwired_home / "progress.json").exists()


# ---------------------------------------------------------------- the progress file


@pytest.mark.parametrize("content", ['{"format": "handwired-progress/1", "puzzles": ', "[1, 2]",
                                     b"\xff\xfe not text"])
def test_a_corrupt_progress_file_is_set_aside_reported_and_replaced(handwired_home, solution, content):
    handwired_home.mkdir()
    path = handwired_home / "progress.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = invoke("puzzles", "check", "aab", solution)
    assert result.exit_code == 0 and "Solved" in result.stdout
    warning = result.stderr.strip().splitlines()
    assert len(warning) == 1 and "unreadable progress" in warning[0] and "set aside as progress.json.bad-" in warning[0]
    aside = list(handwired_home.glob("progress.json.bad-*"))
    assert len(aside) == 1
    assert aside[0].read_bytes() == (content if isinstance(content, bytes) else content.encode())  # kept as it was
    assert progress_file(handwired_home)["puzzles"]["aab"]["solved"] is True  # replaced, and this check recorded
    assert invoke("puzzles").stderr == ""  # and read cleanly from then on


def test_progress_that_cannot_be_saved_is_reported_not_fatal(tmp_path, monkeypatch, solution):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("HANDWIRED_HOME", str(blocker / "home"))
    result = invoke("puzzles", "check", "aab", solution)
    assert result.exit_code == 0 and "Solved" in result.stdout
    lines = result.stderr.strip().splitlines()  # once, naming the file once
    assert len(lines) == 1 and "could not save progress" in lines[0] and lines[0].count(str(blocker)) == 1


def test_progress_home_defaults_to_the_app_dir(monkeypatch):
    import typer

    monkeypatch.delenv("HANDWIRED_HOME")
    assert str(progressing.home()) == typer.get_app_dir("handwired")


def test_a_folder_of_new_puzzles_can_be_played_through_the_environment(monkeypatch, tmp_path, fixture_puzzles):
    import shutil

    monkeypatch.setattr(catalogue, "puzzles_dir", BUNDLED_DIR)  # the real lookup, which reads $HANDWIRED_PUZZLES
    folder = tmp_path / "mine"
    (folder / "solutions").mkdir(parents=True)
    shutil.copy(fixture_puzzles / "first.json", folder)
    shutil.copy(fixture_puzzles / "solutions" / "first.json", folder / "solutions")
    monkeypatch.setenv("HANDWIRED_PUZZLES", str(folder))
    assert catalogue.puzzles_dir() == folder
    assert "no puzzle named 'aab' (puzzles: first; or give a statement's path, NAME.json)" in user_error(
        "puzzles", "show", "aab")
    assert invoke("puzzles", "check", "first", str(folder / "solutions" / "first.json")).exit_code == 0


@pytest.mark.parametrize("name", list(bundled_puzzles()))
def test_every_bundled_puzzle_shows_its_statement_and_par(monkeypatch, name):
    monkeypatch.setattr(catalogue, "puzzles_dir", BUNDLED_DIR)  # the bundled puzzles, not the test ones
    monkeypatch.setenv("COLUMNS", "200")
    puzzle = load_puzzle(name)
    result = invoke("puzzles", "show", name)
    assert result.exit_code == 0
    out = flat(result.stdout)
    assert puzzle.title in out and f"{puzzle.n_contexts:,} contexts" in out
    assert f"par: {nonzero_parameters(reference_solution(puzzle))} non-zero parameters" in out
    for context in puzzle.examples:
        assert f"{context} {answer(puzzle, context).text()}" in out


def test_an_mlp_wider_than_the_hidden_cap_is_refused_saying_what_the_puzzle_allows(tmp_path):
    statement = {"format": "handwired-puzzle/1", "name": "narrow", "level": 1, "title": "Narrow",
                 "summary": "The first token.", "story": "Say the first token.", "vocab": ["a", "b"], "n_ctx": 3,
                 "caps": {"n_embd": 4, "n_head": 1, "n_layer": 1, "mlp": 4}, "rule": {"kind": "first"},
                 "examples": ["ab"], "hints": ["Look back."]}
    (tmp_path / "narrow.json").write_text(json.dumps(statement))
    rng = np.random.default_rng(4)
    for hidden, fits in ((4, True), (6, False)):
        params = random_params(rng, n_vocab=2, n_ctx=3, n_embd=4, n_layer=1, n_hidden=hidden)
        doc = params_to_document(params, 1, "ab", 3)
        path = tmp_path / f"hidden{hidden}.json"
        path.write_text(json.dumps(doc))
        result = invoke("puzzles", "check", str(tmp_path / "narrow.json"), str(path))
        if fits:
            assert result.exit_code in (0, 1), result.output  # judged, whatever the verdict
        else:
            assert result.exit_code == 2 and result.stderr.strip() == (
                f"error: {path}: does not fit puzzle 'narrow': it expects an MLP of at most 4 hidden units, "
                "the file has 6 in blocks[0]")


def test_puzzles_json_gives_every_puzzle_with_solved_best_and_hints(solution, handwired_home):
    assert invoke("puzzles", "check", "aab", solution).exit_code == 0
    assert invoke("puzzles", "hint", "first").exit_code == 0
    for command in (["puzzles", "--json"], ["puzzles", "list", "--json"]):
        result = invoke(*command)
        assert result.exit_code == 0 and result.stderr == ""
        listed = {entry["name"]: entry for entry in json.loads(result.stdout)["puzzles"]}
        assert list(listed) == ["first", "aab"]  # by level, as the list shows them
        assert listed["aab"]["solved"] is True and listed["first"]["solved"] is False
        assert listed["aab"]["best"] == {"parameters": 26, "n_embd": 8, "n_head": 1, "n_layer": 1, "margin": 1023.0}
        assert listed["first"]["best"] is None
        assert (listed["aab"]["hints"], listed["first"]["hints"]) == (0, 1)
        assert listed["aab"]["hints_available"] == len(load_puzzle("aab").hints)
        assert listed["aab"]["par"] == listed["aab"]["best"]  # the fixture's solution scores par
    assert user_error("puzzles", "--json", "show", "aab") == (
        "error: --json before show: it belongs to the list (handwired puzzles --json); "
        "give a command's own options after its name")


def test_show_of_a_solved_puzzle_no_longer_says_start(solution):
    import dataclasses

    from handwired.judge.game.scores import Score
    from handwired.views.puzzles import next_step

    assert "Next: handwired puzzles start aab -o aab.json" in flat(invoke("puzzles", "show", "aab").stdout)
    assert invoke("puzzles", "check", "aab", solution).exit_code == 0
    out = flat(invoke("puzzles", "show", "aab").stdout)
    assert "puzzles start" not in out
    assert "Solved. Next: leaner still, if you can; handwired puzzles check aab aab.json" in out
    puzzle, best = load_puzzle("aab"), Score(26, 8, 1, 1, 1023)
    leaner = dataclasses.replace(puzzle, record=Score(9, 2, 1, 1, 1024))
    assert next_step(leaner, best).startswith("Solved (your best is above). Next, try for the record: an answer leaner")
    tied = dataclasses.replace(puzzle, record=best)
    assert next_step(tied, best).startswith("Solved, and your best ties the record.")
    wider = dataclasses.replace(puzzle, record=Score(26, 9, 1, 1, 1023))
    assert next_step(wider, best).startswith("Solved, and your best beats the record.")
