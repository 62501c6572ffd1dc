"""Sizing the model a weight file declares, from the raw document, before any array exists.

A sparse file can declare a huge model in a few hundred bytes (``"n_embd": 4096``
and ``{}`` for every matrix), so the declared shape — the vocab, every block,
every MLP's width — is counted first, whatever else in the file is wrong, and a
file over the limit is refused before anything is allocated. Counts that are
not valid are taken as 0 here: their own checks report them, and a matrix
whose side is unknown allocates nothing.
"""

from collections.abc import Iterable
from typing import Any

from handwired.weightfile.checker import MAX_SIZE

MAX_PARAMETERS = 10_000_000  # about what a 32 MB dense file holds; a sparse file could ask for more in a line


def parameter_count(n_vocab: int, n_ctx: int, n_embd: int, n_layer: int, widths: Iterable[int] = ()) -> int:
    """Numbers in a model: embeddings, each block's c_attn and c_proj, and an MLP of each width in ``widths``."""
    mlps = sum(width * (2 * n_embd + 1) + n_embd for width in widths if width)  # c_fc w and b, c_proj w and b
    return (n_vocab + n_ctx) * n_embd + n_layer * (4 * n_embd * n_embd + 4 * n_embd) + mlps


def oversized(doc: dict[str, Any]) -> str | None:
    """One line with the figure if the declared shape holds more than MAX_PARAMETERS numbers, else None."""
    vocab = doc.get("vocab")
    n_vocab = len(vocab) if isinstance(vocab, list) else 0
    n_ctx, n_embd = _count(doc.get("n_ctx")), _count(doc.get("n_embd"))
    blocks = doc.get("blocks")
    blocks = blocks if isinstance(blocks, list) else []
    if len(blocks) > MAX_SIZE:  # each block costs its own passes through numpy, however small it is
        return f"{len(blocks):,} blocks: more than handwired supports (at most {MAX_SIZE:,})"
    widths = [_hidden_width(block.get("mlp")) if isinstance(block, dict) else 0 for block in blocks]
    size = parameter_count(n_vocab, n_ctx, n_embd, len(blocks), widths)
    if size <= MAX_PARAMETERS:
        return None
    mlps = f", MLPs of {sum(widths):,} hidden units in all" if any(widths) else ""
    return (f"{size:,} weights (vocab {n_vocab:,}, n_ctx {n_ctx:,}, n_embd {n_embd:,}, {len(blocks):,} blocks{mlps}): "
            f"more than handwired supports ({MAX_PARAMETERS:,})")


def _count(value: Any) -> int:
    """A size as the file declares it, if it is one handwired would accept; else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not value.is_integer():
        return 0
    return int(value) if 1 <= value <= MAX_SIZE else 0


def _hidden_width(mlp: Any) -> int:
    """An MLP's hidden units as declared: named or counted by ``hidden``, else as wide as a dense matrix is."""
    if not isinstance(mlp, dict):
        return 0
    hidden = mlp.get("hidden")
    if isinstance(hidden, list):
        return len(hidden)
    if "hidden" in mlp:
        return _count(hidden)
    fc_w = mlp["c_fc"].get("w") if isinstance(mlp.get("c_fc"), dict) else None
    if isinstance(fc_w, list) and fc_w and isinstance(fc_w[0], list):
        return len(fc_w[0])
    proj_w = mlp["c_proj"].get("w") if isinstance(mlp.get("c_proj"), dict) else None
    return len(proj_w) if isinstance(proj_w, list) else 0
