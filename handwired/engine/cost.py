"""The one sizing module: what a piece of work costs, in CPU time and in memory at its peak, before it starts.

Every estimate handwired makes is here, priced from the work's size and the model's widths: its callers count the
work (contexts, prefixes walked, tokens, numbers drawn, parameters copied) and refuse it against the budget
(:mod:`handwired.budget`) in their own words; they never price it themselves. Each per-unit cost is a constant
here, once (``SECONDS_PER_…``, ``BYTES_PER_…``), fitted with ``benchmarks/bench_estimates.py``, which prints every
shape's estimate beside the CPU time and peak memory it used (the aim: within a factor 2 of both); a test of the
structure fails on a cost constant or an estimating function defined anywhere else.

How big a batch is, is decided where the batches are made (the walk's nodes per batch in :mod:`walk`, the forward
pass's chunks in :mod:`batch`, the variants walked together in :mod:`resume`): those bound the memory of the work
rather than predict it. This module reads those choices to estimate the work.
"""

import math

import numpy as np

from handwired.engine import batch as batching
from handwired.engine import walk as walking
from handwired.weightfile import Model
from handwired.weightfile.checker import locate

# --- time: the model run -----------------------------------------------------------------------------------------
SECONDS_PER_CHECK = 0.1  # a check's start: its plan, the rule's tables, the report
SECONDS_PER_CONTEXT = 0.3e-6  # a context evaluated whole: its bookkeeping and judgement
SECONDS_PER_MULTIPLY_ADD = 0.1e-9  # forward.py's products, batched
SECONDS_PER_WALKED_MULTIPLY_ADD = 0.1e-9  # the walk's products (on columns, a batch's nodes along the last axis)
SECONDS_PER_GELU = 15e-9  # one hidden unit's GELU
SECONDS_PER_SCORE = 80e-9  # one query × key score of every string, before siblings' shared scores are divided out
SECONDS_PER_POSITION = 50e-9  # a position of a context evaluated whole
SECONDS_PER_BATCH_SCORE = 2e-9  # a query × key score of a batch
SECONDS_PER_PASS = 1.5e-3  # one small forward pass called on its own (numpy's calls, not its arithmetic)
SECONDS_PER_WINDOW, SECONDS_PER_WINDOW_TOKEN = 0.7e-6, 40e-9  # a stream's window: made, then compared with the others
SECONDS_PER_NODE, SECONDS_PER_JUDGED, SECONDS_PER_VOCAB_JUDGED = 0.3e-6, 1.0e-6, 10e-9  # a walk's; the last: per token
# What the certified bounds multiply a check's time by: on a domain's walk the certified check takes about 2.1–2.3×
# the float one (benchmarks/bench_proof.py, add); on every string 2.9–3.4× the float walk cut by slot (induction),
# which is about 1.8× the float tree the estimate of every string was fitted to, so the product still covers it.
PROOF_COST = 2.5

# --- time: copies of the model, comparisons, views ---------------------------------------------------------------
# A variant's copy of the model: each parameter as a float64 and as the file wrote it, made from the file's document
# (each written number parsed again); measured on dense and sparse files of n_embd 300 and 1000.
BYTES_PER_PARAMETER, SECONDS_PER_PARAMETER, SECONDS_PER_PARSED = 24, 0.25e-6, 2e-6
SECONDS_PER_COPIED = 1e-9  # a float64 an ablated part's array copies
# Comparing two files' weights: an entry compared by its label, one by one (measured on a busy 2-core machine:
# 360,000 entries in 4.2 s); a change made, with its label; what a change kept takes.
SECONDS_PER_LABELLED, SECONDS_PER_CHANGE, BYTES_PER_CHANGE = 12e-6, 10e-6, 300
SECONDS_PER_CELL = 75e-6  # drawing one number of a table in the terminal (rich), on a 2-core machine
SECONDS_PER_FORMATTED = 0.5e-6  # formatting one number, drawn or folded away
SECONDS_PER_SHOWN_WRITTEN = 0.5e-6  # a weight's text as written ("2*Lg"), made for every entry weights show draws
SECONDS_PER_PANEL = 1e-3  # a step made and drawn as a panel (its header, formula and note), beside its numbers
SECONDS_PER_JSON_NUMBER = 3e-6  # writing one number of attend's --json answer
SECONDS_PER_GAUSSIAN_TERM = 5e-9  # one (q − k)² term: made as an [n_q, n_k, d] array, then summed
SECONDS_PER_JSON_CHANGE, BYTES_PER_JSON_CHANGE = 20e-6, 1000  # a changed weight in diff --json, at the peak
SECONDS_PER_STEP_DOWN = 100e-6  # one token of an example followed down the domain's trie (Domain.holds)

