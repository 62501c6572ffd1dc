"""Records: the leanest answer the project knows for each puzzle, kept here (not in the wheel) and proven here.

Each bundled statement states its record's figures; the file in tests/data/records/ is the answer itself.
The proof: it fits the puzzle, it solves it (every judged context), its score is what the statement says,
and it is at least as lean as par and as every answer a player is known to have found.
"""

from pathlib import Path

import pytest
from stress import FULL
from walkable import slow_to_prove

from handwired.judge.checking import cases
from handwired.judge.game.catalogue import bundled_puzzles, load_puzzle
from handwired.judge.game.verdict import fit_problems, submit
from handwired.weightfile import load

RECORDS = Path(__file__).resolve().parent / "data" / "records"
# Answers players found: (non-zero parameters, n_embd), and (…, blocks, heads) where the player's file was kept
# whole. A record must be at least as lean by the score's order, on every key known.
FOUND_BY_PLAYERS = {"ab": (3, 2, 0, 0), "aab": (11, 2), "first": (11, 3), "previous": (22, 4), "max": (11, 2),
                    "majority": (4, 1), "xor": (17, 2), "induction": (36, 6),
                    "successor": (7, 3, 0, 0), "copy": (21, 4, 2, 1), "reverse": (19, 4, 2, 1), "add": (31, 2),
                    "modadd": (20, 2)}


def assert_as_lean_as_players_found(name: str) -> None:
    puzzle = load_puzzle(name)
    found = FOUND_BY_PLAYERS[name]  # in the score's order: parameters, n_embd, blocks, heads
    assert puzzle.record.key()[:len(found)] <= found, f"a player found {found}; the record is {puzzle.record}"


def by_cases_in_part(puzzle) -> bool:
    """A puzzle proved by cases whose whole proof is CI's (stress.FULL): the default run proves its first cases."""
    return not FULL and slow_to_prove(puzzle)


def prove_first_cases(puzzle, model, max_cases: int = 1500) -> None:
    """The first ``max_cases`` cases of a proof by cases: none fails, some are proved, the rest left (not proved)."""
    space = cases.space_of(puzzle.domain, model.n_vocab, model.n_ctx)
    proof = cases.prove(model, puzzle.rule, space, puzzle.name, cases.size(space), max_cases=max_cases)
    assert proof.report.failed == 0 and proof.proved_cases > 0 and proof.left > 0 and not proof.proved


@pytest.mark.parametrize("name", list(bundled_puzzles()))
def test_every_puzzle_has_a_record_that_solves_it_as_stated(name):
    puzzle = load_puzzle(name)
    path = RECORDS / f"{name}.json"
    assert path.is_file(), f"{name} has no record"
    assert puzzle.record is not None, f"{name}'s statement states no record"
    if by_cases_in_part(puzzle):
        assert not fit_problems(puzzle, load(str(path))) and puzzle.record.key() <= puzzle.par.key()
        prove_first_cases(puzzle, load(str(path)))
        return
    submission = submit(puzzle, load(str(path)))
    assert submission.fits, submission.misfit
    assert submission.solved, submission.report.shortest_failure
    assert submission.score == puzzle.record, "the statement's record is not the record's score"
    assert puzzle.record.key() <= puzzle.par.key(), "par is leaner than the record"
    if name in FOUND_BY_PLAYERS:
        assert_as_lean_as_players_found(name)


def test_records_are_not_shipped():
    shipped = Path(load_puzzle("ab").source).parent
    assert not (shipped / "records").exists() and not (shipped / "solutions" / "records").exists()


def test_a_model_with_no_blocks_has_no_heads(handwired_home):
    # ab's record has no block and declares n_head 1 (the default): it runs no head, so it shows and scores none
    from test_cli import invoke

    from handwired.judge.game.scores import read_score
    from handwired.weightfile.checker import Checker

    path = str(RECORDS / "ab.json")
    assert load(path).n_head == 1
    assert submit(load_puzzle("ab"), load(path)).score.n_head == 0
    out = " ".join(invoke("check", path).stdout.split())
    assert "n_embd 2 no blocks" in out and "head" not in out.split("no blocks")[0].split("n_embd 2")[1]
    old = read_score(Checker(), {"parameters": 3, "n_embd": 2, "n_head": 1, "n_layer": 0,
                                                "margin": 2047.959041}, "ab")  # as progress files kept it
    assert old is not None and old.n_head == 0 and old.ties(load_puzzle("ab").record)
