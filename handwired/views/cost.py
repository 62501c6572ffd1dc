"""What a view will cost, known before it is made: a view that would take minutes is refused in one line.

A valid sparse model of a few kilobytes can have n_embd 1024 and a 4,096-token
example; explaining it means a forward pass that keeps every intermediate and
tables of millions of numbers. :func:`refuse_slow_explain` estimates that from
the model's shape before the trace exists, :func:`refuse_slow_drawing` from the
steps before they are drawn; ``weights show``, ``attend`` and ``complete`` are
estimated the same way. Each refusal names the estimate and what narrows it. This module counts what a view
makes and draws; :mod:`handwired.engine.cost` prices it.
"""

import numpy as np

from handwired import budget
from handwired.engine.cost import (
    attend_seconds,
    complete_seconds,
    diff_cost,
    drawing_seconds,
    examples_seconds,
    explain_seconds,
    panels_seconds,
    predict_seconds,
)
from handwired.engine.memory import gigabytes
from handwired.errors import HandwiredError
from handwired.judge.checking.contexts import duration
from handwired.judge.game.puzzle import Puzzle
from handwired.views.figures import Step
from handwired.weightfile import Model, locate

MAX_VIEW_SECONDS = budget.CHECK_SECONDS  # a view estimated to take longer is refused, unless the budget allows more
SQUARE_STEPS = ("scores", "mask", "pattern")  # a query × key table per head: never folded
HEAD_STEPS, BLOCK_STEPS = ("qkv", "scores", "mask", "pattern", "z"), ("ln1", "heads", "concat", "proj", "mlp")
NARROWING = ("step", "block", "head")


def _allowed() -> float:
    """The seconds a view may take: the budget's (MAX_VIEW_SECONDS unless the user allows more)."""
    return budget.seconds(MAX_VIEW_SECONDS)


def explain_work(length: int, wanted: list[str] | tuple[str, ...], blocks: int, heads: int) -> tuple[int, int]:
    """(numbers drawn, panels) of explaining ``length`` tokens: the query × key tables of ``blocks`` blocks ×
    ``heads`` heads (the other tables fold their zero rows and columns; counted later), and each step's panel."""
    squares = sum(step in wanted for step in SQUARE_STEPS) * blocks * heads * length * length
    panels = len(wanted) + blocks * (heads * sum(step in wanted for step in HEAD_STEPS)
                                     + sum(step in wanted for step in BLOCK_STEPS))
    return squares, panels


def refuse_slow_explain(model: Model, length: int, wanted: list[str] | tuple[str, ...], block: int | None,
                        head: int | None) -> None:
    """Refuse, before the trace, to explain ``length`` tokens when it would take more than MAX_VIEW_SECONDS."""
    blocks = 1 if block is not None else model.n_layer
    heads = 1 if head is not None else model.n_head
    seconds = explain_seconds(model, length, *explain_work(length, wanted, blocks, heads))
    if seconds > _allowed():
        raise _slow(f"{length:,} tokens at n_embd {model.n_embd}", seconds, "explain")


POSITION_CELLS = 7  # a row of predict's every-position table: pos, token, sees, predicts, p, lead, next


def refuse_slow_predict(model: Model, length: int, every_position: bool) -> None:
    """Refuse, before the trace, to predict after ``length`` tokens when it would take more than MAX_VIEW_SECONDS."""
    seconds = predict_seconds(model, length, length * POSITION_CELLS if every_position else 0)
    if seconds > _allowed():
        raise _slow(f"{length:,} tokens at n_embd {model.n_embd}", seconds, "predict", narrowable=False)


def refuse_slow_complete(model: Model, length: int, n: int) -> None:
    """Refuse, before generating, ``n`` tokens after ``length`` when it would take more than MAX_VIEW_SECONDS."""
    seconds = complete_seconds(model, length, n)
    if seconds > _allowed():
        raise HandwiredError(f"{{n}} {n:,}: about {duration(seconds)} of generating for this model, more than the "
                             f"{duration(_allowed())} handwired will spend on it; ask for fewer tokens"
                             f"{budget.more_time(seconds)}", ("n", *budget.TIME))


Table = tuple[np.ndarray, bool]  # a [rows, cols] table's values, and whether its rows and columns of zeros fold


def drawn_cells(steps: list[Step] | tuple[Step, ...], show_all: bool) -> int:
    """How many numbers drawing the steps prints: zero rows and columns fold away unless ``show_all``."""
    return drawing(_step_tables(steps), show_all)[0]


def steps_drawing(steps: list[Step] | tuple[Step, ...], show_all: bool) -> tuple[int, float]:
    """(numbers drawn, seconds to make and draw the steps' panels and tables)."""
    cells, seconds = drawing(_step_tables(steps), show_all)
    return cells, seconds + panels_seconds(len(steps))


def over_view(seconds: float) -> bool:
    """Whether drawing that long is more than a view may take."""
    return seconds > _allowed()


def refuse_slow_drawing(steps: list[Step] | tuple[Step, ...], show_all: bool) -> None:
    """Refuse, before drawing, steps whose panels and tables would take more than MAX_VIEW_SECONDS to draw."""
    cells, seconds = steps_drawing(steps, show_all)
    if seconds > _allowed():
        raise _slow(f"{len(steps):,} steps and {cells:,} numbers to draw", seconds, "explain")


