"""What a player reads: every bundled statement has a real story and real, distinct hints."""

import json
import re

import pytest

from handwired.judge.game.catalogue import bundled_puzzles

MIN_STORY_WORDS = 40
MIN_HINT_WORDS = 8
PLACEHOLDER = re.compile(r"\b(placeholder|todo|tbd|fixme|xxx|lorem|ipsum)\b", re.IGNORECASE)
HINTS = 4


def text_problems(story: str, hints: list[str]) -> list[str]:
    """Everything wrong with a statement's story and hints, in words; [] when a player can read them."""
    problems = []
    words = len(story.split())
    if words < MIN_STORY_WORDS:
        problems.append(f"story: {words} words, expected at least {MIN_STORY_WORDS}")
    for where, text in [("story", story)] + [(f"hint {i}", hint) for i, hint in enumerate(hints, 1)]:
        found = PLACEHOLDER.search(text)
        if found:
            problems.append(f"{where}: placeholder text {found.group(0)!r}")
    for i, hint in enumerate(hints, 1):
        if re.fullmatch(r"\W*\d+(\.\d+)?\W*", hint):
            problems.append(f"hint {i}: only a number, {hint!r}")
        elif len(hint.split()) < MIN_HINT_WORDS:
            problems.append(f"hint {i}: {len(hint.split())} words, expected at least {MIN_HINT_WORDS}")
    normalised = [" ".join(hint.lower().split()) for hint in hints]
    for i, hint in enumerate(normalised, 1):
        if hint in normalised[:i - 1]:
            problems.append(f"hint {i}: the same as hint {normalised.index(hint) + 1}")
    return problems


def test_the_checker_fails_on_the_placeholders_three_puzzles_once_shipped():
    assert text_problems("PLACEHOLDER", ["1", "2", "3", "4"]) == [
        "story: 1 words, expected at least 40", "story: placeholder text 'PLACEHOLDER'",
        "hint 1: only a number, '1'", "hint 2: only a number, '2'", "hint 3: only a number, '3'",
        "hint 4: only a number, '4'"]
    story = " ".join(["word"] * 45)
    assert text_problems(story + " TODO", ["Look at the last token and what it says."] * 2) == [
        "story: placeholder text 'TODO'", "hint 2: the same as hint 1"]
    assert text_problems(story, ["Too short to help.", "Lorem ipsum dolor sit amet, consectetur adipiscing elit."]) == [
        "hint 2: placeholder text 'Lorem'", "hint 1: 4 words, expected at least 8"]
    assert text_problems(story, ["A hint long enough to point somewhere useful, really."]) == []


@pytest.mark.parametrize("name", list(bundled_puzzles()))
def test_every_bundled_statement_has_a_story_and_graded_hints(name):
    doc = json.loads(bundled_puzzles()[name].read_text(encoding="utf-8"))
    assert text_problems(doc["story"], doc["hints"]) == []
    assert len(doc["hints"]) == HINTS, "a bundled puzzle has four graded hints"


def test_successors_second_hint_is_true_the_final_layernorm_alone_turns_each_letter_into_the_next():
    """No attention at all (no block): the last position holds the last letter's embedding, and ln_f's gain and bias
    make its scores against the letters point one step on (numbers found by a small random search)."""
    from handwired.judge.game.catalogue import load_puzzle
    from handwired.judge.game.verdict import submit
    from handwired.weightfile import parse

    doc = {"format": "handwired/1", "vocab": ["a", "b", "c", "d"], "n_ctx": 4, "n_embd": 3, "wpe": {}, "blocks": [],
           "wte": [[-2.29, 3.04, -3.67], [-2.89, -2.49, -0.21], [-0.25, 0.27, -3.99], [3.04, -2.26, 3.63]],
           "ln_f": {"g": [1.09, -2.54, -0.75], "b": [0.33, -2.14, -0.98]}}
    model, problems = parse(doc, "successor-ln.json")
    assert problems == []
    assert "attention" in load_puzzle("successor").hints[1] and "LayerNorm" in load_puzzle("successor").hints[1]
    submission = submit(load_puzzle("successor"), model)
    assert submission.solved and submission.report.passed == 340 and submission.report.margin.value > 1


@pytest.mark.parametrize("name, paper, built", [
    ("dyck", "Weiss, Goldberg and Yahav (2021)", "You will build those two layers"),
    ("modadd", "Nanda and colleagues (2023)", "Here you build that circuit by hand"),
    ("maxk", "Gross and colleagues (2024)", "Build the head and its read-out"),
    ("maxk64", "Gross and colleagues (2024)", "You build the same head"),
    ("ioi", "Wang and colleagues (2022)", "you will build a name mover"),
    ("greater", "Hanna, Liu and Variengien (2023)", "You will build the mover head and the comparing MLP"),
])
def test_the_third_ladders_stories_say_who_found_the_circuit_and_what_you_build(name, paper, built):
    """A circuit found in a trained model: its story names the paper, what the model does and what to build; its
    hints are tested as files in test_ladder.py."""
    from handwired.judge.game.catalogue import load_puzzle

    story = load_puzzle(name).story
    assert paper in story and built in story


def test_the_ten_digit_adders_story_says_whose_task_it_is_and_how_it_is_proved():
    """add10: AdderBoard's task, why its sums cannot be enumerated (with the arithmetic right), and what proof by
    cases does; its hints are tested as files in test_adder.py."""
    from handwired.judge.game.catalogue import load_puzzle

    puzzle = load_puzzle("add10")
    story = " ".join(puzzle.story.split())
    assert "AdderBoard" in story and "10^20" in story and "ten thousand random sums" in story
    assert "three thousand years" in story and 3000 <= 10**20 / 10**9 / (3600 * 24 * 365) < 3500
    assert "proves it by cases" in story and "split" in story and "named" in story
    assert len(puzzle.hints) == 4 and all(len(hint.split()) >= 8 for hint in puzzle.hints)
