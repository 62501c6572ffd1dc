"""What a forward pass holds at its peak, known from the model's shape before any array exists.

A valid sparse model of a few kilobytes can have 8 heads and a 4,096-token
context: each head's query × key scores are then 4,096² float64 numbers
(128 MB), kept three times over (before the mask, masked, the pattern) when
every intermediate is recorded. These estimates count those square arrays and
the [positions, n_embd] activations beside them, so a command can refuse in one
line instead of swapping. Fitted with tracemalloc on float64 forward passes
(within about 10%, on the high side).
"""

from handwired import budget
from handwired.errors import HandwiredError
from handwired.weightfile import Model

FLOAT = 8  # bytes of a float64
WIDE_RECORDED = 12  # [n_seq, n_embd] arrays a recorded block keeps: residuals, q, k, v, z, outputs, norms
WIDE_RUNNING = 6  # [n_seq, n_embd] arrays alive at once in an unrecorded block: x, q, k, v and their copies
NORM_RECORDED = 2  # more [n_seq, n_embd] arrays per LayerNorm: hook_normalized beside hook_out, and its making
SQUARES_RECORDED = 3  # [head, n_seq, n_seq] arrays a recorded block keeps: scores, masked scores, pattern
MASK = FLOAT + 1  # bytes per query × key cell of the causal mask: the float mask and the boolean it is made from


def trace_bytes(model: Model, length: int) -> int:
    """Peak bytes of one context of ``length`` tokens run with every intermediate recorded (predict, explain)."""
    n, blocks = length, model.params["blocks"]
    squares = len(blocks) * SQUARES_RECORDED * model.n_head * n * n  # [head, n, n] per block
    norms = sum(("ln_1" in block) + ("ln_2" in block) for block in blocks) + ("ln_f" in model.params)
    wide = (2 + len(blocks) * WIDE_RECORDED + norms * NORM_RECORDED) * n * model.n_embd  # embeddings, each block's
    hidden = 2 * n * sum(model.hidden)  # the MLP before and after GELU
    logits = 2 * n * model.n_vocab  # logits and probabilities
    return FLOAT * (squares + wide + hidden + logits) + MASK * n * n


def chunk_bytes(model: Model, contexts: int, length: int) -> int:
    """Peak bytes of one unrecorded pass over ``contexts`` contexts of ``length`` tokens, last position only:
    one block's arrays at a time; the last block asks one query, the others ``length``."""
    blocks = model.params["blocks"]
    queries = length if len(blocks) > 1 else 1
    squares = contexts * model.n_head * queries * length  # [batch, head, n_query, n_seq]
    wide = contexts * length * (WIDE_RUNNING * model.n_embd + 2 * max(model.hidden, default=0))
    return FLOAT * (squares + wide) + MASK * queries * length


def table_bytes(model: Model) -> int:
    """Block 0's q, k and v for every (token, position): [n_vocab, n_ctx, 3·n_embd], and the sum it is made from."""
    return FLOAT * model.n_vocab * model.n_ctx * 4 * model.n_embd


def gigabytes(size: float) -> str:
    """``3.2 GB`` (of 2^30 bytes; ``2 GB``, not ``2.0 GB``), ``512 MB`` below one."""
    return f"{size / 2**30:.1f}".removesuffix(".0") + " GB" if size >= 2**30 else f"{size / 2**20:,.0f} MB"


def refuse_large(what: str, size: float, narrowing: str = "", parameters: tuple[str, ...] = (),
                 of: str = "attention scores and activations") -> None:
    """Refuse work whose arrays would take more than the budget's memory at their peak: ``what: about 3.2 GB of …``,
    what narrows it, and how to allow it."""
    if size > budget.memory():
        raise HandwiredError(f"{what}: about {gigabytes(size)} of {of} at the peak, "
                             f"more than the {gigabytes(budget.memory())} handwired will use{narrowing}"
                             f"{budget.more_memory(size)}", (*parameters, *budget.SPACE))


def refuse_large_trace(model: Model, length: int) -> None:
    """Refuse, before any array exists, to record a pass over ``length`` tokens that would not fit the budget."""
    heads = f"{model.n_head} head{'s' * (model.n_head != 1)}"
    blocks = f"{model.n_layer} block{'s' * (model.n_layer != 1)}"
    refuse_large(f"{length:,} tokens at n_embd {model.n_embd}, {heads}, {blocks}", trace_bytes(model, length),
                 "; give a shorter context")
