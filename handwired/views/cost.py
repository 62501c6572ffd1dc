"""What a view will cost, known before it is made: a view that would take minutes is refused in one line.

A valid sparse model of a few kilobytes can have n_embd 1024 and a 4,096-token
example; explaining it means a forward pass that keeps every intermediate and
tables of millions of numbers. :func:`refuse_slow_explain` estimates that from
the model's shape before the trace exists, :func:`refuse_slow_drawing` from the
steps before they are drawn; ``weights show``, ``attend`` and ``complete`` are
estimated the same way. Each refusal names the estimate and what narrows it.
"""

import numpy as np

from handwired import budget
from handwired.engine.memory import gigabytes
from handwired.errors import HandwiredError
from handwired.judge.checking.contexts import SECONDS_PER_MULTIPLY_ADD, SECONDS_PER_PASS, duration, forward_seconds
from handwired.judge.game.puzzle import Puzzle
from handwired.views.figures import Step
from handwired.weightfile import Model, locate

SECONDS_PER_CELL = 75e-6  # drawing one number of a table in the terminal (rich), on a 2-core machine
SECONDS_PER_FORMATTED = 0.5e-6  # formatting one number, drawn or folded away
SECONDS_PER_WRITTEN = 0.5e-6  # a weight's text as written ("2*Lg"), made for every entry
MAX_VIEW_SECONDS = budget.CHECK_SECONDS  # a view estimated to take longer is refused, unless the budget allows more
SQUARE_STEPS = ("scores", "mask", "pattern")  # a query × key table per head: never folded
SECONDS_PER_PANEL = 1e-3  # a step made and drawn as a panel (its header, formula and note), beside its numbers
HEAD_STEPS, BLOCK_STEPS = ("qkv", "scores", "mask", "pattern", "z"), ("ln1", "heads", "concat", "proj", "mlp")
NARROWING = ("step", "block", "head")


def _allowed() -> float:
    """The seconds a view may take: the budget's (MAX_VIEW_SECONDS unless the user allows more)."""
    return budget.seconds(MAX_VIEW_SECONDS)


def explain_seconds(model: Model, length: int, wanted: list[str] | tuple[str, ...], blocks: int, heads: int) -> float:
    """The forward pass keeping every position's intermediates, and drawing the query × key tables of
    ``blocks`` blocks × ``heads`` heads (the other tables fold their zero rows and columns; counted later)."""
    squares = sum(step in wanted for step in SQUARE_STEPS) * blocks * heads * length * length
    panels = len(wanted) + blocks * (heads * sum(step in wanted for step in HEAD_STEPS)
                                     + sum(step in wanted for step in BLOCK_STEPS))
    return forward_seconds(model, 1, length, last_only=False) + squares * SECONDS_PER_CELL + panels * SECONDS_PER_PANEL


def refuse_slow_explain(model: Model, length: int, wanted: list[str] | tuple[str, ...], block: int | None,
                        head: int | None) -> None:
    """Refuse, before the trace, to explain ``length`` tokens when it would take more than MAX_VIEW_SECONDS."""
    blocks = 1 if block is not None else model.n_layer
    heads = 1 if head is not None else model.n_head
    seconds = explain_seconds(model, length, wanted, blocks, heads)
    if seconds > _allowed():
        raise _slow(f"{length:,} tokens at n_embd {model.n_embd}", seconds, "explain")


POSITION_CELLS = 7  # a row of predict's every-position table: pos, token, sees, predicts, p, lead, next


def predict_seconds(model: Model, length: int, every_position: bool) -> float:
    """The recorded forward pass over ``length`` tokens, and with ``every_position`` a table row for each."""
    rows = length * POSITION_CELLS * SECONDS_PER_CELL if every_position else 0.0
    return forward_seconds(model, 1, length, last_only=False) + rows


def refuse_slow_predict(model: Model, length: int, every_position: bool) -> None:
    """Refuse, before the trace, to predict after ``length`` tokens when it would take more than MAX_VIEW_SECONDS."""
    seconds = predict_seconds(model, length, every_position)
    if seconds > _allowed():
        raise _slow(f"{length:,} tokens at n_embd {model.n_embd}", seconds, "predict", narrowable=False)


