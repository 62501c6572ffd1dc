"""The workbench: one set of judged contexts, and the verdict of many variants of one model on it.

``sweep`` (a constant changed) and ``ablate`` (a part removed) judge many variants of a model on the same
contexts — a puzzle's, or every context by the file's target, as :mod:`handwired.judge.spread` finds them. The
contexts are judged by the rule once; the variants are evaluated over the contexts' prefix trie, sharing every
stage of the forward pass they do not change (:mod:`handwired.engine.resume`). A context passes as in ``check``:
the right token's logit strictly above every other token's, in float64.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from handwired.engine.logits import require_finite
from handwired.engine.memory import refuse_large
from handwired.engine.resume import share, shared_stages, variant_logits
from handwired.engine.trie import build_trie
from handwired.errors import HandwiredError
from handwired.judge.contexts import MAX_RUN_SECONDS, duration, estimated_seconds, how_many
from handwired.judge.report import leads
from handwired.judge.rules import DECIDED
from handwired.judge.spread import Source
from handwired.weightfile import Model

MAX_SHARES = 4  # evaluations of the base model kept for its variants to resume from


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


class Bench:
    """A base model, the contexts it is judged on, and what its variants share with it."""

    def __init__(self, model: Model, source: Source, variants: Sequence[Model] = ()) -> None:
        if source.rule is None:
            raise HandwiredError(f"{model.source}: nothing to judge by: give a puzzle, or a file with a target")
        self.model, self.source = model, source
        self.trie = source.trie if source.trie is not None else build_trie(list(source.contexts))
        self.lengths = {batch.shape[1] for batch in source.contexts}
        self.judged = []  # per batch, its decided contexts [n, L], their acceptable tokens [n, n_vocab], trie rows [n]
        for batch in source.contexts:
            judgement = source.rule.judge(batch)
            decided = judgement.status == DECIDED
            self.judged.append((batch[decided], judgement.acceptable[decided], self.trie.find(batch[decided])))
        self.total = sum(len(contexts) for contexts, _, _ in self.judged)
        if not self.total:
            raise HandwiredError(f"{model.source}: the rule judges none of these contexts")
        stages = sorted({shared_stages(model.params, variant.params) for variant in variants} or {0})
        if len(stages) > MAX_SHARES:  # each is one evaluation of the model, and its memory: the latest few
            stages = stages[:1] + stages[1 - MAX_SHARES:]
        self.shares = [share(model, self.trie, stage, self.lengths) for stage in stages]
        logits = list(self.shares[0].logits)
        self._base_passes = [lead > 0 for lead in self._leads(logits, model)[0]]
        self.base = self._verdict(logits, model)

    def verdict(self, variant: Model) -> Verdict:
        """The variant's verdict: evaluated from the first stage it changes, judged as ``check`` judges."""
        same = shared_stages(self.model.params, variant.params)
        shared = max((s for s in self.shares if s.stage <= same), key=lambda s: s.stage, default=self.shares[0])
        return self._verdict(variant_logits(shared, variant, self.trie, self.lengths, self.model), variant)

    def _leads(self, logits: list, variant: Model) -> tuple[list[np.ndarray], bool]:
        """Each judged context's lead [n] per batch, and whether every logit is a number."""
        out, finite = [], True
        for contexts, acceptable, rows in self.judged:
            level = logits[contexts.shape[1] - 1][rows]  # [n, n_vocab]
            try:
                require_finite(variant, contexts, level)
            except HandwiredError:
                finite = False
            out.append(leads(level, acceptable))  # [n]
        return out, finite

    def _verdict(self, logits: list, variant: Model) -> Verdict:
        lead, finite = self._leads(logits, variant)
        if not finite:
            return Verdict(0, self.total, np.nan, "", sum(int(p.sum()) for p in self._base_passes), None, False)
        passed, worst, worst_context, broken, first_broken = 0, np.inf, "", 0, None
        for (contexts, _, _), batch, base in zip(self.judged, lead, self._base_passes):
            passed += int((batch > 0).sum())
            if len(batch) and batch.min() < worst:  # the first smallest: batches run shortest first, in vocab order
                row = int(np.argmin(batch))
                worst, worst_context = float(batch[row]), variant.decode(contexts[row])
            newly = base & ~(batch > 0)
            broken += int(newly.sum())
            if first_broken is None and newly.any():
                first_broken = variant.decode(contexts[int(np.argmax(newly))])
        return Verdict(passed, self.total - passed, worst, worst_context, broken, first_broken)


def refuse_long(model: Model, source: Source, runs: int, what: str, instead: str, parameters=()) -> None:
    """Refuse ``runs`` checks of ``source``'s contexts estimated at more than MAX_RUN_SECONDS, before any runs."""
    contexts = sum(len(batch) for batch in source.contexts)
    # every prefix's keys and values in each block, twice (the base model's and a variant's), and what is shared
    nodes = source.trie.nodes if source.trie is not None else sum(batch.size for batch in source.contexts)  # or fewer
    kept = nodes * model.n_embd * 8 * (4 * model.n_layer + 2 * MAX_SHARES)  # bytes
    refuse_large(f"{what}: {how_many(contexts)} contexts at n_embd {model.n_embd}", kept, "; judge fewer contexts",
                 parameters)
    seconds = runs * estimated_seconds(model, contexts)
    if seconds > MAX_RUN_SECONDS:
        raise HandwiredError(f"{what}: {runs:,} checks of {how_many(contexts)} contexts, about {duration(seconds)} "
                             f"for this model, more than the {duration(MAX_RUN_SECONDS)} handwired will spend on "
                             f"one; {instead}", parameters)
