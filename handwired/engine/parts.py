"""A trie walked in parts, on threads if asked (WORKERS): every string of every length, as a check walks it.

The walk (:mod:`handwired.engine.walk`) is depth first, one batch after another. Every string over a vocabulary is
the widest trie, n_vocab children to a node, and its subtrees below the first few tokens are alike: each part
walks those below some of the prefixes of the first ``top`` tokens (:class:`Part`), each on a thread of its own
(numpy releases the GIL in its loops), and the caller gets a batch from each part in turn, in a fixed order. Each
part's walk has its own step and its own rooms: nothing is shared but the weights, which nothing writes.
"""

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from handwired import budget
from handwired.engine.cost import walk_bytes
from handwired.engine.walk import EveryString, Shape, Visit
from handwired.weightfile import Model

# Threads walking the parts of a trie side by side: one. A walk's step is many small numpy calls, and threads wait on
# each other's (the GIL): measured on a quiet 2-core machine (2026-12-06), two threads took 1.0-1.7x the wall time of
# one and 1.3-2.3x its CPU time (induction's float check 0.126 s against 0.075 s; an n_ctx-20 model's check 47.7 s
# against 33.6 s), and gained 7% of wall time at best (n_embd 256, proved) for 50% more CPU. The parts stay: their
# walk is tested against the whole one, and a wider model on more cores may want them.
WORKERS = 1
PARALLEL_FROM = 20_000  # judged contexts: below this, threads cost more than they save
QUEUE = 8  # batches a thread may compute ahead of the consumer


@dataclass(frozen=True)
class Part:
    """The nodes of ``shape`` on and below its prefixes of length ``top`` whose number (base n_vocab, first token
    most significant) is ``index`` modulo ``parts``: one of ``parts`` walks that share the trie. Each walks the few
    shorter nodes too; the first part alone judges them."""

    shape: Shape
    n_vocab: int
    top: int
    index: int
    parts: int

    @property
    def by_slot(self) -> bool:
        return bool(getattr(self.shape, "by_slot", False))

    def children(self, prefixes: np.ndarray) -> np.ndarray:
        allowed = self.shape.children(prefixes)
        if prefixes.shape[1] != self.top - 1:
            return allowed
        number = np.zeros(len(prefixes), dtype=np.int64)  # each prefix's number, modulo parts
        for column in prefixes.T:
            number = (number * self.n_vocab + column) % self.parts
        return allowed & ((number[:, None] * self.n_vocab + np.arange(self.n_vocab)) % self.parts == self.index)

    def judged(self, prefixes: np.ndarray) -> np.ndarray:
        judged = self.shape.judged(prefixes)
        return judged if self.index == 0 or prefixes.shape[1] >= self.top else np.zeros_like(judged)


def every_string(model: Model, walker: Callable[[Shape], Iterator[Visit]], min_length: int = 1) -> Iterator[Visit]:
    """Every string of length 1…n_ctx walked as a check walks it (those from ``min_length`` judged) by ``walker``
    (:func:`handwired.engine.arithmetic.floats.float_walk` or the certified walk, given a shape): its wide batches cut
    by slot, in parts on threads when it judges many contexts and WORKERS allows (:func:`workers`)."""
    n_vocab, n_ctx = model.n_vocab, model.n_ctx
    contexts = sum(n_vocab**length for length in range(min_length, n_ctx + 1))
    return side_by_side(walker, EveryString(n_vocab, n_ctx, min_length, by_slot=True), n_vocab, n_ctx,
                        workers(model, contexts, n_ctx))


def workers(model: Model, contexts: int, longest: int) -> int:
    """Threads for a walk judging ``contexts`` contexts of at most ``longest`` tokens: WORKERS from PARALLEL_FROM
    contexts on, when that many walks fit the budget's memory side by side (:func:`walk_bytes` each); else 1."""
    many = WORKERS if contexts >= PARALLEL_FROM else 1
    return many if many * walk_bytes(model, longest) <= budget.memory() else 1


def side_by_side(walker: Callable[[Shape], Iterator[Visit]], shape: Shape, n_vocab: int, longest: int,
                 parts: int) -> Iterator[Visit]:
    """The visits of ``walker(shape)``, from ``parts`` walks of its :class:`Part` s, each on a thread of its own, a
    batch from each in turn: the order is fixed, not the trie's. The parts split the prefixes of the fewest first
    tokens that share out evenly (as many of them to each part, or at least 8 a part); one walk when there are fewer
    than 2 parts or tokens, or no such prefixes shorter than ``longest``."""
    top = 1
    while n_vocab**top % max(1, parts) and n_vocab**top < 8 * parts and top + 1 < longest:
        top += 1
    if parts < 2 or n_vocab < 2 or top >= longest:
        return walker(shape)
    return in_threads([walker(Part(shape, n_vocab, top, i, parts)) for i in range(parts)])


_DONE = object()


def in_threads(walks: list[Iterator[Visit]]) -> Iterator[Visit]:
    """Run each walk on a thread of its own (numpy releases the GIL in its loops); yield a batch from each in
    turn. Stopping early (Ctrl-C, an error) stops the threads at their next batch; an error in one reaches here."""
    stop = threading.Event()
    queues: list[queue.Queue] = [queue.Queue(maxsize=QUEUE) for _ in walks]

    def put(out: queue.Queue, item) -> None:
        while not stop.is_set():
            try:
                return out.put(item, timeout=0.1)
            except queue.Full:
                continue

    def work(visits: Iterator[Visit], out: queue.Queue) -> None:
        try:
            for visit in visits:
                if stop.is_set():
                    return
                put(out, visit)
            put(out, _DONE)
        except BaseException as error:  # handed to the consumer, which raises it
            put(out, error)

    for visits, out in zip(walks, queues):
        threading.Thread(target=work, args=(visits, out), daemon=True, name="handwired-walk").start()
    try:
        active = list(queues)
        while active:
            for out in list(active):
                item = out.get()
                if item is _DONE:
                    active.remove(out)
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
    finally:
        stop.set()  # the consumer stopped early: the threads stop at their next batch
