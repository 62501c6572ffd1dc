"""A set of contexts walked as a trie of their prefixes, depth first, in bounded batches.

The contexts are given by their shape, never as a list (:class:`Shape`): which
tokens may follow a prefix, and which prefixes are contexts to judge. The walk
grows the trie from the empty prefix: the children of a batch of nodes are the
allowed tokens of each, in vocab order, so every batch comes out sorted and
nothing is ever sorted. Under the causal mask nothing before a node's last
position depends on its last token, so in every block a node's keys and values
at positions 0…L-2 are its parent's: each node computes one new position, its
q, k and v, its attention over its parent's keys and its own, c_proj and the
MLP. An only child shares its parent's keys and values (it writes its own into
the parent's room); siblings get a copy of their parent's, once per batch.

Memory is bounded by a batch and the depth, not by the number of contexts: the
walk keeps only the batches on the path from the root (each of at most
``batch_nodes`` nodes), with the keys and values of each node's positions.

The numeric work is the ``step`` function's (:func:`handwired.engine.block_step.block_step` in an arithmetic:
float64 in :mod:`handwired.engine.arithmetic.floats`, intervals in :mod:`handwired.engine.arithmetic.certified`); the
walk only grows the trie and keeps the path. An evaluator plugs in by giving its own ``step`` and the ``past`` of the
empty prefix: the walk hands each step the past it returned for the parents' batch, which rows of it are this batch's
parents, their children (:class:`Family`), and whether logits or a past for grandchildren are wanted.

Every string of every length (:class:`EveryString`: ``check --exhaustive``, a puzzle without a domain) is the
widest trie, n_vocab children to a node. Its wide batches are cut by slot (``by_slot``): one batch holds the k-th
child of every parent, so each child writes its own keys into its parent's room and shares it, as an only child
does, instead of each sibling copying its parent's; and it is walked in parts (:mod:`handwired.engine.parts`).
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from handwired.weightfile import Model

CHUNK = 4096  # nodes evaluated together at most: numpy's per-call cost amortised, the arrays kept in cache
PATH_MEMORY = 128 * 2**20  # bytes of keys and values the path may keep, at most
WIDE_MEMORY = 64 * 2**20  # bytes of one batch's widest arrays (logits, MLP hidden units, scores), at most


class Shape(Protocol):
    """Which prefixes the walk visits. ``prefixes`` is [n, L] token ids, one length per batch (L = 0: the root)."""

    def children(self, prefixes: np.ndarray) -> np.ndarray:
        """[n, L] -> [n, n_vocab] bool: the tokens whose prefix + token the walk visits."""
        ...

    def judged(self, prefixes: np.ndarray) -> np.ndarray:
        """[n, L] -> [n] bool: the prefixes that are contexts, whose next-token logits are wanted."""
        ...


@dataclass(frozen=True)
class EveryString:
    """Every string of length 1…n_ctx over the vocab; those of min_length or more are judged."""

    n_vocab: int
    n_ctx: int
    min_length: int = 1
    by_slot: bool = False  # a wide batch's children cut by slot (see _cuts): no copies; a length in sorted runs

    def children(self, prefixes: np.ndarray) -> np.ndarray:
        return np.full((len(prefixes), self.n_vocab), prefixes.shape[1] < self.n_ctx)

    def judged(self, prefixes: np.ndarray) -> np.ndarray:
        return np.full(len(prefixes), prefixes.shape[1] >= self.min_length)


class Listed:
    """The contexts given ([n, L] token ids, a length per array, repeats allowed) and their prefixes. Each length's
    distinct prefixes are kept in vocab order, each as its parent's index among the length before's times n_vocab
    plus its last token (``keys``), with which of them are contexts (``ends``). ``index[i]``: for each row of the
    i-th array, where its context comes among the contexts of its length that a walk judges, in vocab order."""

    def __init__(self, contexts: list[np.ndarray], n_vocab: int):
        self.n_vocab = n_vocab
        given = [np.asarray(batch, dtype=np.int64) for batch in contexts]  # [n, L] each
        self.keys: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]  # the empty prefix
        self.ends: list[np.ndarray] = [np.zeros(1, dtype=bool)]
        ranks = [np.zeros(len(batch), dtype=np.int64) for batch in given]  # each row's prefix: its index so far
        for length in range(1, max((batch.shape[1] for batch in given if len(batch)), default=0) + 1):
            rows = [i for i, batch in enumerate(given) if len(batch) and batch.shape[1] >= length]
            keys, inverse = np.unique(np.concatenate([ranks[i] * n_vocab + given[i][:, length - 1] for i in rows]),
                                      return_inverse=True)
            ends = np.zeros(len(keys), dtype=bool)
            start = 0
            for i in rows:
                ranks[i] = inverse[start:start + len(given[i])]
                start += len(given[i])
                if given[i].shape[1] == length:
                    ends[ranks[i]] = True
            self.keys.append(keys)
            self.ends.append(ends)
        self.index = [(np.cumsum(self.ends[batch.shape[1]]) - 1)[rank] if len(batch) else rank
                      for batch, rank in zip(given, ranks)]
        self._given = given
        self._next = [0] * len(self.keys)  # per length, where the walk's next batch starts among its prefixes
        self._found: dict[int, tuple[np.ndarray, int]] = {}  # per length, the last batch found: rows, first index
        self._last: tuple[Any, np.ndarray] = (None, np.zeros(0, dtype=np.int64))

    @property
    def contexts(self) -> set[tuple[int, ...]]:
        """The distinct contexts, as tuples (for a few)."""
        return {tuple(int(t) for t in row) for batch in self._given for row in batch}

    def children(self, prefixes: np.ndarray) -> np.ndarray:
        out = np.zeros((len(prefixes), self.n_vocab), dtype=bool)
        length = prefixes.shape[1]
        if length + 1 >= len(self.keys):
            return out
        rank = self._ranks(prefixes)
        parents = self.keys[length + 1] // self.n_vocab  # [m], non-decreasing
        low, high = np.searchsorted(parents, rank, "left"), np.searchsorted(parents, rank, "right")
        counts = np.where(rank < 0, 0, high - low)
        child = np.arange(counts.sum()) + np.repeat(low - np.cumsum(counts) + counts, counts)
        out[np.repeat(np.arange(len(prefixes)), counts), self.keys[length + 1][child] % self.n_vocab] = True
        return out

    def judged(self, prefixes: np.ndarray) -> np.ndarray:
        if prefixes.shape[1] >= len(self.keys):
            return np.zeros(len(prefixes), dtype=bool)
        rank = self._ranks(prefixes)
        return np.where(rank < 0, False, self.ends[prefixes.shape[1]][np.maximum(rank, 0)])

    def _ranks(self, prefixes: np.ndarray) -> np.ndarray:
        """[m, L] -> [m]: each prefix's index among the distinct prefixes of its length (-1: none of them). A walk
        asks for each length's prefixes in vocab order, batch after batch, each right after the batch of its parents:
        so each batch is looked for where the last one of its length ended, and taken when its last tokens are there
        and its parents are the rows of the last batch found one shorter; else it is searched for, token by token."""
        if prefixes is self._last[0]:  # judged, then children, of one batch
            return self._last[1]
        m, length = prefixes.shape
        if length == 0:  # a walk begins
            self._next, self._found = [0] * len(self.keys), {0: (prefixes, 0)}
            rank = np.zeros(m, dtype=np.int64)
        else:
            start, above = self._next[length], self._found.pop(length - 1, None)  # (rows, the first one's index)
            run = self.keys[length][start:start + m]
            parent = run // self.n_vocab - (above[1] if above is not None else 0)
            if (above is not None and len(run) == m and np.array_equal(run % self.n_vocab, prefixes[:, -1])
                    and 0 <= parent.min(initial=0) and parent.max(initial=-1) < len(above[0])
                    and np.array_equal(above[0][parent], prefixes[:, :-1])):
                self._next[length], self._found[length] = start + m, (prefixes, start)
                self._found[length - 1] = above
                rank = np.arange(start, start + m)
            else:
                rank = self._search(prefixes)
                self._found = {}  # what is found next is searched for too
        self._last = (prefixes, rank)
        return rank

    def _search(self, prefixes: np.ndarray) -> np.ndarray:
        rank = np.zeros(len(prefixes), dtype=np.int64)
        found = np.ones(len(prefixes), dtype=bool)
        for length in range(1, prefixes.shape[1] + 1):
            keys = self.keys[length]
            key = rank * self.n_vocab + prefixes[:, length - 1]
            rank = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
            found &= keys[rank] == key
        return np.where(found, rank, -1)


@dataclass(frozen=True)
class Family:
    """A batch of children: child i is token ``tokens[i]`` after parent ``parent[i]`` (of ``c`` parents), its
    ``slot[i]``-th child in this batch; ``width`` is the most children a parent has here."""

    tokens: np.ndarray  # [n]
    parent: np.ndarray  # [n], 0…c-1, non-decreasing
    slot: np.ndarray | None  # [n]; None when every parent has ``width`` children
    c: int
    width: int

    @property
    def uniform(self) -> bool:  # every parent has ``width`` children: [n] is [c, width] as it stands
        return len(self.tokens) == self.c * self.width


@dataclass(frozen=True)
class Visit:
    """One batch of the walk: nodes of one length, in vocab order (siblings, or cut by slot one child a parent)."""

    prefixes: np.ndarray  # [n, L] token ids
    judged: np.ndarray  # [n] bool
    logits: np.ndarray | None  # [n, n_vocab] when any is judged (the others' rows are computed too)


# step(the parents' batch's past, the rows of its c parents, family, length of the children, logits wanted,
#      past wanted) -> (logits, the children's past); the past is the step's own: the walk only hands it back
Step = Callable[[Any, slice, Family, int, bool, bool], tuple[np.ndarray | None, Any]]


@dataclass
class _Parents:
    prefixes: np.ndarray  # [c, L]
    past: Any  # the step's, for these nodes
    parent: np.ndarray  # [m]: their children, in vocab order: the parent of each
    tokens: np.ndarray  # [m]


def walk(shape: Shape, step: Step, root: Any, chunk: int) -> Iterator[Visit]:
    """Every node the shape allows, depth first, ``chunk`` children at a time; ``root`` is the empty prefix's
    past. A batch of length L comes right after the batch that holds its parents."""
    top = _parents(shape, np.zeros((1, 0), dtype=np.uint8), root)
    by_slot = bool(getattr(shape, "by_slot", False))  # only a shape that says so
    stack = [(top, cut) for cut in reversed(_cuts(top, chunk, by_slot))]
    while stack:
        parents, rows = stack.pop()
        family = _family(parents.parent[rows], parents.tokens[rows])
        first = int(parents.parent[rows.start])
        prefixes = _grown(parents.prefixes, first, family)
        judged = shape.judged(prefixes)
        allowed = shape.children(prefixes)
        grows = bool(allowed.any())
        logits, past = step(parents.past, slice(first, first + family.c), family, prefixes.shape[1],
                            bool(judged.any()), grows)
        yield Visit(prefixes, judged, logits)
        if grows:
            below = _Parents(prefixes, past, *_nonzero(allowed))
            below.tokens = below.tokens.astype(prefixes.dtype)
            stack.extend((below, cut) for cut in reversed(_cuts(below, chunk, by_slot)))


def _cuts(parents: _Parents, chunk: int, by_slot: bool) -> list[slice]:
    """The batches a batch's children are walked in: runs of ``chunk`` in vocab order. Or, ``by_slot``, when they
    are more than a chunk, come from at least half a chunk of parents and every parent has as many: one batch per
    slot, each parent's k-th child, so that every child shares its parent's keys and values instead of a copy (its
    batch then holds one child of each parent: an only child's case)."""
    n, m = len(parents.tokens), len(parents.prefixes)
    if by_slot and n > chunk and 2 * m >= chunk and n % m == 0:
        width = n // m
        if (np.bincount(parents.parent, minlength=m) == width).all():
            return [slice(k, None, width) for k in range(width)]
    return [slice(start, start + chunk) for start in range(0, n, chunk)]


def shape_walk(shape: Shape, chunk: int = CHUNK) -> Iterator[Visit]:
    """The nodes alone, without a model: which prefixes the shape holds and which are judged (logits None)."""
    return walk(shape, lambda past, rows, family, length, logits, keep: (None, None), None, chunk)


def _nonzero(allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[n, n_vocab] bool -> np.nonzero's (rows, tokens), from the flat indices (a fraction of its cost)."""
    flat = np.flatnonzero(allowed)
    rows = flat // allowed.shape[1]
    return rows, flat - rows * allowed.shape[1]


def _parents(shape: Shape, prefixes: np.ndarray, past: Any) -> _Parents:
    parent, tokens = _nonzero(shape.children(prefixes))
    return _Parents(prefixes, past, parent, tokens.astype(np.uint8 if tokens.max(initial=0) < 256 else np.int64))


def _grown(prefixes: np.ndarray, first: int, family: Family) -> np.ndarray:
    """The children's prefixes [n, L]: their parents' ([c, L-1] from row ``first`` of ``prefixes``), then their own
    token; only children's parents are a slice, not an index."""
    out = np.empty((len(family.tokens), prefixes.shape[1] + 1), dtype=np.result_type(prefixes, family.tokens))
    if family.uniform and family.width == 1:
        out[:, :-1] = prefixes[first:first + family.c]
    else:
        out[:, :-1] = prefixes[first + family.parent]
    out[:, -1] = family.tokens
    return out


def _family(parent: np.ndarray, tokens: np.ndarray) -> Family:
    """Children (their parents' indices, non-decreasing, and tokens) -> a Family, parents numbered from 0."""
    parent = parent - parent[0]
    counts = np.bincount(parent)  # [c]: children per parent, none skipped (a parent here has at least one)
    width = int(counts.max())
    if len(parent) == len(counts) * width:  # every parent has as many: no slots needed
        return Family(tokens, parent, None, len(counts), width)
    slot = np.arange(len(parent)) - np.repeat(np.cumsum(counts) - counts, counts)  # [n]
    return Family(tokens, parent, slot, len(counts), width)


def node_sizes(model: Model, longest: int) -> tuple[int, int]:
    """Bytes per node of a batch, which size it: (its keys and values on a full path, its widest arrays while
    evaluated)."""
    positions = longest * longest  # key rows one node per level keeps on a full path, room included
    path = 8 * 2 * max(1, model.n_layer) * model.n_embd * positions
    wide = 8 * (4 * model.n_vocab + 2 * max(model.hidden, default=0) + 2 * model.n_head * (longest + 1)
                + 8 * model.n_embd)
    return path, wide


def batch_nodes(model: Model, longest: int, chunk: int = CHUNK) -> int:
    """Children per batch: at most ``chunk``, the path's keys and values within PATH_MEMORY, a batch's widest
    arrays within WIDE_MEMORY."""
    path, wide = node_sizes(model, longest)
    return max(1, min(chunk, PATH_MEMORY // path, WIDE_MEMORY // wide))
