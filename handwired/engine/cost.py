"""The one sizing module: what a piece of work costs, in CPU time and in memory at its peak, before it starts.

Every estimate is here, priced from the work's size and the model's widths; its callers count the work (contexts,
prefixes walked, tokens, numbers drawn, parameters copied) and refuse it against the budget (:mod:`handwired.budget`)
in their own words. Each per-unit cost is a constant here, once, fitted with ``benchmarks/bench_estimates.py`` (which
prints every shape's estimate beside what it used; the aim: within a factor 2). How big a batch is, is decided where
the batches are made (:mod:`walk`, :mod:`batch`, :mod:`resume`): this module reads those choices.
"""

import math
from collections.abc import Sequence

import numpy as np

from handwired.weightfile import Model
from handwired.weightfile.checker import locate

# --- time: the model run -----------------------------------------------------------------------------------------
# Fitted with benchmarks/bench_estimates.py on the shared 2-core machine (load 9-12: CPU time there is about 1.5x a
# quiet machine's, so a quiet one comes in at about 0.7 of these).
SECONDS_PER_CHECK = 0.1  # a check's start: its plan, the rule's tables, the report
SECONDS_PER_CONTEXT = 0.3e-6  # a context evaluated whole: its bookkeeping and judgement
SECONDS_PER_MULTIPLY_ADD = 0.1e-9  # forward.py's products, batched
SECONDS_PER_WALKED_MULTIPLY_ADD = 0.16e-9  # the walk's products (on columns, a batch's nodes along the last axis)
SECONDS_PER_GELU = 24e-9  # one hidden unit's GELU
SECONDS_PER_POSITION_BLOCK = 1e-6  # a position through one block of forward.py's pass: its norms, softmax, GELU
SECONDS_PER_BATCH_SCORE = 2e-9  # a query × key score of a batch
SECONDS_PER_PASS = 1.5e-3  # one small forward pass called on its own (numpy's calls, not its arithmetic)
SECONDS_PER_WINDOW, SECONDS_PER_WINDOW_TOKEN = 0.7e-6, 40e-9  # a stream's window: made, then compared with the others
SECONDS_PER_NODE, SECONDS_PER_JUDGED, SECONDS_PER_VOCAB_JUDGED = 0.2e-6, 0.3e-6, 10e-9  # a walk's; the last: per token
SECONDS_PER_BLOCK_STEP = 150e-6  # a batch's step through one block: numpy's calls, whatever the batch's size
# What the certified bounds multiply a walk's time by: its arithmetic 2.3–2.7× the float one on a domain (bench_proof,
# add), 2–3× on every string; its calls (a deep, narrow model's) 4.3×. A variant's own walk: 0.65× (add's, measured).
PROOF_COST, PROOF_CALLS, VARIANT_COST = 2.7, 4.3, 0.65

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
LOGITS_KEPT = 5  # a variant's logits [n, n_vocab]: in the batch's block of them, and as they are judged
PROOF_MEMORY, PROOF_TABLES = 1.3, 7  # the certified walk's peak over the float's; the tables it adds (walk_peak_bytes)
BYTES_PER_WINDOW, BYTES_PER_PHASE = 60, 200  # a stream's window judged; one at a phase, made for the certified walk


def _batching():  # imported on first use: predict's one pass sizes its memory here and loads nothing of batches
    from handwired.engine import batch

    return batch


def _walking():  # likewise: the walk's batch sizes, read only when a walk is estimated
    from handwired.engine import walk

    return walk


def times(count: float, seconds: float) -> float:
    """count × seconds, infinite rather than an OverflowError for a count beyond float range."""
    try:
        return float(count) * seconds
    except OverflowError:
        return math.inf


