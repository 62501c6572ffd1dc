"""Files that know their puzzle: start writes it; check, diff, predict and watch judge by it; flags still override."""

import itertools
import json
import re

import numpy as np
import pytest
from reference import reference_forward
from test_cli import invoke, user_error

from handwired.judge.game.catalogue import load_puzzle, solution_path
from handwired.views import watch as watching
from handwired.weightfile import load


def words(text):
    return " ".join(text.split())


@pytest.fixture
def max_starter(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("puzzles", "start", "max", "-o", "m.json").exit_code == 0
    return tmp_path / "m.json"


def test_start_writes_the_puzzle_and_check_judges_by_it_with_no_flag(max_starter):
    assert json.loads(max_starter.read_text())["puzzle"] == "max"
    result = invoke("check", "-w", "m.json")
    assert result.exit_code == 1
    out = words(result.stdout)
    # every string of length 1…6 over a, b, c, d: 4 + 16 + … + 4096; all zeros ties every one, so each fails
    total = sum(4**n for n in range(1, 7))
    assert out.startswith("puzzle max — Highest letter (level 3)")
    assert f"checked: every context of length 1…6 over a, b, c, d ({total:,} contexts)" in out
    assert f"{total:,} contexts checked 0 passed {total:,} failed" in out
    assert "Not solved yet: 0 non-zero parameters so far (par 16" in out
    data = json.loads(invoke("check", "m.json", "--json").stdout)
    assert (data["puzzle"], data["passed"], data["failed"], data["solved"]) == ("max", 0, total, False)


def test_a_flag_still_overrides_the_files_puzzle(max_starter):
    out = words(invoke("check", "-w", "m.json", "--target", "ab").stdout)
    assert out.startswith("model max (m.json)") and "every prefix of length 2…18 of abababababab…" in out
    assert user_error("check", "-w", "m.json", "--puzzle", "ab") == (  # another puzzle: it does not fit
        "error: m.json: does not fit puzzle 'ab': it expects vocab a, b, the file has a, b, c, d; n_ctx 4, the file "
        "has 6")
    # a flag given as 0 is given: refused as that flag, not silently dropped for the file's puzzle
    assert user_error("check", "-w", "m.json", "--target", "ab", "--length", "0") == (
        "error: --length 0: expected at least 2 tokens")
    assert user_error("check", "-w", "m.json", "--length", "0") == user_error("check", "-w", "m.json", "--length", "9")


def test_exhaustive_on_a_file_that_names_its_puzzle_gives_the_puzzles_verdict(max_starter):
    plain, exhaustive = (json.loads(invoke("check", *flags, "m.json", "--json").stdout)
                         for flags in ((), ("--exhaustive",)))
    assert exhaustive == plain and exhaustive["puzzle"] == "max"
    assert exhaustive["failed"] == sum(4**n for n in range(1, 7))
    assert words(invoke("check", "--exhaustive", "m.json").stdout).startswith("puzzle max — Highest letter")
    sampled = invoke("check", "--sample", "5", "m.json", "--json")  # a sample of the puzzle's contexts
    assert sampled.exit_code == 1
    assert json.loads(sampled.stdout)["checked"] == "5 random contexts of length 1…6 (seed 0)"
    line = user_error("check", "--sample", "5", "--exhaustive", "m.json")
    assert line == ("error: m.json: names the puzzle 'max', judged on every context of its domain by its rule; "
                    "--sample does not apply (a target check needs --target)")
    assert user_error("check", "--exhaustive", "--min-length", "3", "m.json").endswith(
        "its rule; --min-length does not apply (a target check needs --target)")
    doc = json.loads(max_starter.read_text())
    doc["target"] = "abcd"  # a file with a target of its own: the flags check it, as before
    max_starter.write_text(json.dumps(doc))
    assert words(invoke("check", "--exhaustive", "m.json").stdout).startswith("model max (m.json)")


def test_a_file_that_names_a_puzzle_and_is_checked_on_a_target_says_so(max_starter):
    """Both a puzzle and a target: with no flag the puzzle judges it, silently; a flag that asks for the target check
    (--target, or --exhaustive on a file with a target of its own) gets it, with a warning saying which judges."""
    result = invoke("check", "-w", "m.json", "--target", "ab", "--json")
    assert json.loads(result.stdout)["rule"] == "the token that follows it in the stream"
    assert words(result.stderr) == ("warning: m.json names the puzzle 'max'; checked on the target 'ab' instead, as "
                                    "--target asks (with no flag, it is judged as the puzzle's answer)")
    doc = json.loads(max_starter.read_text())
    doc["target"] = "abcd"
    max_starter.write_text(json.dumps(doc))
    plain = invoke("check", "m.json", "--json")
    assert json.loads(plain.stdout)["puzzle"] == "max" and plain.stderr == ""
    result = invoke("check", "--exhaustive", "m.json", "--json")
    assert "puzzle" not in json.loads(result.stdout) and "'abcd'" in json.loads(result.stdout)["rule"]
    assert words(result.stderr) == ("warning: m.json names the puzzle 'max'; checked on the target 'abcd' instead, "
                                    "as --exhaustive asks (with no flag, it is judged as the puzzle's answer)")


def test_a_puzzle_asked_for_wins_over_the_files_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    invoke("puzzles", "start", "aab", "-o", "a.json")  # vocab ab, n_ctx 5: it fits xor too
    warning = "warning: a.json names the puzzle 'aab'; judged by 'xor', as asked"
    for args in (("puzzles", "check", "xor", "a.json"), ("check", "--puzzle", "xor", "a.json")):
        result = invoke(*args)
        assert result.exit_code == 1 and words(result.stdout).startswith("puzzle xor — Same or different (level 4)")
        assert words(result.stderr) == warning
    result = invoke("check", "--puzzle", "xor", "--sample", "5", "a.json")  # a sample of its contexts says so too
    assert result.exit_code == 1 and words(result.stderr) == warning
    screen = watching.judge(load_puzzle("xor"))(load("a.json"))  # and watch, under the verdict
    assert [str(note) for note in screen.notes] == [warning.removeprefix("warning: ")]
    assert warning.removeprefix("warning: ") in words(watching.verdict_view(screen).renderables[1].plain)
    result = invoke("predict", "-w", "a.json", "--puzzle", "xor", "ab")
    assert result.exit_code == 0 and words(result.stderr) == warning
    result = invoke("diff", "a.json", "a.json", "--puzzle", "xor")
    assert result.exit_code == 0 and words(result.stderr) == f"{warning} {warning}"
    for args in (("puzzles", "check", "aab", "a.json"), ("check", "--puzzle", "aab", "a.json"),
                 ("predict", "-w", "a.json", "--puzzle", "aab", "ab")):  # the puzzle it names: nothing to say
        assert invoke(*args).stderr == ""


def test_a_solved_file_that_names_its_puzzle_is_recorded(tmp_path):
    doc = json.loads(solution_path("max").read_text())
    doc["puzzle"] = "max"
    (tmp_path / "sol.json").write_text(json.dumps(doc))
    result = invoke("check", str(tmp_path / "sol.json"))
    assert result.exit_code == 0 and "Solved puzzle 'max'!" in words(result.stdout)
    assert "✓ 16" in invoke("puzzles").stdout


@pytest.mark.parametrize("value, message", [
    (3, "puzzle: expected a string; found the number 3"),
    (" ", "puzzle: expected a puzzle's name, e.g. \"max\", or a statement's path; found ' '"),
    ("nope", "puzzle: no puzzle named 'nope' (puzzles: ab, abc, aaab, aab, first, successor, majority, max, "
             "previous, sort, xor, induction, copy, histogram, parity, reverse, add, dyck, greater, ioi, maxk, "
             "modadd, maxk64, add10; a statement you wrote is named by its file name and hash, beside the weight "
             "file, as handwired puzzles start writes it)"),
    ("gone.json#0123456789ab", "puzzle: the statement gone.json is not there any more (the file names "
                               "'gone.json#0123456789ab'); give the puzzle with --puzzle"),
])
def test_a_bad_puzzle_key_is_one_line(max_starter, value, message):
    doc = json.loads(max_starter.read_text())
    doc["puzzle"] = value
    max_starter.write_text(json.dumps(doc))
    assert user_error("check", "m.json") == f"error: m.json: {message}"


def test_weights_validate_looks_for_the_puzzle_too(max_starter):
    assert invoke("weights", "validate", "m.json").exit_code == 0
    doc = json.loads(max_starter.read_text())
    doc["puzzle"] = "gone.json#0123456789ab"
    max_starter.write_text(json.dumps(doc))
    result = invoke("weights", "validate", "m.json")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "m.json: puzzle: the statement gone.json is not there any more (the file names 'gone.json#0123456789ab'); "
        "give the puzzle with handwired check --puzzle", "1 problem"]
    assert "--puzzle" not in invoke("weights", "validate", "--help").stdout  # so it must not suggest it bare


