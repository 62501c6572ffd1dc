"""Work refused for its memory, before any array exists: one line with the figure, what narrows it, how to allow it.

A valid sparse model of a few kilobytes can have 8 heads and a 4,096-token
context: each head's query × key scores are then 4,096² float64 numbers
(128 MB), kept three times over (before the mask, masked, the pattern) when
every intermediate is recorded. The figures are :mod:`handwired.engine.cost`'s
estimates; a command refuses in one line instead of swapping.
"""

from handwired import budget
from handwired.engine.cost import trace_bytes
from handwired.errors import HandwiredError
from handwired.weightfile import Model


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
