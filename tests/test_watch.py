"""watch's pure parts: loading a snapshot, judging it, marking changed cells, the screen, cropping."""

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from rich.console import Console, Group
from rich.text import Text
from waiting import DEADLINE

from handwired.views import steps as explaining
from handwired.views import watch as watching
from handwired.views.matrices import CHANGED


def write(path, doc):
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def text_of(renderable, width=100, height=None) -> str:
    console = Console(file=io.StringIO(), width=width, height=height, no_color=True, highlight=False)
    console.print(renderable)
    return console.file.getvalue()


def test_snapshot_of_a_good_file_has_steps_and_the_exhaustive_verdict(tmp_path, aab_doc):
    snapshot = watching.load_snapshot(write(tmp_path / "m.json", aab_doc))
    assert snapshot.ok and snapshot.trace.window == "aabaa"
    # the explain view: every step a one-head model without LayerNorm or MLP has
    assert [step.key for step in snapshot.steps] == [s for s in explaining.STEPS
                                                     if s not in ("ln1", "mlp", *explaining.BLOCK_STEPS)]
    verdict = snapshot.verdict
    assert verdict.how == "check, every context" and verdict.report.ok
    assert verdict.report.checked == 62 and verdict.report.failed == 0


@pytest.mark.parametrize("damage, expected", [
    (lambda text: text[: len(text) // 2], "not valid JSON"),
    (lambda text: "", "not valid JSON"),
    (lambda text: text.replace('"Lg", 0, 0', '"Lh", 0, 0', 1).replace('"n_ctx": 5', '"n_ctx": 0'), "n_ctx"),
])
def test_a_damaged_file_gives_errors_not_exceptions(tmp_path, aab_doc, damage, expected):
    path = tmp_path / "m.json"
    path.write_text(damage(json.dumps(aab_doc)), encoding="utf-8")
    snapshot = watching.load_snapshot(path)
    assert not snapshot.ok and any(expected in problem for problem in snapshot.errors)


def test_every_validation_problem_is_listed(tmp_path, aab_doc):
    aab_doc["wpe"][0][0] = "Lh"
    aab_doc["blocks"][0]["attn"]["c_proj"]["b"] = [0] * 7
    snapshot = watching.load_snapshot(write(tmp_path / "m.json", aab_doc))
    assert len(snapshot.errors) == 2
    assert "unknown constant 'Lh'" in snapshot.errors[0] and "c_proj.b" in snapshot.errors[1]


def test_missing_file_and_bad_context_are_errors(tmp_path, aab_doc):
    assert "cannot read" in watching.load_snapshot(tmp_path / "gone.json").errors[0]
    path = write(tmp_path / "m.json", aab_doc)
    assert "not in the vocabulary" in watching.load_snapshot(path, text="abc").errors[0]
    assert "head 3: the model has one head, 0" in watching.load_snapshot(path, head=3).errors[0]
    flagged = watching.load_snapshot(path, head=3, spell=lambda name: "--" + name).errors[0]
    assert flagged.startswith("--head 3: the model has one head, 0")  # as the command spells it
    assert "position 7: the context has positions 0…4" in watching.load_snapshot(path, position=7).errors[0]
    assert watching.load_snapshot(path, wanted=["why"], position=2).steps[0].title.endswith("position 2")
    del aab_doc["example"]
    assert 'no "example"' in watching.load_snapshot(write(path, aab_doc)).errors[0]


def test_no_proof_skips_the_bounds_of_a_targets_check_as_of_a_puzzles(tmp_path, aab_doc):
    model = watching.load_snapshot(write(tmp_path / "m.json", aab_doc)).model
    proved, unproved = watching.judge()(model).report, watching.judge(proof=False)(model).report
    assert (proved.checked, proved.passed, proved.proved) == (62, 13, 13)  # 13 contexts of 62 the pattern decides
    assert (unproved.checked, unproved.passed, unproved.proved) == (62, 13, 0)


def test_verdict_without_target_and_for_large_models(tmp_path, aab_doc):
    path = write(tmp_path / "m.json", aab_doc)
    stream = watching.judge(limit=10)(watching.load_snapshot(path).model)
    # the published test
    assert stream.how.startswith("check, the stream test (every context would be 62") and stream.report.checked == 27
    del aab_doc["target"]
    verdict = watching.load_snapshot(write(path, aab_doc)).verdict
    assert verdict.report is None and "no \"target\"" in verdict.reason


def test_changed_cells_are_exactly_the_values_an_edit_moves(tmp_path, aab_doc):
    path = tmp_path / "m.json"
    before = watching.load_snapshot(write(path, aab_doc))
    aab_doc["blocks"][0]["attn"]["c_proj"]["b"][5] = 1000  # the bias into dim 'a'
    after = watching.load_snapshot(write(path, aab_doc))
    marks = watching.changed_cells(before, after)
    titles = {matrix for _, matrix in marks}
    # Worked out by hand: the bias adds to dim 'a' of attn_out and of the residual after it, at every
    # position, and so to the logit of 'a' (wte[a] reads only dim a). Nothing upstream moves, and
    # p(a) = exp(-1023) or less underflows to exactly 0 either way, so the probabilities do not move.
    # In why, only the bias's share of logit a moves, and so the total.
    why = "each part's share of each logit"
    assert titles == {"attn_out", "x + attn_out", "logits", why}
    a = list(after.model.dims).index("a")
    for (_, title), mask in marks.items():
        expected = np.zeros(mask.shape, dtype=bool)
        if title == why:
            expected[-2:, 0] = True  # rows: wte, wpe, head 0, the bias c_proj.b, the total
        else:
            expected[:, a if title != "logits" else 0] = True
        assert (mask == expected).all(), title
    assert watching.changed_cells(None, after) == {}
    assert watching.changed_cells(after, after) == {}


def test_state_keeps_the_last_good_version_through_errors(tmp_path, aab_doc):
    path = tmp_path / "m.json"
    first = watching.load_snapshot(write(path, aab_doc))
    state = watching.State().advance(first)
    path.write_text("{", encoding="utf-8")
    state = state.advance(watching.load_snapshot(path))
    assert state.good is first and state.failed is not None
    aab_doc["wte"][0][5] = 2
    fixed = watching.load_snapshot(write(path, aab_doc))
    state = state.advance(fixed)
    # the marks compare with the last version that loaded, not with the broken one
    assert state.failed is None and state.good is fixed and state.before is first
    assert [c.label for c in watching.edited_weights(state.before, state.good)] == ["wte.a.a"]


def test_screen_shows_verdict_edits_marks_and_errors(tmp_path, aab_doc):
    path = tmp_path / "m.json"
    state = watching.State().advance(watching.load_snapshot(write(path, aab_doc), wanted=["proj"]))
    first = text_of(watching.screen(state, "header line"))
    assert "header line" in first and "PASS check, every context: 13 passed, 0 failed, 49 not judged of 62" in first
    assert CHANGED not in first
    aab_doc["blocks"][0]["attn"]["c_proj"]["b"][5] = 1000
    state = state.advance(watching.load_snapshot(write(path, aab_doc), wanted=["proj"]))
    second = text_of(watching.screen(state))
    assert "edited since the previous version: blocks[0].attn.c_proj.b.a 1024 → 1000" in second
    assert f"{CHANGED}1000" in second and f"{CHANGED}-24" in second
    assert f"{CHANGED} marks a value that changed from the previous version (10 values)" in second
    aab_doc["blocks"][0]["attn"]["c_proj"]["b"][5] = 0  # ties: 'aa' now fails
    state = state.advance(watching.load_snapshot(write(path, aab_doc), wanted=["proj"]))
    third = text_of(watching.screen(state), width=200)
    assert "FAIL check, every context" in third and "(previous version: 13 passed, 0 failed)" in third
    assert "shortest failures: 'ab' → b (expected a)" in third
    path.write_text('{"format": ', encoding="utf-8")
    state = state.advance(watching.load_snapshot(path, wanted=["proj"]))
    broken = text_of(watching.screen(state))
    assert "does not load" in broken and "not valid JSON" in broken and "Showing the last version that loaded" in broken
    assert "FAIL check, every context" in broken  # the last good version stays below the error


def test_cropped_fits_the_height_and_names_what_is_below(tmp_path, aab_doc):
    state = watching.State().advance(watching.load_snapshot(write(tmp_path / "m.json", aab_doc)))
    full = text_of(watching.screen(state)).splitlines()
    cropped = text_of(watching.Cropped(watching.screen(state)), height=20).splitlines()
    assert len(cropped) == 20 and cropped[:19] == full[:19]
    # 19 lines hold the verdict, the model and context lines and most of the embed panel
    # (the panels below, as many as fit before the hint)
    assert cropped[19] == ("… below: [embed] [qkv] [scores] [mask] [pattern] … · narrow the view with --step, "
                           "--block or --head")
    wide = text_of(watching.Cropped(watching.screen(state)), width=160, height=20).splitlines()
    every_step = " ".join(f"[{step.key}]" for step in state.good.steps)
    assert wide[19] == f"… below: {every_step} · narrow the view with --step, --block or --head"
    assert watching.Cropped(watching.screen(state)).parts[-1].title.plain.startswith("[why]")
    tall = text_of(watching.Cropped(watching.screen(state)), height=len(full)).splitlines()
    assert tall == full  # everything fits: nothing cut, no note
    short = text_of(watching.Cropped(Group(Text("one line"))), height=20).splitlines()
    assert short == ["one line"]


def test_fingerprint_tells_saves_apart(tmp_path):
    path = tmp_path / "m.json"
    assert watching.fingerprint(path) is None
    path.write_text("{}")
    first = watching.fingerprint(path)
    path.write_text("{ }")
    assert watching.fingerprint(path) != first


def test_watch_refuses_a_missing_file_and_a_stdout_that_is_not_a_terminal(tmp_path, aab_doc):
    result = subprocess.run([sys.executable, "-m", "handwired", "watch", str(tmp_path / "none.json")],
                            capture_output=True, text=True, timeout=DEADLINE)
    assert result.returncode == 2 and "none.json: no such file" in result.stderr
    path = tmp_path / "my.json"
    path.write_text(json.dumps(aab_doc), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "handwired", "watch", str(path)], capture_output=True, text=True,
                            timeout=DEADLINE,
                            env={k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")})
    assert result.returncode == 2 and "stdout is not a terminal" in result.stderr and "Traceback" not in result.stderr


def test_a_value_that_changed_to_zero_is_marked_not_folded_away():
    from handwired.views.figures import Matrix
    from handwired.views.matrices import matrix_table

    values = np.array([[0.0, 2.0], [0.0, 0.0]])  # column x and row 1 are all zero: folded without marks
    matrix = Matrix("m", "", values, ("r0", "r1"), ("x", "y"), "row", "column")
    assert "hidden" in text_of(matrix_table(matrix))
    changed = np.array([[False, False], [True, False]])  # r1's x was not 0 in the previous version
    marked = text_of(matrix_table(matrix, changed=changed))
    assert "hidden" not in marked and f"{CHANGED}0" in marked and "changed since the previous version (1)" in marked


def test_a_puzzle_judges_instead_of_the_target(tmp_path, aab_doc):
    from handwired.judge.game.catalogue import load_puzzle, solution_path
    from handwired.judge.game.puzzle import starter as puzzle_starter

    previous = load_puzzle("previous")
    judge = watching.judge(previous)
    solved = watching.load_snapshot(solution_path("previous"), judge=judge)
    assert solved.verdict.how == "puzzle previous" and solved.verdict.report.ok
    assert solved.verdict.report.checked == sum(3**n for n in range(1, previous.n_ctx + 1))  # every context
    assert "PASS puzzle previous" in text_of(watching.screen(watching.State().advance(solved)))
    starter = write(tmp_path / "starter.json", puzzle_starter(previous))
    failing = watching.load_snapshot(starter, judge=judge).verdict.report
    assert not failing.ok and failing.failed > 0
    misfit = watching.load_snapshot(write(tmp_path / "aab.json", aab_doc), judge=judge).verdict
    assert misfit.report is None and "does not fit the puzzle: it expects vocab a, b, c" in misfit.reason


def test_watch_refuses_an_unknown_puzzle(tmp_path, aab_doc):
    from test_cli import user_error

    path = write(tmp_path / "m.json", aab_doc)
    assert "nope" in user_error("watch", str(path), "--puzzle", "nope")
