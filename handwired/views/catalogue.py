"""The list of puzzles: one line each, with the player's progress, for a person or a program."""

from rich import box
from rich.console import Group, JustifyMethod
from rich.table import Table
from rich.text import Text

from handwired.judge.game.listing import Listed
from handwired.judge.game.progress import Progress
from handwired.judge.game.scores import Score
from handwired.judge.game.statement import Caps
from handwired.weightfile.axes import printable

WIDE = 100  # columns: from here on the list also says what each puzzle asks (puzzles show always does)
COMPACT = 80  # columns: below this the list's headers are short, so that it fits whole (60 columns at least)
SHORT = {"level": "lv", "n_embd": "embd", "heads": "hd", "blocks": "blk", "record": "rec"}


def catalogue_view(catalogue: list[Listed], progress: Progress, width: int = 80) -> Group:
    """Every puzzle on one line: level, name, its caps under labelled columns, par, record, the player's best;
    on a terminal of ``WIDE`` columns or more, also what to build."""
    wide, short = width >= WIDE, width < COMPACT
    table = Table(title="puzzles: each judged on every context", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, show_edge=not short)
    columns: list[tuple[str, JustifyMethod]] = [
        ("level", "right"), ("name", "left"), *([("to build", "left")] if wide else []), ("n_embd", "right"),
        ("heads", "right"), ("blocks", "right"), ("MLP", "right"), ("par", "right"), ("record", "right"),
        ("yours", "right")]
    yours = [_yours(puzzle, progress.best(puzzle.key), progress.solved(puzzle.key)) for puzzle in catalogue]
    kept = {"name": max((len(p.name) for p in catalogue), default=4),
            "yours": max(text.cell_len for text in yours + [Text()])}
    for column, justify in columns:  # on a narrow terminal the headers are shorter; a name or a ★ is never cut
        wraps = column == "to build"
        table.add_column(SHORT.get(column, column) if short else column, justify=justify, no_wrap=not wraps,
                         ratio=1 if wraps else None, min_width=kept.get(column))
    for puzzle, mine in zip(catalogue, yours):
        caps = puzzle.caps
        table.add_row(
            str(puzzle.level), Text(puzzle.name, style="bold"), *([printable(puzzle.summary)] if wide else []),
            str(caps.n_embd), str(caps.n_head), str(caps.n_layer), mlp_cap(caps),
            _parameters(puzzle.par), _parameters(puzzle.record), mine,
        )
    table.caption = (("lv: level · embd, hd, blk: n_embd, heads, blocks" if short else "n_embd, heads, blocks")
                     + ": at most · MLP: allowed, with at most that many hidden units · par, "
                     + ("rec (record)" if short else "record") + ", yours: the non-zero parameters of the reference, "
                     f"of the leanest answer known, of your best · {RECORD_MARK}: your best ties or beats the record"
                     + ("" if wide else " · what each asks: handwired puzzles show NAME"))
    table.caption_justify = "left"
    unsolved = [p.name for p in catalogue if not progress.solved(p.key)]
    solved = f"{len(catalogue) - len(unsolved)} of {len(catalogue)} solved."
    if not unsolved:
        footer = f"{solved} Every puzzle is solved: now beat par and the record (fewer non-zero parameters)."
    else:
        footer = (f"{solved} {'Start with' if len(unsolved) == len(catalogue) else 'Next'}: "
                  f"handwired puzzles show {unsolved[0]}")
    return Group(table, Text(footer, style="dim"))


RECORD_MARK = "★"


def _yours(puzzle: Listed, best: Score | None, solved: bool) -> Text:
    """The player's best in the list: ``✓ 8``, and ``★`` when it ties or beats the statement's record as it is now."""
    if not solved or best is None:
        return Text("·", style="dim")
    mark = f" {RECORD_MARK}" if best.against(puzzle.record) in ("better", "tie") else ""
    return Text(f"✓ {best.parameters}{mark}", style="bold green" if mark else "green")


def catalogue_json(catalogue: list[Listed], progress: Progress) -> dict:
    """Every puzzle with the player's progress, for programs: solved, best score, hints revealed of how many, and
    how the best compares with par and the record (``better``, ``tie``, ``worse``; null without one of them)."""
    return {"puzzles": [{"name": puzzle.name, "level": puzzle.level, "title": puzzle.title,
                         "solved": progress.solved(puzzle.key), "best": score_json(best := progress.best(puzzle.key)),
                         "hints": progress.hints(puzzle.key), "hints_available": puzzle.n_hints,
                         "par": score_json(puzzle.par), "record": score_json(puzzle.record),
                         "best_against_par": against(best, puzzle.par),
                         "best_against_record": against(best, puzzle.record)} for puzzle in catalogue]}


def against(score: Score | None, other: Score | None) -> str | None:
    """How `score` compares with `other` (``better``, ``tie``, ``worse``); None without a score."""
    return None if score is None else score.against(other)


def mlp_cap(caps: Caps) -> str:
    """The MLP cap in a cell: ``no``, ``yes`` or ``≤16`` (hidden units)."""
    return "no" if not caps.mlp else "yes" if caps.hidden is None else f"≤{caps.hidden}"


def _parameters(score: Score | None) -> str:
    return "—" if score is None else str(score.parameters)


def score_json(score: Score | None) -> dict | None:
    """A score as JSON figures; None stays None."""
    return None if score is None else score.to_json()
