"""The workbench: one set of judged contexts, and the verdict of many variants of one model on it.

``sweep`` (a constant changed) and ``ablate`` (a part removed) judge many variants of a model on the same
contexts — a puzzle's, or every context by the file's target, as :mod:`handwired.judge.spread` finds them. The
contexts are walked as a trie of their prefixes, depth first in bounded batches, once for a group of variants
(:mod:`handwired.engine.resume`): each batch is judged by the rule once, the base model runs on it once, and every
variant resumes from the first stage it changes. A context passes as in ``check``: the right token's logit strictly
above every other token's, in float64. Nothing is kept per context: each verdict is tallied batch by batch.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from handwired.engine.logits import require_finite
from handwired.engine.memory import refuse_large
from handwired.engine.resume import VARIANT_MEMORY, groups, resumed, variant_walk
from handwired.engine.walk import EveryString, batch_nodes, walk_bytes
from handwired.errors import HandwiredError
from handwired.judge.contexts import MAX_RUN_SECONDS, duration, every_length, how_many, walk_seconds
from handwired.judge.domains import Domain
from handwired.judge.report import leads
from handwired.judge.rules import DECIDED
from handwired.judge.spread import Source
from handwired.weightfile import Model


@dataclass(frozen=True)
class Verdict:
    """A variant's verdict on the judged contexts."""

    passed: int
    failed: int
    worst: float  # the smallest lead over the judged contexts: the margin when none fails, else <= 0; nan: none
    worst_context: str  # where it is
    broken: int  # contexts the base model passes and this variant fails
    first_broken: str | None  # the shortest of them
    finite: bool = True  # False: some logit overflowed; every context counts as failed

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.finite


class _Tally:
    """One variant's verdict, batch by batch (batches come depth first: ties go to the shortest, then vocab
    order, as reports list contexts)."""

    def __init__(self) -> None:
        self.passed, self.total, self.broken, self.finite = 0, 0, 0, True
        self.worst: tuple | None = None  # (lead, length, tokens): the smallest lead below +inf, and where
        self.first_broken: tuple | None = None  # (length, tokens)

    def add(self, model: Model, contexts: np.ndarray, acceptable: np.ndarray, logits: np.ndarray,
            base: np.ndarray) -> None:
        """A batch of judged contexts [n, L], their acceptable tokens, the variant's logits, the base's passes."""
        try:
            require_finite(model, contexts, logits)
        except HandwiredError:
            self.finite = False
        lead = leads(logits, acceptable)  # [n]
        passes = lead > 0
        self.passed += int(passes.sum())
        self.total += len(lead)
        if len(lead) and lead.min() < np.inf:  # the first smallest of a batch in vocab order
            row = int(np.argmin(lead))
            here = (float(lead[row]), contexts.shape[1], tuple(contexts[row].tolist()))
            self.worst = here if self.worst is None else min(self.worst, here)
        newly = base & ~passes
        self.broken += int(newly.sum())
        if newly.any():
            shortest = (contexts.shape[1], tuple(contexts[int(np.argmax(newly))].tolist()))
            self.first_broken = min(self.first_broken or shortest, shortest)

    def verdict(self, model: Model, base_passed: int) -> Verdict:
        if not self.finite:
            return Verdict(0, self.total, np.nan, "", base_passed, None, False)
        worst = np.nan if not self.total else np.inf if self.worst is None else self.worst[0]
        where = "" if self.worst is None else model.decode(np.array(self.worst[2]))
        first = None if self.first_broken is None else model.decode(np.array(self.first_broken[1]))
        return Verdict(self.passed, self.total - self.passed, worst, where, self.broken, first)


