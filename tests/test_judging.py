"""The one decision of how a file is judged (handwired.judge.judging), and the one verdict it produces: every face
(check, puzzles check, watch, spread, sweep, ablate, diff, predict, Python's check and submit) asks it, so one table
covers them all."""

import json

import pytest

from handwired.errors import HandwiredError
from handwired.judge.game.catalogue import load_puzzle
from handwired.judge.judging import (
    ANSWER,
    NOTHING,
    SAMPLE,
    TARGET,
    Choice,
    chosen_puzzle,
    decide,
    judged_contexts,
    verdict,
)
from handwired.judge.kinds.rules import PatternRule
from handwired.weightfile import bundled_folder, load

AAB = bundled_folder("puzzles") / "solutions" / "aab.json"  # vocab a, b; n_ctx 5; target aab; solves puzzle aab


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


@pytest.fixture
def write(tmp_path, monkeypatch):
    """write(puzzle=…, target=…) -> the aab solution with that puzzle key and target (None: without it), loaded."""
    monkeypatch.chdir(tmp_path)

    def written(puzzle: str | None = None, target: str | None = "aab", name: str = "m.json"):
        doc = json.loads(AAB.read_text())
        doc.pop("target", None)
        doc.update({key: value for key, value in (("puzzle", puzzle), ("target", target)) if value is not None})
        (tmp_path / name).write_text(json.dumps(doc))
        return load(name)

    return written


@pytest.mark.parametrize("puzzle, target, choice, kind", [
    (None, "aab", Choice(), TARGET),  # a target alone: its stream test
    ("aab", "aab", Choice(), ANSWER),  # a puzzle named: it judges, even beside a target
    ("aab", None, Choice(exhaustive=True), ANSWER),  # a puzzle's verdict is every context already
    ("aab", "aab", Choice(exhaustive=True), TARGET),  # a file with a target of its own: the flag checks it
    ("aab", None, Choice(sample=5), SAMPLE),  # a sample of the puzzle's contexts
    ("aab", "aab", Choice(target="ab"), TARGET),
    ("aab", "aab", Choice(answers=False), TARGET),  # Python's check: a target's check always
    ("aab", None, Choice(answers=False), NOTHING),
    ("aab", None, Choice(quick=10), ANSWER),  # watch: the puzzle
    (None, None, Choice(quick=10), NOTHING),  # watch: nothing to check, said on the screen
    (None, "aab", Choice(puzzle="xor"), ANSWER),
    (None, "aab", Choice(puzzle="xor", sample=4), SAMPLE),
])
def test_one_decision_for_every_choice(write, puzzle, target, choice, kind):
    judging = decide(write(puzzle, target), choice)
    assert judging.kind == kind
    assert (judging.puzzle is not None) == (kind in (ANSWER, SAMPLE))
    assert (judging.plan is not None) == (kind in (SAMPLE, TARGET))
    assert judging.names == puzzle
    if kind == SAMPLE:
        assert judging.plan.sampled and judging.plan.total == choice.sample
    if kind == TARGET and choice.target is None and choice.exhaustive is False:  # the stream test
        assert judging.plan.description.startswith("every prefix of length 2…28 of aabaabaabaab… (29 tokens)")


def test_a_target_checked_instead_of_the_files_puzzle_says_so_as_each_face_spells_it(write):
    model = write("aab", "aab")
    note, = decide(model, Choice(exhaustive=True)).notes
    assert note.render(flag) == ("m.json names the puzzle 'aab'; checked on the target 'aab' instead, as --exhaustive "
                                 "asks (with no flag, it is judged as the puzzle's answer)")
    note, = decide(model, Choice(target="ab", sample=3)).notes  # --target is the one that asks, whatever else
    assert note.render(flag).startswith("m.json names the puzzle 'aab'; checked on the target 'ab' instead, "
                                        "as --target asks")
    note, = decide(model, Choice(answers=False)).notes
    assert note.render(lambda name: "handwired.puzzle('aab').submit(model)") == (
        "m.json names the puzzle 'aab'; checked on the target 'aab' instead (as the puzzle's answer: "
        "handwired.puzzle('aab').submit(model))")
    assert decide(write(None, "aab"), Choice(exhaustive=True)).notes == ()  # a file that names none: nothing to say