def refuse_slow_weights(model: Model, show_all: bool) -> None:
    """Refuse, before the tables are made, a model's weights that would take more than MAX_VIEW_SECONDS to show."""
    tables = [(np.atleast_2d(locate(model.params, path)), True) for path in model.written.entries]  # [rows, cols]
    cells, seconds = drawing(tables, show_all, written=True)
    if seconds > _allowed():
        fold = "without {show_all} the rows and columns of zeros fold away, or " if show_all else ""
        raise HandwiredError(f"{cells:,} numbers to draw: about {duration(seconds)}, more than the "
                             f"{duration(_allowed())} handwired spends on a view; {fold}{{as_sparse}} prints "
                             f"only the non-zero entries{budget.more_time(seconds)}",
                             ("show_all", "as_sparse", *budget.TIME))


def drawing(tables: list[Table], show_all: bool, written: bool = False) -> tuple[int, float]:
    """(numbers drawn, seconds to format every number and draw those); ``written``: each number's text as the file
    wrote it is made too, drawn or folded away."""
    cells = sum(_drawn(values, show_all or not folds) for values, folds in tables)
    formatted = sum(values.size for values, _ in tables)  # folded ones too
    return cells, drawing_seconds(cells, formatted, written)


def _step_tables(steps: list[Step] | tuple[Step, ...]) -> list[Table]:
    """The steps' matrices as tables: an attention table, which marks the future, never folds."""
    return [(matrix.values, matrix.future is None) for step in steps for matrix in step.matrices]


def _drawn(values: np.ndarray, show_all: bool) -> int:
    """Numbers a [rows, cols] table draws: all, or those left once its rows and columns of zeros fold."""
    if show_all or values.ndim != 2:
        return int(values.size)
    nonzero = values != 0
    return int(np.count_nonzero(nonzero.any(axis=1))) * int(np.count_nonzero(nonzero.any(axis=0)))


def _slow(what: str, seconds: float, verb: str, narrowable: bool = True) -> HandwiredError:
    """``what`` would take ``seconds`` to ``verb``; a view of some steps, blocks and heads says how to narrow it."""
    narrow = "narrow it with {step}, {block} or {head}, or " if narrowable else ""
    return HandwiredError(
        f"{what}: about {duration(seconds)} to {verb}, more than the {duration(_allowed())} handwired spends "
        f"on a view; {narrow}give a shorter context{budget.more_time(seconds)}",
        (*(NARROWING if narrowable else ()), *budget.TIME))


def refuse_slow_attend(n_q: int, n_k: int, d_k: int, d_v: int, score: str, drawn: bool) -> None:
    """Refuse, before computing it, one attention step whose arithmetic or answer would take minutes."""
    terms = n_q * n_k * d_k
    seconds = attend_seconds(n_q, n_k, d_k, d_v, score == "gaussian", drawn)
    what = f"{n_q:,} queries × {n_k:,} keys (width {d_k:,})"
    if score == "gaussian" and terms > MAX_GAUSSIAN_TERMS:
        raise HandwiredError(f"{what}: {terms * 8 / 2**30:.1f} GB of differences for the gaussian score, more than "
                             f"the {MAX_GAUSSIAN_TERMS * 8 / 2**20:,.0f} MB handwired will use; give fewer rows")
    if seconds > _allowed():
        raise HandwiredError(f"{what}: about {duration(seconds)} to compute and show, more than the "
                             f"{duration(_allowed())} handwired spends on a view; give fewer rows"
                             f"{budget.more_time(seconds)}", budget.TIME)


MAX_GAUSSIAN_TERMS = 50_000_000  # the [n_q, n_k, d] array of (q − k)²: 381 MB of float64


DIFF_COLUMNS = 4  # a changed weight's row: its label, old, new, new − old


def refuse_slow_diff(changes: int, as_json: bool) -> None:
    """Refuse, before the weights are compared, a diff listing up to ``changes`` changed weights that would take
    more than MAX_VIEW_SECONDS to draw or write, or more than the budget's memory to hold as JSON."""
    what = f"up to {changes:,} changed weights"
    size, seconds = diff_cost(changes, as_json, DIFF_COLUMNS)
    if as_json:
        if size > budget.memory():
            raise HandwiredError(f"{what} as JSON: about {gigabytes(size)}, more than the "
                                 f"{gigabytes(budget.memory())} handwired will use; diff compares two versions of one "
                                 f"model, a few edits apart{budget.more_memory(size)}", budget.SPACE)
    if seconds > _allowed():
        instead = "" if as_json else "{as_json} writes them without drawing, or "
        raise HandwiredError(f"{what} to {'write' if as_json else 'draw'}: about {duration(seconds)}, more than the "
                             f"{duration(_allowed())} handwired spends on a view; {instead}compare two versions "
                             f"of one model, a few edits apart{budget.more_time(seconds)}", ("as_json", *budget.TIME))


def refuse_slow_examples(puzzle: Puzzle) -> None:
    """Refuse, before any is answered, a statement's examples whose answers would take more than MAX_VIEW_SECONDS:
    each is followed down the domain's trie token by token (never enumerated), then judged by the rule."""
    steps = sum(len(example) for example in puzzle.examples) if puzzle.domain is not None else 0
    seconds = examples_seconds(len(puzzle.examples), steps)
    if seconds > _allowed():
        raise HandwiredError(f"{puzzle.source}: {len(puzzle.examples):,} examples, each followed down the domain "
                             f"token by token: about {duration(seconds)}, more than the {duration(_allowed())} "
                             "handwired spends on a view; a statement with fewer or shorter examples narrows it"
                             f"{budget.more_time(seconds)}", budget.TIME)