class Bench:
    """A base model, the contexts it is judged on, and its variants' verdicts there."""

    def __init__(self, model: Model, source: Source) -> None:
        if source.rule is None:
            raise HandwiredError(f"{model.source}: nothing to judge by: give a puzzle, or a file with a target")
        self.model, self.source = model, source
        self.base: Verdict | None = None  # known after the first walk
        self.total = 0

    def shares_work(self, variant: Model) -> bool:
        """Whether the variant resumes past the embeddings, so that walking it beside others saves work."""
        return resumed(self.model, variant).stage > 0

    def verdicts(self, variants: Sequence[Model], tick: Callable[[int], None] = lambda done: None) -> list[Verdict]:
        """Each variant's verdict, evaluated from the first stage it changes, judged as ``check`` judges;
        ``tick(done)`` is told after each batch of each walk how many of the variants have their verdict."""
        plans = [resumed(self.model, variant) for variant in variants]
        out: list[Verdict] = []
        for group in groups(self.model, plans, batch_nodes(self.model, self.model.n_ctx)):
            chosen = [plans[i] for i in group]
            tallies = [_Tally() for _ in range(len(chosen) + 1)]  # the base model's first
            for visit, logits in variant_walk(self.model, chosen, self.source.shape):
                self._judge(visit, logits, chosen, tallies)
                tick(len(out))
            if self.base is None:
                self._set_base(tallies[0])
            base_passed = self.base.passed if self.base is not None else 0
            out += [tally.verdict(plan.model, base_passed) for tally, plan in zip(tallies[1:], chosen)]
            tick(len(out))
        return out

    def _judge(self, visit, logits: list[np.ndarray], chosen, tallies: list[_Tally]) -> None:
        if not visit.judged.any() or visit.logits is None:
            return
        contexts = visit.prefixes[visit.judged]
        judgement = self.source.rule.judge(contexts)
        decided = judgement.status == DECIDED  # [n]
        contexts, acceptable = contexts[decided], judgement.acceptable[decided]
        mine = visit.logits[visit.judged][decided]  # [n, n_vocab]
        base = leads(mine, acceptable) > 0  # [n]
        tallies[0].add(self.model, contexts, acceptable, mine, base)
        for tally, plan, theirs in zip(tallies[1:], chosen, logits):
            tally.add(plan.model, contexts, acceptable, theirs[visit.judged][decided], base)

    def _set_base(self, tally: _Tally) -> None:
        if not tally.total:
            raise HandwiredError(f"{self.model.source}: the rule judges none of these contexts")
        self.total = tally.total
        self.base = tally.verdict(self.model, tally.passed)


def size(model: Model, source: Source) -> tuple[int, int, int]:
    """The contexts, the prefixes walked and the longest context of ``source``, from its shape alone."""
    if isinstance(source.shape, Domain):
        contexts, nodes = source.shape.bound()
        return contexts, nodes, source.shape.longest
    assert isinstance(source.shape, EveryString), "a source is every string or a puzzle's domain"
    total = every_length(model.n_vocab, model.n_ctx)
    return total, total, model.n_ctx


def refuse_long(model: Model, source: Source, runs: int, what: str, instead: str, parameters=()) -> None:
    """Refuse ``runs`` walks of ``source``'s contexts (each a variant's verdict) estimated at more than
    MAX_RUN_SECONDS, or a walk whose memory is over MAX_MEMORY, before any runs."""
    contexts, nodes, longest = size(model, source)
    kept = walk_bytes(model, longest) + VARIANT_MEMORY  # the base model's path and batch, the variants' paths
    refuse_large(f"{what}: {how_many(contexts)} contexts at n_embd {model.n_embd}", kept, "; judge fewer contexts",
                 parameters)
    seconds = runs * walk_seconds(model, nodes, contexts)
    if seconds > MAX_RUN_SECONDS:
        raise HandwiredError(f"{what}: {runs:,} checks of {how_many(contexts)} contexts, about {duration(seconds)} "
                             f"for this model, more than the {duration(MAX_RUN_SECONDS)} handwired will spend on "
                             f"one; {instead}", parameters)