# --- memory: a forward pass ----------------------------------------------------------------------------------------
# Fitted with tracemalloc on float64 forward passes (within about 10%, on the high side).
BYTES_PER_FLOAT = 8
WIDE_RECORDED = 12  # [n_seq, n_embd] arrays a recorded block keeps: residuals, q, k, v, z, outputs, norms
WIDE_RUNNING = 6  # [n_seq, n_embd] arrays alive at once in an unrecorded block: x, q, k, v and their copies
NORM_RECORDED = 2  # more [n_seq, n_embd] arrays per LayerNorm: hook_normalized beside hook_out, and its making
SQUARES_RECORDED = 3  # [head, n_seq, n_seq] arrays a recorded block keeps: scores, masked scores, pattern
BYTES_PER_MASKED = BYTES_PER_FLOAT + 1  # a query × key cell of the causal mask: the float mask and its boolean
BYTES_PER_SPREAD_CONTEXT = 8 + 1 + 8  # what a spread keeps per context besides its tokens: value, present, predicted


def times(count: float, seconds: float) -> float:
    """count × seconds, infinite rather than an OverflowError for a count beyond float range."""
    try:
        return float(count) * seconds
    except OverflowError:
        return math.inf


def exhaustive_seconds(model: Model, contexts: int) -> float:
    """Roughly how long a check of every string (``contexts`` of them) takes on a 2-core machine: the walk computes
    one new position per context and block, a cost per context (judging, bookkeeping), per multiply-add, per GELU,
    and per score."""
    n, n_keys = model.n_embd, model.n_ctx + model.n_vocab
    per_context = SECONDS_PER_CONTEXT
    for i, hidden in enumerate(model.hidden):
        multiply_adds = (n * n if i == 0 else 4 * n * n) + 2 * n * hidden + 2 * n * n_keys  # block 0: q, k, v looked up
        per_context += multiply_adds * SECONDS_PER_WALKED_MULTIPLY_ADD + hidden * SECONDS_PER_GELU
        per_context += n_keys * model.n_head * SECONDS_PER_SCORE / model.n_vocab
    return SECONDS_PER_CHECK + times(contexts, per_context)


def forward_seconds(model: Model, contexts: int, length: int, last_only: bool = True) -> float:
    """Roughly how long running ``contexts`` contexts of ``length`` tokens through forward.py's pass takes (a sample
    without the proof, complete, diff; with ``last_only`` False, every position's, as explain records it): per
    position q, k, v and c_proj, the MLP, every query against every key in each block but the last, where only the
    last position's row is needed (unless ``last_only`` is False)."""
    n, blocks = model.n_embd, model.params["blocks"]
    multiply_adds, gelus, scores = n * model.n_vocab * (1 if last_only else length), 0, 0
    for i, hidden in enumerate(model.hidden):
        rows = 1 if last_only and i == len(blocks) - 1 else length  # positions whose row this block computes
        multiply_adds += length * 3 * n * n + rows * (2 * n * length + n * n + 2 * n * hidden)
        gelus += rows * hidden
        scores += rows * length * model.n_head
    per_context = (SECONDS_PER_CONTEXT + length * SECONDS_PER_POSITION + multiply_adds * SECONDS_PER_MULTIPLY_ADD
                   + gelus * SECONDS_PER_GELU + scores * SECONDS_PER_BATCH_SCORE)
    return times(contexts, per_context)


def stream_seconds(model: Model, length: int, pattern_length: int, proof: bool) -> float:
    """Roughly how long a stream check of ``length`` tokens takes: every window of n_ctx tokens is made and compared
    with the others, each distinct one (at most the pattern's length of them) and each short prefix at the start is
    run through the model; ``proof``: with the certified bounds."""
    windows = times(length, SECONDS_PER_WINDOW + model.n_ctx * SECONDS_PER_WINDOW_TOKEN)
    short = min(model.n_ctx, length) - 1  # prefixes shorter than n_ctx, each run on its own; bounded by the longest
    prefixes = short * (SECONDS_PER_PASS + forward_seconds(model, 1, short))
    model_run = windows + prefixes + forward_seconds(model, min(length, pattern_length), model.n_ctx)
    return SECONDS_PER_CHECK + model_run * (PROOF_COST if proof else 1)