def forward_seconds(model: Model, contexts: int, length: int, last_only: bool = True) -> float:
    """Roughly how long ``contexts`` contexts of ``length`` tokens take through forward.py's pass (a sample, complete,
    diff; explain's every position with ``last_only`` False): per position q, k, v (block 0's from a table when one
    is made), c_proj, the MLP and every query against every key, the last block's last position alone when
    ``last_only``."""
    n, blocks = model.n_embd, model.params["blocks"]
    multiply_adds, gelus, scores = n * model.n_vocab * (1 if last_only else length), 0, 0
    table = _batching().worth_a_table(model, contexts * length)
    for i, hidden in enumerate(model.hidden):
        rows = 1 if last_only and i == len(blocks) - 1 else length  # positions whose row this block computes
        qkv = 3 * n * (1 if i == 0 and table else n)  # a looked-up row is copied
        multiply_adds += length * qkv + rows * (2 * n * length + n * n + 2 * n * hidden)
        gelus += rows * hidden
        scores += rows * length * model.n_head
    per_context = (SECONDS_PER_CONTEXT + length * max(1, len(blocks)) * SECONDS_PER_POSITION_BLOCK
                   + multiply_adds * SECONDS_PER_MULTIPLY_ADD + gelus * SECONDS_PER_GELU
                   + scores * SECONDS_PER_BATCH_SCORE)
    return times(contexts, per_context)