def test_a_written_statement_is_named_by_its_file_name_and_hash_beside_the_answer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    invoke("puzzles", "new", "-o", "mine.json")
    assert invoke("puzzles", "start", "mine.json", "-o", "ans.json").exit_code == 0
    key = load_puzzle("mine.json").key
    assert key.startswith("mine#")
    assert json.loads((tmp_path / "ans.json").read_text())["puzzle"] == "mine.json#" + key[5:]
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # found from the answer's folder, wherever the command runs
    result = invoke("check", "../ans.json")
    assert result.exit_code == 1 and words(result.stdout).startswith("puzzle mine — Mirror (level 1)")
    assert result.stderr == ""
    assert invoke("puzzles", "check", "../mine.json", "../ans.json").stderr == ""  # the statement it names, by path
    statement = tmp_path / "mine.json"
    statement.write_text(statement.read_text() + "\n")
    result = invoke("check", "../ans.json")
    now = load_puzzle(str(statement)).key[5:]
    assert result.exit_code == 1 and words(result.stderr) == (
        f"warning: ../ans.json was started on ../mine.json as it was (#{key[5:]}); it has changed since (#{now}): "
        "judged as it is now")


def test_an_answer_in_another_folder_names_no_statement(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    invoke("puzzles", "new", "-o", "mine.json")
    (tmp_path / "sub").mkdir()
    result = invoke("puzzles", "start", "mine.json", "-o", "sub/ans.json")
    assert result.exit_code == 0 and "the statement is not beside it, so it names no puzzle" in words(result.stdout)
    assert "puzzle" not in json.loads((tmp_path / "sub" / "ans.json").read_text())
    assert invoke("puzzles", "check", "mine.json", "sub/ans.json").exit_code == 1  # judged when asked


@pytest.mark.parametrize("key", ["../mine.json#0123456789ab", "/etc/passwd#0123456789ab", "sub/../mine.json#01",
                                 "..#0123456789ab", "x" * 300 + ".json#0123456789ab"])
def test_a_puzzle_key_never_leads_out_of_the_files_folder(tmp_path, monkeypatch, key):
    monkeypatch.chdir(tmp_path)
    invoke("puzzles", "new", "-o", "mine.json")
    (tmp_path / "sub").mkdir()
    invoke("puzzles", "start", "mine.json", "-o", "sub/ans.json")
    doc = json.loads((tmp_path / "sub" / "ans.json").read_text())
    doc["puzzle"] = key
    (tmp_path / "sub" / "ans.json").write_text(json.dumps(doc))
    for command in (("check", "sub/ans.json"), ("predict", "ab", "-w", "sub/ans.json")):
        line = user_error(*command)
        assert line.startswith("error: sub/ans.json: puzzle: ") and "is not a statement beside the file" in line
        assert line.endswith("in its own folder, as NAME.json#HASH (or give the puzzle with --puzzle)")


def test_a_puzzle_key_naming_a_file_that_is_no_statement_never_quotes_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    invoke("puzzles", "start", "max", "-o", "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    for secret in ('"ghp_SECRET_TOKEN_1234"', '{"ghp_SECRET_TOKEN_1234": 1}', '["ghp_SECRET_TOKEN_1234"]',
                   '{"format": "ghp_SECRET_TOKEN_1234"}', '{"format": "handwired-puzzle/1", "ghp_SECRET": 1}'):
        (tmp_path / "secret.json").write_text(secret)
        doc["puzzle"] = "secret.json#0123456789ab"
        (tmp_path / "m.json").write_text(json.dumps(doc))
        line = user_error("check", "m.json")
        assert "SECRET" not in line and line == (
            "error: m.json: puzzle: secret.json is not a puzzle statement handwired can read (handwired puzzles show "
            "secret.json says why); give the puzzle with --puzzle")
    (tmp_path / "secret.json").write_text('"ghp_SECRET_TOKEN_1234"')
    assert user_error("puzzles", "show", "secret.json") == (
        "error: secret.json: expected a puzzle statement, an object with \"format\": 'handwired-puzzle/1'; "
        "found a string")


def test_a_statement_key_is_kept_by_a_copy_beside_the_statement_and_dropped_elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    invoke("puzzles", "new", "-o", "mine.json")
    (tmp_path / "out").mkdir()
    invoke("puzzles", "start", "mine.json", "-o", "ans.json")
    digest = load_puzzle("mine.json").key.rpartition("#")[2]
    assert invoke("weights", "convert", "ans.json", "--to", "dense", "-o", "dense.json").exit_code == 0
    assert json.loads((tmp_path / "dense.json").read_text())["puzzle"] == f"mine.json#{digest}"
    result = invoke("check", "dense.json")
    assert result.exit_code == 1 and words(result.stdout).startswith("puzzle mine — Mirror (level 1)")
    assert invoke("weights", "convert", "ans.json", "--to", "dense", "-o", "out/dense.json").exit_code == 0
    assert "puzzle" not in json.loads((tmp_path / "out" / "dense.json").read_text())


def test_an_exported_folder_names_no_statement_outside_it(tmp_path, monkeypatch):
    pytest.importorskip("safetensors")
    monkeypatch.chdir(tmp_path)
    invoke("puzzles", "new", "-o", "mine.json")
    invoke("puzzles", "start", "mine.json", "-o", "ans.json")
    assert invoke("export", "ans.json", "-o", "tl").exit_code == 0
    assert json.loads((tmp_path / "tl" / "handwired.json").read_text())["puzzle"] is None
    assert invoke("import", "tl", "-o", "back.json").exit_code == 0
    assert "puzzle" not in json.loads((tmp_path / "back.json").read_text())


# ---------------------------------------------------------------- diff


def last_token_answer(tmp_path):
    """An answer to 'first' that repeats the last token: right exactly where the last token is the first."""
    doc = {"format": "handwired/1", "name": "last", "puzzle": "first", "vocab": ["a", "b", "c"], "n_ctx": 6,
           "n_embd": 3, "dims": ["a", "b", "c"], "wte": {"a": {"a": 1}, "b": {"b": 1}, "c": {"c": 1}}, "wpe": {},
           "blocks": [{"attn": {"c_attn": {"w": {}}, "c_proj": {"w": {}}}}]}
    path = tmp_path / "last.json"
    path.write_text(json.dumps(doc))
    return str(path)


def reference_margin(model, context):
    logits = reference_forward(model.params, [model.vocab.index(t) for t in context], model.n_head)[0][-1]
    ordered = sorted(logits)
    return ordered[-1] - ordered[-2]


def test_diff_of_a_broken_and_a_fixed_answer_counts_fixed_broken_and_margin_only(tmp_path):
    broken = last_token_answer(tmp_path)
    fixed = str(solution_path("first"))  # names no puzzle: the old file's puzzle judges
    old, new = load(broken), load(fixed)
    contexts = ["".join(c) for n in range(1, 7) for c in itertools.product("abc", repeat=n)]
    repaired = [c for c in contexts if c[-1] != c[0]]  # the last-token answer's failures; the reference has none
    kept = [c for c in contexts if c[-1] == c[0]]
    moved = sum(not np.isclose(reference_margin(old, c), reference_margin(new, c), rtol=1e-9) for c in kept)
    result = invoke("diff", broken, fixed)
    assert result.exit_code == 0
    assert words(result.stdout).endswith(
        f" weights differ; {len(repaired) + moved:,} of {len(contexts):,} judged contexts changed: "
        f"{len(repaired)} fixed, 0 broken, {moved} margin only")
    assert "judged by puzzle first" in words(result.stdout)
    data = json.loads(invoke("diff", fixed, broken, "--puzzle", "first", "--json").stdout)
    assert (data["puzzle"], data["now_right"], data["now_wrong"], data["margin_only"]) == (
        "first", 0, len(repaired), moved)
    assert [change["context"] for change in data["shown"]][:4] == ["a", "b", "c", "aa"]  # shortest first
    ab = next(change for change in data["shown"] if change["context"] == "ab")
    assert (ab["expected"], ab["old"]["right"], ab["new"]) == (
        ["a"], True, {"prediction": "b", "tied": False, "margin": 1, "right": False, "lead": -1})


def test_diff_sample_compares_without_the_puzzle_and_refuses_both(tmp_path):
    broken = last_token_answer(tmp_path)
    out = words(invoke("diff", broken, str(solution_path("first")), "--sample", "50").stdout)
    assert "50 random contexts" in out and "fixed" not in out
    assert user_error("diff", broken, broken, "--puzzle", "first", "--sample", "5") == (
        "error: --puzzle compares every context the puzzle judges; --sample does not apply")
    assert user_error("diff", broken, broken, "--puzzle", "max") == (
        f"error: {broken}: does not fit puzzle 'max': it expects vocab a, b, c, d, the file has a, b, c")


# ---------------------------------------------------------------- predict


def test_predict_shows_the_rules_answer_beside_the_models(tmp_path):
    broken = last_token_answer(tmp_path)
    result = invoke("predict", "abcb", "-w", broken)
    assert result.exit_code == 0
    assert "│ abcb    │ a             │ b ✗            │" in result.stdout
    out = invoke("predict", "abca", "-w", broken, "--every-position").stdout
    rule_table = out[out.index("puzzle first"):].splitlines()
    assert ["a a a ✓", "ab a b ✗", "abc a c ✗", "abca a a ✓"] == [
        words(line.replace("│", " ")) for line in rule_table if re.match(r"│ a", line)]
    data = json.loads(invoke("predict", "ba", "-w", broken, "--json").stdout)["puzzle"]
    assert data == {"name": "first", "answers": [{"position": 1, "context": "ba", "rule": "b", "tokens": ["b"],
                                                  "status": "decided", "prediction": "a", "tied": False,
                                                  "right": False}]}
    assert "puzzle" not in json.loads(invoke("predict", "ab", "--json").stdout)  # the bundled aab names none


def test_predict_puzzle_outside_the_domain_is_not_judged(tmp_path):
    invoke("puzzles", "start", "add", "-o", str(tmp_path / "a.json"))
    out = invoke("predict", "12+3", "-w", str(tmp_path / "a.json")).stdout
    assert "│ 12+3    │ out of domain (not judged) │ 0 (tie)        │" in out
    assert "│ ab      │ a             │ a ✓            │" in invoke("predict", "ab", "--puzzle", "first", "-w",
                                                                  str(solution_path("first"))).stdout


# ---------------------------------------------------------------- watch


def test_watch_draws_the_shortest_failure_then_the_example_once_solved(tmp_path):
    doc = json.loads(solution_path("first").read_text())
    doc["puzzle"] = "first"
    doc["example"] = "abcabc"
    right = tmp_path / "right.json"
    right.write_text(json.dumps(doc))
    snapshot = watching.load_snapshot(right)  # the file's puzzle judges it: solved, so its example is drawn
    assert snapshot.verdict.how == "puzzle first" and snapshot.verdict.report.ok
    assert (snapshot.trace.window, snapshot.drawn) == ("abcabc", "the file's example: every context passes")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(json.loads(open(last_token_answer(tmp_path)).read()) | {"example": "abcabc"}))
    snapshot = watching.load_snapshot(wrong)
    assert (snapshot.trace.window, snapshot.drawn) == ("ab", "the shortest failing context")
    assert watching.load_snapshot(wrong, text="cc").trace.window == "cc"  # a context asked for is drawn
    screen = words(" ".join(str(part) for part in watching.screen(watching.State(snapshot)).renderables))
    assert "context ab (2 tokens) the shortest failing context" in screen
    fixed = watching.State(snapshot).advance(watching.load_snapshot(right))  # saved right: the example is drawn
    screen = words(" ".join(str(part) for part in watching.screen(fixed).renderables))
    assert "context abcabc (6 tokens) the file's example: every context passes" in screen
    assert "another context than the previous version's (ab): no value is compared" in screen


@pytest.mark.parametrize("kind", ["a symbolic link", "a folder", "a FIFO (named pipe)"])
def test_a_puzzle_key_naming_anything_but_a_regular_file_is_refused_by_what_it_is(tmp_path, monkeypatch, kind):
    import os

    monkeypatch.chdir(tmp_path)
    invoke("puzzles", "new", "-o", "mine.json")
    invoke("puzzles", "start", "mine.json", "-o", "ans.json")
    key = json.loads((tmp_path / "ans.json").read_text())["puzzle"]
    (tmp_path / "mine.json").rename(tmp_path / "real.json")  # the statement, now behind what the key names
    if kind == "a symbolic link":
        os.symlink("real.json", tmp_path / "mine.json")  # a link is never followed, even to a statement
    elif kind == "a folder":
        (tmp_path / "mine.json").mkdir()
    else:
        os.mkfifo(tmp_path / "mine.json")  # never opened: it would block
    assert user_error("check", "ans.json") == (
        f"error: ans.json: puzzle: mine.json is {kind}, not a statement file (the file names {key!r}; a weight file "
        "names only a regular file beside it); give the puzzle with --puzzle")