def walk_seconds(model: Model, nodes: int, contexts: int) -> float:
    """Roughly how long walking a trie of ``nodes`` prefixes, ``contexts`` of them judged, takes on a 2-core
    machine: each node one new position per block, as :func:`exhaustive_seconds` counts it without siblings."""
    n = model.n_embd
    per_node = SECONDS_PER_NODE
    for i, hidden in enumerate(model.hidden):
        multiply_adds = (n * n if i == 0 else 4 * n * n) + 2 * n * hidden + 2 * n * model.n_ctx
        per_node += multiply_adds * SECONDS_PER_WALKED_MULTIPLY_ADD + hidden * SECONDS_PER_GELU
        per_node += (model.n_ctx + 1) * model.n_head * SECONDS_PER_BATCH_SCORE
    per_context = SECONDS_PER_JUDGED + model.n_vocab * (n * SECONDS_PER_WALKED_MULTIPLY_ADD + SECONDS_PER_VOCAB_JUDGED)
    return SECONDS_PER_CHECK + times(nodes, per_node) + times(contexts, per_context)


def sample_seconds(model: Model, sample: int, proof: bool, longest: int | None = None) -> float:
    """Roughly how long ``sample`` contexts of up to ``longest`` (n_ctx) tokens take: through forward.py's
    whole-context pass, or with ``proof`` as the certified walk of the trie of their prefixes, every context apart
    as far as its length allows."""
    if not proof:
        return SECONDS_PER_CHECK + forward_seconds(model, sample, model.n_ctx)
    nodes, level = 0, 1
    for _ in range(longest or model.n_ctx):
        level = min(level * model.n_vocab, sample)  # prefixes of a length: at most the strings, at most the sample
        nodes += level
    return walk_seconds(model, nodes, sample) * PROOF_COST


def copy_cost(model: Model) -> tuple[float, float]:
    """(bytes, seconds) of one copy of ``model`` with other constants (a sweep's value), before any is made."""
    parameters = sum(int(np.size(values)) for values in model.written.entries.values())
    written = sum(int(np.count_nonzero(values)) for values in model.written.entries.values())
    return BYTES_PER_PARAMETER * parameters, SECONDS_PER_PARAMETER * parameters + SECONDS_PER_PARSED * written


def ablation_cost(model: Model, parts: int, entries: bool) -> tuple[float, float]:
    """(bytes, seconds) of the arrays ``parts`` parts of an ablation copy, all held at once: each entry's part
    (``entries``) copies the array it is in, each head's and unit's the matrix it edits (at most c_attn's,
    3·n_embd² numbers, or an MLP's c_proj)."""
    size = 0
    if entries:
        size += sum(int(np.count_nonzero(values)) * values.size for values in
                    (locate(model.params, path) for path in model.written.axes))
    widest = max([3 * model.n_embd * model.n_embd, *(hidden * model.n_embd for hidden in model.hidden)])
    size += parts * widest
    return float(BYTES_PER_FLOAT * size), size * SECONDS_PER_COPIED


def compare_cost(by_label: int, changes: int) -> tuple[float, float]:
    """(bytes, seconds) of comparing ``by_label`` entries by their labels and listing up to ``changes`` changes."""
    return changes * BYTES_PER_CHANGE, by_label * SECONDS_PER_LABELLED + changes * SECONDS_PER_CHANGE


# --- time: views ---------------------------------------------------------------------------------------------------
def explain_seconds(model: Model, length: int, squares: int, panels: int) -> float:
    """The forward pass over ``length`` tokens keeping every position's intermediates, ``squares`` query × key
    numbers drawn and ``panels`` steps made and drawn."""
    return forward_seconds(model, 1, length, last_only=False) + squares * SECONDS_PER_CELL + panels * SECONDS_PER_PANEL


def predict_seconds(model: Model, length: int, cells: int) -> float:
    """The recorded forward pass over ``length`` tokens, and ``cells`` numbers of its table drawn."""
    return forward_seconds(model, 1, length, last_only=False) + cells * SECONDS_PER_CELL


def complete_seconds(model: Model, length: int, n: int) -> float:
    """Generating ``n`` tokens one at a time after ``length``, each a pass over the longest context seen on the way."""
    window = min(length + n, model.n_ctx)
    return n * (SECONDS_PER_PASS + forward_seconds(model, 1, window))


def drawing_seconds(cells: int, formatted: int, written: bool = False) -> float:
    """``cells`` numbers drawn, of ``formatted`` made (the folded ones too); ``written``: each with its text as the
    file wrote it."""
    return cells * SECONDS_PER_CELL + formatted * (SECONDS_PER_FORMATTED + SECONDS_PER_SHOWN_WRITTEN * written)


def panels_seconds(panels: int) -> float:
    """``panels`` steps made and drawn as panels, beside their numbers."""
    return panels * SECONDS_PER_PANEL