def stream_seconds(model: Model, length: int, pattern_length: int, proof: bool, batch: int) -> float:
    """Roughly how long a stream check of ``length`` tokens takes, ``batch`` windows at a time, each made, compared and
    judged: without the ``proof`` each batch's distinct windows and the short prefixes at the start run through
    forward.py's pass; with it, one certified walk of the short prefixes and the window at each phase of the pattern."""
    windows = times(length, SECONDS_PER_WINDOW + model.n_ctx * SECONDS_PER_WINDOW_TOKEN)
    phases = min(length, pattern_length)
    if proof:
        nodes = trie_nodes(model.n_vocab, phases, model.n_ctx)  # the phases' windows' trie, the short prefixes in it
        return windows + walk_seconds(model, nodes, phases + model.n_ctx, model.n_ctx, proof=True)
    short = min(model.n_ctx, length) - 1  # prefixes shorter than n_ctx, each run on its own; bounded by the longest
    prefixes = short * (SECONDS_PER_PASS + forward_seconds(model, 1, short))
    windowed = min(phases, model.n_vocab ** min(model.n_ctx, 20), batch)  # distinct windows in a batch, at most
    distinct = min(length, -(-length // batch) * windowed)
    return SECONDS_PER_CHECK + windows + prefixes + forward_seconds(model, distinct, model.n_ctx)


def _node_seconds(model: Model) -> float:
    """The model's arithmetic for one node of a walk: one new position per block."""
    n, seconds = model.n_embd, 0.0
    for i, hidden in enumerate(model.hidden):
        multiply_adds = (n * n if i == 0 else 4 * n * n) + 2 * n * hidden + 2 * n * model.n_ctx
        seconds += multiply_adds * SECONDS_PER_WALKED_MULTIPLY_ADD + hidden * SECONDS_PER_GELU
        seconds += (model.n_ctx + 1) * model.n_head * SECONDS_PER_BATCH_SCORE
    return seconds


def _judged_seconds(model: Model) -> float:
    """A judged context's unembedding and its leads, beside the walk's."""
    return model.n_vocab * (model.n_embd * SECONDS_PER_WALKED_MULTIPLY_ADD + SECONDS_PER_VOCAB_JUDGED)


def walk_seconds(model: Model, nodes: int, contexts: int, longest: int, proof: bool = False) -> float:
    """Roughly how long walking a trie of ``nodes`` prefixes of up to ``longest`` tokens, ``contexts`` of them
    judged, takes on a 2-core machine (``proof``: the certified walk): each node one new position per block (its
    arithmetic), and each batch of nodes one block step per block (numpy's calls, which a narrow model's batches
    are mostly made of)."""
    calls = times(_batches(model, nodes, longest), (model.n_layer + 1) * SECONDS_PER_BLOCK_STEP)
    arithmetic = (times(nodes, SECONDS_PER_NODE + _node_seconds(model))
                  + times(contexts, SECONDS_PER_JUDGED + _judged_seconds(model)))
    return SECONDS_PER_CHECK + (calls * PROOF_CALLS + arithmetic * PROOF_COST if proof else calls + arithmetic)


def _batches(model: Model, nodes: int, longest: int) -> float:
    """Batches a walk of ``nodes`` prefixes of up to ``longest`` tokens makes: a few at each length, then as many as
    its nodes fill."""
    return longest + times(nodes, 1 / _walking().batch_nodes(model, longest))


def exhaustive_seconds(model: Model, contexts: int, proof: bool = False) -> float:
    """Roughly how long a check of every string of length 1…n_ctx (``contexts`` of them) takes: the walk of their
    trie, each a node and judged."""
    return walk_seconds(model, contexts, contexts, model.n_ctx, proof)


def workbench_seconds(model: Model, nodes: int, contexts: int, longest: int, variants: int, walks: int = 1) -> float:
    """Roughly how long judging ``variants`` variants of a model (a sweep's values, an ablation's parts) on a trie of
    ``nodes`` prefixes of up to ``longest`` tokens, ``contexts`` of them judged, takes: ``walks`` walks of the trie
    with the file's own model (:func:`walk_seconds` each), and on them each variant's own arithmetic and calls (from
    its embeddings, at most: the stages it shares with the file are not run again) and its judged contexts'
    unembedding and leads."""
    walk = walk_seconds(model, nodes, contexts, longest) - SECONDS_PER_CHECK
    variant = VARIANT_COST * (times(nodes, _node_seconds(model)) + times(contexts, _judged_seconds(model))
                              + times(_batches(model, nodes, longest), (model.n_layer + 1) * SECONDS_PER_BLOCK_STEP))
    return SECONDS_PER_CHECK + walks * walk + times(variants, variant)


def sample_seconds(model: Model, sample: int, proof: bool, longest: int | None = None) -> float:
    """Roughly how long ``sample`` contexts of up to ``longest`` (n_ctx) tokens take: through forward.py's
    whole-context pass, or with ``proof`` as the certified walk of the trie of their prefixes, every context apart
    as far as its length allows."""
    if not proof:
        return SECONDS_PER_CHECK + forward_seconds(model, sample, model.n_ctx)
    return walk_seconds(model, trie_nodes(model.n_vocab, sample, longest or model.n_ctx), sample,
                        longest or model.n_ctx, proof=True)


def trie_nodes(n_vocab: int, contexts: int, longest: int) -> int:
    """The most prefixes ``contexts`` contexts of up to ``longest`` tokens have: at each length, at most the strings
    of that length and at most the contexts."""
    levels = [1]
    for _ in range(longest):
        levels.append(min(levels[-1] * n_vocab, contexts))
    return sum(levels) - 1


def copy_cost(model: Model) -> tuple[float, float]:
    """(bytes, seconds) of one copy of ``model`` with other constants (a sweep's value), before any is made."""
    parameters = sum(int(np.size(values)) for values in model.written.entries.values())
    written = sum(int(np.count_nonzero(values)) for values in model.written.entries.values())
    return BYTES_PER_PARAMETER * parameters, SECONDS_PER_PARAMETER * parameters + SECONDS_PER_PARSED * written


def ablation_cost(model: Model, parts: int, entries: bool) -> tuple[float, float]:
    """(bytes, seconds) of the arrays ``parts`` parts of an ablation copy, all held at once: each entry's part
    (``entries``) copies the array it is in, each head's and unit's the matrix it edits (at most c_attn's,
    3·n_embd² numbers, or an MLP's c_proj)."""
    size = sum(int(np.count_nonzero(values)) * values.size for values in
               (locate(model.params, path) for path in model.written.axes)) if entries else 0
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
    as_data = (changes * BYTES_PER_JSON_CHANGE, changes * SECONDS_PER_JSON_CHANGE)
    return as_data if as_json else (0.0, changes * columns * SECONDS_PER_CELL)


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
    hidden, logits = 2 * n * sum(model.hidden), 2 * n * model.n_vocab  # the MLP before and after GELU; probabilities
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
    chunk = min(_batching().chunk_size(length), contexts)
    side_by_side = min(_batching().WORKERS, -(-contexts // chunk))
    table = table_bytes(model) if _batching().worth_a_table(model, contexts * length) else 0
    return table + side_by_side * chunk_bytes(model, chunk, length)


def walk_bytes(model: Model, longest: int) -> int:
    """The most bytes a walk over contexts of at most ``longest`` tokens takes: the path and one batch's arrays, every
    batch full and every dimension of the keys and values kept (what its batches are sized to fit)."""
    path, wide = _walking().node_sizes(model, longest)
    return _walking().batch_nodes(model, longest) * (path + wide)


def walk_peak_bytes(model: Model, nodes: int, contexts: int, longest: int, proof: bool = False,
                    by_slot: bool = False, widths: Sequence[int] = ()) -> float:
    """Roughly the peak bytes of a walk of a trie of ``nodes`` prefixes of up to ``longest`` tokens, ``contexts`` of
    them judged (``proof``: certified): its batches (no wider than the trie) with their widest arrays, its rooms, and
    the lookups it makes first: the embeddings and block 0's q, k, v of every token at every position (the certified
    table's: PROOF_TABLES more of the embeddings' size, 9.7-10.2 in all, measured). ``by_slot``, ``widths``: _rooms'."""
    batch = max(1, min(_walking().batch_nodes(model, longest), nodes, contexts))
    wide = _walking().node_sizes(model, longest)[1]
    embeddings = BYTES_PER_FLOAT * model.n_ctx * model.n_embd * model.n_vocab
    lookups = table_bytes(model) + embeddings * (PROOF_TABLES if proof else 1)
    return (_rooms(model, batch, longest, by_slot, widths) + batch * wide) * (PROOF_MEMORY if proof else 1) + lookups


def _rooms(model: Model, batch: int, longest: int, by_slot: bool = False, widths: Sequence[int] = ()) -> float:
    """Bytes of the rooms a walk keeps siblings' keys and values in (n_ctx positions of the dimensions the weights can
    make non-zero), one per length where the trie branches (an only child shares its parent's), each for at most
    ``batch`` nodes and the trie's ``widths`` there (a domain's; else every string's, to where ``by_slot`` cuts)."""
    path = _walking().node_sizes(model, longest)[0]  # every dimension of every block, for ``longest`` lengths
    from handwired.engine.arithmetic.floats import live_rows  # (the walk's arithmetic: loaded to size a walk)
    per_room = path / longest * live_rows(model) / (2 * max(1, model.n_layer) * model.n_embd)
    if not widths:
        widths, parents = [], 1
        for _ in range(longest):  # every string: a length's children are cut by slot once more than a batch (walk's
            children = parents * model.n_vocab  # _cuts), and every length below shares its parents' rooms
            if by_slot and children > batch and 2 * parents >= batch:
                break
            widths.append(children)
            parents = min(children, batch)
    return per_room * sum(min(batch, wide) for wide, above in zip(widths, [1, *widths]) if wide > above)


def stream_bytes(model: Model, length: int, pattern_length: int, proof: bool, batch: int) -> float:
    """Roughly the peak bytes of a stream check of ``length`` tokens judged ``batch`` windows at a time: a batch's
    windows sorted and judged, the forward passes of its distinct ones; with the ``proof``, the window at each phase
    of the pattern and their certified logits, from one walk."""
    windows = min(length, batch)
    phases = min(length, pattern_length)
    judged = windows * (BYTES_PER_WINDOW + model.n_ctx + 2 * model.n_vocab * BYTES_PER_FLOAT)
    if proof:
        nodes = trie_nodes(model.n_vocab, phases, model.n_ctx)
        found = phases * (BYTES_PER_PHASE + model.n_ctx + 2 * model.n_vocab * BYTES_PER_FLOAT)
        return judged + found + walk_peak_bytes(model, nodes, phases, model.n_ctx, proof=True)
    distinct = min(windows, phases, model.n_vocab ** min(model.n_ctx, 20))
    return judged + pass_bytes(model, distinct, model.n_ctx)


def variant_node_bytes(model: Model, attends: int) -> int:
    """The most bytes a variant keeps per node of a batch, which size the groups of variants walked together: its
    keys and values on a full path (the ``attends`` blocks it attends in), and its logits while the batch is
    judged."""
    longest = model.n_ctx
    return BYTES_PER_FLOAT * (2 * model.n_embd * longest * longest * attends + LOGITS_KEPT * model.n_vocab)


def workbench_bytes(model: Model, nodes: int, contexts: int, longest: int, variants: int, shared: int,
                    variant_memory: int, widths: Sequence[int] = ()) -> float:
    """Roughly the peak bytes of judging ``variants`` variants on a walk of ``nodes`` prefixes, ``contexts`` judged:
    the file's own walk, what it hands the variants at each batch and its judgements, kept across walks up to
    ``shared`` bytes, and the variants walked together (as many as fit ``variant_memory`` bytes by
    :func:`variant_node_bytes`), each keeping its keys and values and its logits (``widths``: see :func:`_rooms`)."""
    batch = max(1, min(_walking().batch_nodes(model, longest), nodes, contexts))
    handed = nodes * 2 * model.n_embd * BYTES_PER_FLOAT + contexts * (longest + model.n_vocab + 2 * BYTES_PER_FLOAT)
    own = _rooms(model, batch, longest, widths=widths) + batch * LOGITS_KEPT * model.n_vocab * BYTES_PER_FLOAT
    together = variant_memory // (_walking().batch_nodes(model, model.n_ctx) * variant_node_bytes(model, model.n_layer))
    return (walk_peak_bytes(model, nodes, contexts, longest, widths=widths) + min(shared, handed)
            + min(variants, max(1, together)) * own)


def logits_bytes(model: Model, rows: int) -> int:
    """Bytes of ``rows`` rows of logits, kept: [rows, n_vocab] float64."""
    return BYTES_PER_FLOAT * rows * model.n_vocab


def spread_bytes(contexts: int, longest: int) -> float:
    """What a spread keeps of ``contexts`` contexts of up to ``longest`` tokens: each one's tokens and values."""
    return times(contexts, longest + BYTES_PER_SPREAD_CONTEXT)


# A case costs about this many certified walk's nodes of its length: every position its own (nothing shared, block 0
# computed), fitted on the ten-digit adder (about 0.45 ms of CPU a case of 22 to 32 tokens, n_embd 48), busy machine.
CASE_COST, BYTES_PER_INTERVAL = 15.0, 2 * BYTES_PER_FLOAT  # the last: a mid and its radius


def case_seconds(model: Model, cases: int, length: int) -> float:
    """Roughly how long evaluating ``cases`` cases of ``length`` tokens takes (see :data:`CASE_COST`)."""
    return SECONDS_PER_CHECK + (walk_seconds(model, cases * length, cases, length) - SECONDS_PER_CHECK) * CASE_COST


def case_bytes(model: Model, length: int, chunk: int) -> float:
    """The peak of a batch of ``chunk`` cases of ``length`` tokens: their sets, the keys and values (with radii) of
    every block at every position, and a position's activations."""
    widest = max([model.n_embd, model.n_vocab, *model.hidden])
    past = length * model.n_layer * 2 * model.n_embd * BYTES_PER_INTERVAL
    return chunk * (length * model.n_vocab + past + 8 * widest * BYTES_PER_INTERVAL)
