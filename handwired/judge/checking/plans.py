"""Plans: which contexts a check runs and how it judges each.

* :func:`stream_plan`: every prefix of a long stream of the repeated pattern,
  each seen through the model's window of ``n_ctx`` tokens and judged against
  the token that really follows it (the published test, at any length);
* :func:`exhaustive_plan`: every context of every length the model can see,
  judged by a :class:`~handwired.judge.kinds.rules.Rule`, walked as the trie of its
  prefixes (:mod:`handwired.engine.walk`);
* :func:`sample_plan`: random contexts from that same set, for models too big
  to enumerate.

:func:`handwired.judge.checking.report.run` evaluates a plan and reports on it.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from handwired import budget
from handwired.defaults import MIN_LENGTH, SEED, STREAM_MIN_LENGTH, stream_length
from handwired.engine.arithmetic.floats import float_walk
from handwired.engine.certify import certified_contexts, certified_logits, certified_walk
from handwired.engine.cost import stream_bytes, stream_seconds
from handwired.engine.memory import refuse_large
from handwired.engine.parts import every_string
from handwired.engine.walk import Visit
from handwired.errors import HandwiredError, bad_value
from handwired.judge.checking.contexts import (
    BATCH,
    MAX_EXHAUSTIVE,
    MAX_EXHAUSTIVE_SECONDS,
    MAX_RUN_SECONDS,
    check_min_length,
    duration,
    every_length,
    how_many,
    random_contexts,
    refuse_every_context,
    refuse_large_domain,
    refuse_large_walk,
    refuse_sample,
)
from handwired.judge.kinds.domains import Domain
from handwired.judge.kinds.rules import DECIDED, Judgement, PatternRule, Rule
from handwired.judge.kinds.sampling import sample_contexts
from handwired.weightfile import Model
from handwired.weightfile.axes import shown


@dataclass(frozen=True)
class Batch:
    contexts: np.ndarray  # [n, n_seq] token ids, one length per batch
    judgement: Judgement
    logits: np.ndarray | None = None  # [n, n_vocab] when the plan has evaluated the contexts already
    radius: np.ndarray | None = None  # [n, n_vocab] with them when certified: each real logit within this of its float


@dataclass(frozen=True)
class Plan:
    description: str  # what is checked, for the report's first line
    rule: str  # how answers are judged
    total: int  # contexts the plan will run
    batches: Callable[[], Iterator[Batch]]
    proof: bool = False  # every batch carries certified bounds (handwired.engine.certify)
    sampled: bool = False  # a random sample: what it proves, it proves on the contexts drawn, not on every one
    # a plan that runs itself instead of yielding batches (a proof by cases): (show, progress, should_stop) -> Report
    runs: Callable[[int, Callable[[int, int], None] | None, Callable[[], bool]], Any] | None = None


def certified_batch(model: Model, contexts: np.ndarray, judgement: Judgement) -> Batch:
    """The batch with its certified logits and radii, each distinct context evaluated once."""
    rows = np.ascontiguousarray(contexts)
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    logits, radius = certified_logits(model, rows[first])
    return Batch(contexts, judgement, logits[inverse.ravel()], radius[inverse.ravel()])  # checked finite by run


def _split(model: Model, packed: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """A walk's logits [n, n_vocab], or the certified walk's [n, 2*n_vocab] -> (logits, radius or None)."""
    if packed.shape[1] == model.n_vocab:
        return packed, None
    return packed[:, :model.n_vocab], packed[:, model.n_vocab:]


def _stream(ids: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Tokens start…stop-1 of ids repeated forever, made only as far as needed."""
    return ids[np.arange(start, stop) % len(ids)]


def _windows(model: Model, ids: np.ndarray, length: int,
             min_length: int) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """(contexts, next tokens, where the first context starts in the stream) for every prefix of length >= min_length
    of the stream, cut to n_ctx."""
    for prefix in range(min_length, min(model.n_ctx, length)):  # the short prefixes at the start
        tokens = _stream(ids, 0, prefix + 1)
        yield tokens[None, :prefix], tokens[prefix:], 0
    # Then full windows, a batch at a time: prefix length `end` is predicting token `end`.
    for end in range(max(min_length, model.n_ctx), length, BATCH):
        stop = min(end + BATCH, length)
        segment = _stream(ids, end - model.n_ctx, stop)
        windows = np.lib.stride_tricks.sliding_window_view(segment[:-1], model.n_ctx)
        yield windows, segment[model.n_ctx :], end - model.n_ctx