def test_a_puzzle_asked_for_wins_with_a_note_for_a_file_that_names_another(write):
    model = write("aab", "aab")
    for choice in (Choice(puzzle="xor"), Choice(puzzle="xor", sample=4), Choice(puzzle=load_puzzle("xor"))):
        judging = decide(model, choice)
        assert judging.puzzle.name == "xor"
        assert [str(note) for note in judging.notes] == ["m.json names the puzzle 'aab'; judged by 'xor', as asked"]
    assert decide(model, Choice(puzzle="aab")).notes == ()  # the one it names: nothing to say
    puzzle, notes = chosen_puzzle((model, write(None, "aab", "n.json")), "xor")
    assert puzzle.name == "xor" and [str(note) for note in notes] == [
        "m.json names the puzzle 'aab'; judged by 'xor', as asked"]
    puzzle, notes = chosen_puzzle((write(None, "aab", "n.json"), model))  # the files' own: the last that names one
    assert puzzle.name == "aab" and notes == ()


def test_a_choice_a_puzzle_refuses_is_refused_as_it_is_made():
    with pytest.raises(HandwiredError) as error:  # before any file or puzzle is read
        Choice(puzzle="xor", min_length=2)
    assert error.value.render(flag) == ("--puzzle judges every context by the puzzle's rule, or --sample some of "
                                        "them; --min-length does not apply")
    with pytest.raises(HandwiredError, match="exhaustive and sample: choose one"):
        Choice(puzzle="xor", exhaustive=True, sample=3)


@pytest.mark.parametrize("puzzle, target, choice, message", [
    ("aab", None, Choice(min_length=3), "m.json: names the puzzle 'aab', judged on every context of its domain by "
                                        "its rule; --min-length does not apply (a target check needs --target)"),
    ("aab", None, Choice(sample=3, exhaustive=True), "m.json: names the puzzle 'aab', judged on every context of its "
                                                     "domain by its rule; --sample does not apply"),
    (None, None, Choice(), "m.json: has no 'target'; give one as --target, e.g. --target aa"),
])
def test_a_choice_that_cannot_be_judged_is_one_error_naming_parameters(write, puzzle, target, choice, message):
    with pytest.raises(HandwiredError) as error:
        decide(write(puzzle, target), choice)
    assert error.value.render(flag).startswith(message)


def test_a_rule_judges_instead_of_a_target(write):
    model = write("aab", None)
    rule = PatternRule(model.encode("ab"), model.n_vocab, "ab")
    judging = decide(model, Choice(rule=rule, answers=False))
    assert judging.kind == TARGET and judging.notes == () and judging.plan.total == 62
    with pytest.raises(HandwiredError, match="rule judges instead of a target: target and length do not apply"):
        decide(model, Choice(rule=rule, target="ab"))
    with pytest.raises(HandwiredError, match="exhaustive and sample: choose one"):
        Choice(rule=rule, exhaustive=True, sample=3)


def test_the_verdict_carries_the_report_the_submission_or_why_nothing_ran(write):
    solved = verdict(write("aab", "aab"), decide(write("aab", "aab"), Choice()))
    assert solved.how == "puzzle aab" and solved.solved and solved.fits and solved.score is not None
    assert solved.report.ok and solved.report.failed == 0 and solved.answers and solved.reason == ""
    checked = verdict(write(None, "aab"), decide(write(None, "aab"), Choice(quick=10)))
    assert checked.how.startswith("check, the stream test") and not checked.answers and checked.submission is None
    assert checked.report.checked == 27 and not checked.solved and checked.score is None
    previous = decide(write(None, "aab"), Choice(puzzle="previous"))  # vocab a, b, c, n_ctx 6: it does not fit
    misfit = verdict(write(None, "aab"), previous)
    assert misfit.report is None and not misfit.fits and misfit.misfit[0].startswith("vocab a, b, c")
    assert misfit.reason.startswith("the file does not fit the puzzle: it expects vocab a, b, c")
    nothing = verdict(write(None, None), decide(write(None, None), Choice(quick=10)))
    assert nothing.report is None and nothing.reason == 'the file has no "target": nothing to check'
    assert repr(nothing) == '<Verdict by check: the file has no "target": nothing to check>'


def test_what_a_spread_a_sweep_and_an_ablation_read(write):
    assert judged_contexts(write("aab", "aab")).puzzle.name == "aab"
    assert judged_contexts(write(None, "ab")).target == "ab"
    assert judged_contexts(write("aab", "aab"), every=True).kind == NOTHING
    assert judged_contexts(write(None, None)).kind == NOTHING
    with pytest.raises(HandwiredError) as error:
        judged_contexts(write(None, None), required=True)
    assert error.value.render(flag) == (  # the file is the reference solution of aab, named after it
        "m.json: has no 'target' and names no puzzle; judge it by one with --puzzle aab")
    with pytest.raises(HandwiredError, match="puzzle and every: choose one"):
        judged_contexts(write(None, None), "aab", every=True)
