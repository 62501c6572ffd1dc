"""A plan proved by cases: every context of a domain (or every string) judged by branch and bound over sets of
contexts (:mod:`handwired.judge.checking.cases`), never one by one; what :func:`handwired.judge.judging.decide`
chooses for a domain too large to walk whose rule can say over cases, and for any such domain when asked.

Its cost is not known before it runs (how many cases depends on the model and the rule), so it is estimated where it
can be: the first cases (one per input length and answer token) must fit the budget's time and the largest batch of
cases its memory, else it is refused before anything runs. It then runs until it is proved, a counterexample is
found and everything else judged, or the budget's seconds are spent (by default :data:`MAX_RUN_SECONDS`, as a sample,
a stream or a sweep: a proof by cases has no quicker alternative that is a verdict), when it stops: not proved, the
cases left and the contexts they cover in the report. Ctrl-C stops it the same way, interrupted. A model that fails
is not split all the way down: once a batch of single contexts holds a counterexample, it stops, the shortest
counterexamples found so far named and what is left counted.
"""

from dataclasses import replace

import numpy as np

from handwired import budget
from handwired.engine.arithmetic.cases import CHUNK
from handwired.engine.batch import next_logits_distinct
from handwired.engine.cost import case_bytes, case_seconds
from handwired.engine.forward import softmax
from handwired.engine.logits import top_token
from handwired.engine.memory import refuse_large
from handwired.errors import HandwiredError, Note
from handwired.judge.checking.cases import Space, prove, size, space_of
from handwired.judge.checking.contexts import MAX_RUN_SECONDS, duration, how_many
from handwired.judge.checking.plans import Plan
from handwired.judge.checking.report import Failure, Report
from handwired.judge.kinds.domains import Domain
from handwired.judge.kinds.rules import Rule
from handwired.weightfile import Model
from handwired.weightfile.axes import shown

SLOWING = 4  # a stopped proof's time to go on, against its pace so far (in contexts proved): later cases split deeper


def can_say(rule: Rule, space: Space) -> bool:
    """Whether the rule says what is right over a case of the space (else every case would split down to single
    contexts, which the walk judges faster): a kind with ``over_cases``, on inputs that need not be distinct."""
    return hasattr(rule, "over_cases") and not space.distinct


def cases_plan(model: Model, rule: Rule, domain: Domain | None, min_length: int = 1, what: str = "",
               why: tuple[str, ...] = ("by_cases",)) -> Plan:
    """Every context of ``domain`` (None: every string of length min_length…n_ctx) proved by cases, judged by
    ``rule``; refused when the rule cannot say over cases (``why``: the parameters that asked for it), or when the
    first cases would not fit the budget."""
    space = space_of(domain, model.n_vocab, model.n_ctx, min_length)
    if not can_say(rule, space):
        asked = " ".join("{" + name + "}" for name in why)
        raise HandwiredError(f"{asked}: the rule ({rule.description}) cannot say what is right over a set of "
                             f"contexts{' of distinct tokens' if space.distinct else ''}, so every case would split "
                             "down to single contexts, which the walk judges faster: check without it", why)
    total = size(space)
    longest = max(space.first(group).shape[1] for group in space.groups())
    seconds = case_seconds(model, len(space.groups()), longest)
    allowed = budget.seconds(MAX_RUN_SECONDS)
    if seconds > allowed:
        raise HandwiredError(f"proof by cases of {how_many(total)} contexts: its first {len(space.groups()):,} cases "
                             f"alone take about {duration(seconds)} for this model, more than the {duration(allowed)} "
                             f"handwired will spend on one{budget.more_time(seconds)}", (*why, *budget.TIME))
    refuse_large(f"proof by cases of contexts of up to {longest:,} tokens", case_bytes(model, longest, CHUNK),
                 "; give the statement shorter contexts", why)
    if domain is not None:
        what = what or f"every context of the domain: {domain.description}"
    else:
        what = what or f"every context of length {min_length}…{model.n_ctx} over {', '.join(map(shown, model.vocab))}"
    description = f"{what} ({total:,} contexts), by cases"

    def runs(show, progress, should_stop) -> Report:
        proof = prove(model, rule, space, description, total, show, should_stop=should_stop,
                      seconds=budget.seconds(MAX_RUN_SECONDS), progress=progress, stop_at_failure=True)
        report = proof.report
        report.failures = [confirmed(model, failure) for failure in report.failures]
        return report

    return Plan(description, rule.description, total, batches=lambda: iter(()), proof=True, runs=runs)


def confirmed(model: Model, failure: Failure) -> Failure:
    """A counterexample found by cases (judged by the certified walk's float mids), its numbers taken again from
    forward.py's float pass, which the failure's views follow through the model."""
    logits = next_logits_distinct(model, model.encode(failure.context, "context")[None])[0]
    acceptable = np.isin(np.arange(model.n_vocab), [model.vocab.index(token) for token in failure.acceptable])
    predicted, tied = top_token(logits)
    return replace(failure, logits=logits, probs=softmax(logits), predicted=model.vocab[predicted], tied=tied,
                   right=int(np.argmax(np.where(acceptable, logits, -np.inf))),
                   wrong=int(np.argmax(np.where(acceptable, -np.inf, logits))))


def spent_note(report: Report) -> Note | None:
    """When a proof by cases stopped because the time allowed was spent: how much it proved, and how to allow more
    (the pace so far, projected over the contexts left); else None."""
    cases = report.cases
    if cases is None or not cases.spent:
        return None
    allowed = budget.seconds(MAX_RUN_SECONDS)
    done = report.checked / report.total if report.total else 0.0
    # the contexts' pace so far, times SLOWING: the later cases are the ones that split deeper
    projected = SLOWING * allowed / done if done > 0 else SLOWING * allowed
    return Note(f"the proof by cases stopped when the time allowed ({duration(allowed)}) was spent, with {done:.1%} "
                f"of its contexts proved{budget.more_time(projected).replace('or allow it', 'allow more')}",
                budget.TIME)