def _stream_bounds(model: Model, ids: np.ndarray, length: int, min_length: int) -> Callable[[np.ndarray, int], tuple]:
    """The certified logits of every context of the stream, from one walk: the short prefixes at the start and the
    window at each phase of the pattern (a window of n_ctx tokens is the one ``len(ids)`` tokens further on).
    Returns (contexts, where the first starts) -> (logits, radius)."""
    short = [_stream(ids, 0, prefix)[None] for prefix in range(min_length, min(model.n_ctx, length))]
    phases = [_stream(ids, phase, phase + model.n_ctx) for phase in range(len(ids))] if length > model.n_ctx else []
    found = certified_contexts(model, short + ([np.array(phases)] if phases else []))

    def bounds(contexts: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray]:
        if contexts.shape[1] < model.n_ctx:  # a short prefix
            return found[contexts.shape[1] - min_length]
        phase = (start + np.arange(len(contexts))) % len(ids)
        return found[-1][0][phase], found[-1][1][phase]

    return bounds


def stream_plan(model: Model, pattern: str, length: int, min_length: int = STREAM_MIN_LENGTH,
                proof: bool = True) -> Plan:
    """Every prefix of ``pattern`` repeated to ``length`` tokens, judged by the token after it; ``proof``: with
    certified bounds."""
    ids = model.encode(pattern, "target").astype(np.min_scalar_type(model.n_vocab))
    if length < 2:
        raise bad_value("length", length, "expected at least 2 tokens")
    check_min_length(min_length, length - 1, "the stream's last prefix")
    seconds = stream_seconds(model, length, len(pattern), proof, BATCH)
    if seconds > budget.seconds(MAX_RUN_SECONDS):
        raise HandwiredError(f"{{length}} {length:,}: about {duration(seconds)} of checking for this model, more than "
                             f"the {duration(budget.seconds(MAX_RUN_SECONDS))} handwired will spend on one; ask for a "
                             f"shorter stream{budget.more_time(seconds)}", ("length", *budget.TIME))
    refuse_large(f"{{length}} {length:,} of a pattern of {len(pattern):,} tokens",
                 stream_bytes(model, length, len(pattern), proof, BATCH), "; ask for a shorter stream", ("length",))
    total = max(0, length - min_length)

    def batches() -> Iterator[Batch]:
        bounds = _stream_bounds(model, ids, length, min_length) if proof else None
        for contexts, following, start in _windows(model, ids, length, min_length):
            acceptable = np.zeros((len(following), model.n_vocab), dtype=bool)
            acceptable[np.arange(len(following)), following] = True
            status = np.full(len(following), DECIDED, dtype=np.int8)
            judgement = Judgement(status, acceptable)
            yield Batch(contexts, judgement) if bounds is None else Batch(contexts, judgement,
                                                                           *bounds(contexts, start))

    shown = pattern * (1 + 12 // len(pattern))
    return Plan(
        description=f"every prefix of length {min_length}…{length - 1} of {shown[:12]}… ({length:,} tokens), "
        f"each seen through the last {model.n_ctx} tokens",
        rule="the token that follows it in the stream",
        total=total,
        batches=batches,
        proof=proof,
    )


def pattern_rule(model: Model, pattern: str) -> PatternRule:
    """The rule of a repeating ``pattern`` over the model's vocab, at every phase."""
    return PatternRule(model.encode(pattern, "target"), model.n_vocab, pattern)


SAMPLE_INSTEAD = ("check a random sample instead, e.g. {sample} 1000000 {seed} 0", ("sample", "seed"))


def exhaustive_plan(model: Model, rule: Rule, min_length: int = MIN_LENGTH, limit: int = MAX_EXHAUSTIVE,
                    max_seconds: float = MAX_EXHAUSTIVE_SECONDS,
                    instead: tuple[str, tuple[str, ...]] = SAMPLE_INSTEAD, proof: bool = True) -> Plan:
    """Every context of length min_length…n_ctx over the vocab, walked as the trie of its prefixes (on several
    threads when they are many); ``proof``: with certified bounds, on the same walk.

    Refused when it would take more than about ``max_seconds`` (cost.exhaustive_seconds) or count more than
    ``limit``, the message ending with what to do ``instead`` (its text, and the parameters it names).
    """
    total = refuse_every_context(model, instead[0], instead[1], min_length, limit, max_seconds, proof)
    return _walk_plan(model, lambda: _every_string(model, min_length, proof), rule,
                      f"every context of length {min_length}…{model.n_ctx} over {', '.join(map(shown, model.vocab))} "
                      f"({total:,} contexts)", total, proof)


def sample_plan(model: Model, rule: Rule, sample: int, seed: int = SEED, min_length: int = MIN_LENGTH,
                proof: bool = True) -> Plan:
    """``sample`` contexts drawn uniformly (with replacement) from the exhaustive set; ``proof``: certified."""
    draw = random_contexts(model, sample, seed, min_length, proof)

    def batches() -> Iterator[Batch]:
        for contexts in draw():
            yield certified_batch(model, contexts, rule.judge(contexts)) if proof else Batch(contexts,
                                                                                            rule.judge(contexts))

    return Plan(
        description=f"{sample:,} random contexts of length {min_length}…{model.n_ctx} (seed {seed})",
        rule=rule.description,
        total=sample,
        batches=batches,
        proof=proof,
        sampled=True,
    )


def domain_sample_plan(model: Model, domain: Domain, rule: Rule, sample: int, seed: int = SEED,
                       proof: bool = True) -> Plan:
    """``sample`` contexts drawn uniformly (with replacement) from a puzzle's domain without enumerating it
    (handwired.judge.kinds.sampling), each judged by the rule; ``proof``: certified. Refused before anything is drawn
    when it would take too long or too much memory."""
    refuse_sample(model, sample, seed, proof, domain.longest)

    def batches() -> Iterator[Batch]:
        for contexts in sample_contexts(domain, sample, seed):
            judgement = rule.judge(contexts)
            yield certified_batch(model, contexts, judgement) if proof else Batch(contexts, judgement)

    return Plan(f"{sample:,} random contexts of the domain: {domain.description} (seed {seed})", rule.description,
                sample, batches, proof, sampled=True)


def domain_plan(model: Model, domain: Domain, rule: Rule, proof: bool = True) -> Plan:
    """Every context of a puzzle's domain, its trie walked depth first in bounded batches (nothing outside it is
    run); ``proof``: with certified bounds, on the same walk. Refused, before anything is evaluated, when it would
    take too long or too much memory."""
    refuse_large_domain(model, domain, proof=proof)
    walker = certified_walk if proof else float_walk
    return _walk_plan(model, lambda: walker(model, domain), rule, f"every context of the domain: "
                      f"{domain.description} ({domain.size:,} contexts)", domain.size, proof)


def every_string_plan(model: Model, rule: Rule, proof: bool = True) -> Plan:
    """Every context of length 1…n_ctx walked as the trie of its prefixes, estimated as a walk (whatever the
    vocabulary); ``proof``: with certified bounds. Refused, before anything is evaluated, when it would take too
    long or too much memory."""
    total = every_length(model.n_vocab, model.n_ctx)
    what = f"every context: {model.n_vocab}^1 + … + {model.n_vocab}^{model.n_ctx} = {how_many(total)} contexts"
    refuse_large_walk(model, what, total, total, model.n_ctx, "check",
                      "a puzzle is judged on every one of its contexts, so only a statement with a smaller vocab or "
                      "n_ctx (or a domain) makes the check shorter", proof, every_string=True)
    return _walk_plan(model, lambda: _every_string(model, 1, proof), rule,
                      f"every context of length 1…{model.n_ctx} over {', '.join(map(shown, model.vocab))} "
                      f"({total:,} contexts)", total, proof)


def _every_string(model: Model, min_length: int, proof: bool) -> Iterator[Visit]:
    if proof:
        return every_string(model, lambda shape: certified_walk(model, shape), min_length)
    return every_string(model, lambda shape: float_walk(model, shape), min_length)


def _walk_plan(model: Model, visits: Callable[[], Iterator[Visit]], rule: Rule, description: str, total: int,
               proof: bool) -> Plan:
    def batches() -> Iterator[Batch]:
        for visit in visits():  # a batch of one length, in vocab order
            if visit.judged.any() and visit.logits is not None:  # a batch with a judged node has its logits
                every = visit.judged.all()  # (then no copies)
                contexts = visit.prefixes if every else visit.prefixes[visit.judged]
                yield Batch(contexts, rule.judge(contexts),
                            *_split(model, visit.logits if every else visit.logits[visit.judged]))

    return Plan(description=description, rule=rule.description, total=total, batches=batches, proof=proof)


def chosen_plan(model: Model, target: str | None = None, length: int | None = None, exhaustive: bool = False,
                sample: int | None = None, seed: int = SEED, min_length: int | None = None,
                puzzle: str | None = None, proof: bool = True) -> Plan:
    """The plan ``check`` asks for: a stream of the target (the default: the file's), every context, or a sample.
    ``puzzle``: the puzzle the file is named after, suggested when it has no target; ``proof``: with certified
    bounds."""
    pattern = target if target is not None else model.target  # target '' is a mistake, not "the file's"
    if pattern is None:
        named = f", or judge it by the puzzle it is named after with {{puzzle}} {puzzle}" if puzzle else ""
        raise HandwiredError(f"{model.source}: has no 'target'; give one as {{target}}, "
                             f"e.g. {{target}} {model.vocab[0] * 2}{named}", ("target", "puzzle"))
    if exhaustive and sample is not None:
        raise HandwiredError("{exhaustive} and {sample}: choose one", ("exhaustive", "sample"))
    if (exhaustive or sample is not None) and length is not None:
        raise HandwiredError("{length} is for a stream check; {exhaustive} and {sample} choose their own contexts",
                             ("length", "exhaustive", "sample"))
    if exhaustive:
        return exhaustive_plan(model, pattern_rule(model, pattern), MIN_LENGTH if min_length is None else min_length,
                               proof=proof)
    if sample is not None:
        return sample_plan(model, pattern_rule(model, pattern), sample, seed,
                           MIN_LENGTH if min_length is None else min_length, proof)
    return stream_plan(model, pattern, stream_length(pattern) if length is None else length,
                       STREAM_MIN_LENGTH if min_length is None else min_length, proof)