def complete_seconds(model: Model, length: int, n: int) -> float:
    """Generating ``n`` tokens one at a time after ``length``, each a pass over the longest context seen on the way."""
    window = min(length + n, model.n_ctx)
    return n * (SECONDS_PER_PASS + forward_seconds(model, 1, window))


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
    return cells, seconds + len(steps) * SECONDS_PER_PANEL


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
    cells, seconds = drawing(tables, show_all, SECONDS_PER_WRITTEN)
    if seconds > _allowed():
        fold = "without {show_all} the rows and columns of zeros fold away, or " if show_all else ""
        raise HandwiredError(f"{cells:,} numbers to draw: about {duration(seconds)}, more than the "
                             f"{duration(_allowed())} handwired spends on a view; {fold}{{as_sparse}} prints "
                             f"only the non-zero entries{budget.more_time(seconds)}",
                             ("show_all", "as_sparse", *budget.TIME))


def drawing(tables: list[Table], show_all: bool, seconds_per_number: float = 0.0) -> tuple[int, float]:
    """(numbers drawn, seconds to format every number and draw those); ``seconds_per_number`` is further work
    made for every number, drawn or folded away (a weight's text as written)."""
    cells = sum(_drawn(values, show_all or not folds) for values, folds in tables)
    formatted = sum(values.size for values, _ in tables)  # folded ones too
    return cells, cells * SECONDS_PER_CELL + formatted * (SECONDS_PER_FORMATTED + seconds_per_number)


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


SECONDS_PER_JSON_NUMBER = 3e-6  # writing one number of attend's --json answer
SECONDS_PER_GAUSSIAN_TERM = 5e-9  # one (q − k)² term: made as an [n_q, n_k, d] array, then summed


def refuse_slow_attend(n_q: int, n_k: int, d_k: int, d_v: int, score: str, drawn: bool) -> None:
    """Refuse, before computing it, one attention step whose arithmetic or answer would take minutes."""
    terms = n_q * n_k * d_k
    compute = terms * (SECONDS_PER_GAUSSIAN_TERM if score == "gaussian" else SECONDS_PER_MULTIPLY_ADD)
    numbers = 4 * n_q * n_k + (n_q + n_k) * d_k + (n_k + n_q) * d_v  # scores, masked, weights, (dot); inputs, output
    seconds = compute + n_q * n_k * d_v * SECONDS_PER_MULTIPLY_ADD + numbers * (
        SECONDS_PER_CELL if drawn else SECONDS_PER_JSON_NUMBER)
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
SECONDS_PER_JSON_CHANGE, BYTES_PER_JSON_CHANGE = 20e-6, 1000  # a changed weight in diff --json, at the peak


def refuse_slow_diff(changes: int, as_json: bool) -> None:
    """Refuse, before the weights are compared, a diff listing up to ``changes`` changed weights that would take
    more than MAX_VIEW_SECONDS to draw or write, or more than the budget's memory to hold as JSON."""
    what = f"up to {changes:,} changed weights"
    if as_json:
        size = changes * BYTES_PER_JSON_CHANGE
        if size > budget.memory():
            raise HandwiredError(f"{what} as JSON: about {gigabytes(size)}, more than the "
                                 f"{gigabytes(budget.memory())} handwired will use; diff compares two versions of one "
                                 f"model, a few edits apart{budget.more_memory(size)}", budget.SPACE)
        seconds = changes * SECONDS_PER_JSON_CHANGE
    else:
        seconds = changes * DIFF_COLUMNS * SECONDS_PER_CELL
    if seconds > _allowed():
        instead = "" if as_json else "{as_json} writes them without drawing, or "
        raise HandwiredError(f"{what} to {'write' if as_json else 'draw'}: about {duration(seconds)}, more than the "
                             f"{duration(_allowed())} handwired spends on a view; {instead}compare two versions "
                             f"of one model, a few edits apart{budget.more_time(seconds)}", ("as_json", *budget.TIME))


SECONDS_PER_STEP_DOWN = 100e-6  # one token of an example followed down the domain's trie (Domain.holds)


def refuse_slow_examples(puzzle: Puzzle) -> None:
    """Refuse, before any is answered, a statement's examples whose answers would take more than MAX_VIEW_SECONDS:
    each is followed down the domain's trie token by token (never enumerated), then judged by the rule."""
    steps = sum(len(example) for example in puzzle.examples) if puzzle.domain is not None else 0
    seconds = len(puzzle.examples) * SECONDS_PER_PASS + steps * SECONDS_PER_STEP_DOWN
    if seconds > _allowed():
        raise HandwiredError(f"{puzzle.source}: {len(puzzle.examples):,} examples, each followed down the domain "
                             f"token by token: about {duration(seconds)}, more than the {duration(_allowed())} "
                             "handwired spends on a view; a statement with fewer or shorter examples narrows it"
                             f"{budget.more_time(seconds)}", budget.TIME)