def attend_seconds(n_q: int, n_k: int, d_k: int, d_v: int, gaussian: bool, drawn: bool) -> float:
    """One attention step of ``n_q`` queries and ``n_k`` keys computed and shown (``drawn``, else as JSON)."""
    compute = n_q * n_k * d_k * (SECONDS_PER_GAUSSIAN_TERM if gaussian else SECONDS_PER_MULTIPLY_ADD)
    numbers = 4 * n_q * n_k + (n_q + n_k) * d_k + (n_k + n_q) * d_v  # scores, masked, weights, (dot); inputs, output
    return compute + n_q * n_k * d_v * SECONDS_PER_MULTIPLY_ADD + numbers * (
        SECONDS_PER_CELL if drawn else SECONDS_PER_JSON_NUMBER)


def diff_cost(changes: int, as_json: bool, columns: int) -> tuple[float, float]:
    """(bytes, seconds) of listing up to ``changes`` changed weights: as JSON, or drawn ``columns`` numbers each."""
    if as_json:
        return changes * BYTES_PER_JSON_CHANGE, changes * SECONDS_PER_JSON_CHANGE
    return 0.0, changes * columns * SECONDS_PER_CELL


def examples_seconds(examples: int, steps: int) -> float:
    """A statement's ``examples`` answered, ``steps`` tokens followed down its domain's trie."""
    return examples * SECONDS_PER_PASS + steps * SECONDS_PER_STEP_DOWN


# --- memory ----------------------------------------------------------------------------------------------------------
def trace_bytes(model: Model, length: int) -> int:
    """Peak bytes of one context of ``length`` tokens run with every intermediate recorded (predict, explain)."""
    n, blocks = length, model.params["blocks"]
    squares = len(blocks) * SQUARES_RECORDED * model.n_head * n * n  # [head, n, n] per block
    norms = sum(("ln_1" in block) + ("ln_2" in block) for block in blocks) + ("ln_f" in model.params)
    wide = (2 + len(blocks) * WIDE_RECORDED + norms * NORM_RECORDED) * n * model.n_embd  # embeddings, each block's
    hidden = 2 * n * sum(model.hidden)  # the MLP before and after GELU
    logits = 2 * n * model.n_vocab  # logits and probabilities
    return BYTES_PER_FLOAT * (squares + wide + hidden + logits) + BYTES_PER_MASKED * n * n


def chunk_bytes(model: Model, contexts: int, length: int) -> int:
    """Peak bytes of one unrecorded pass over ``contexts`` contexts of ``length`` tokens, last position only:
    one block's arrays at a time; the last block asks one query, the others ``length``."""
    blocks = model.params["blocks"]
    queries = length if len(blocks) > 1 else 1
    squares = contexts * model.n_head * queries * length  # [batch, head, n_query, n_seq]
    wide = contexts * length * (WIDE_RUNNING * model.n_embd + 2 * max(model.hidden, default=0))
    return BYTES_PER_FLOAT * (squares + wide) + BYTES_PER_MASKED * queries * length


def table_bytes(model: Model) -> int:
    """Block 0's q, k and v for every (token, position): [n_vocab, n_ctx, 3·n_embd], and the sum it is made from."""
    return BYTES_PER_FLOAT * model.n_vocab * model.n_ctx * 4 * model.n_embd


def pass_bytes(model: Model, contexts: int, length: int) -> int:
    """Peak bytes of :func:`handwired.engine.batch.next_logits` over ``contexts`` contexts of ``length`` tokens: the
    chunks that run side by side, and the lookup table when the batch builds one."""
    if contexts == 0:
        return 0
    chunk = min(batching.chunk_size(length), contexts)
    side_by_side = min(batching.WORKERS, -(-contexts // chunk))
    table = table_bytes(model) if batching.worth_a_table(model, contexts * length) else 0
    return table + side_by_side * chunk_bytes(model, chunk, length)


def walk_bytes(model: Model, longest: int) -> int:
    """Peak bytes of a walk over contexts of at most ``longest`` tokens: the path and one batch's arrays."""
    path, wide = walking.node_sizes(model, longest)
    return walking.batch_nodes(model, longest) * (path + wide)


def logits_bytes(model: Model, rows: int) -> int:
    """Bytes of ``rows`` rows of logits, kept: [rows, n_vocab] float64."""
    return BYTES_PER_FLOAT * rows * model.n_vocab


def spread_bytes(contexts: int, longest: int) -> float:
    """What a spread keeps of ``contexts`` contexts of up to ``longest`` tokens: each one's tokens and values."""
    return times(contexts, longest + BYTES_PER_SPREAD_CONTEXT)
