"""A random sample of a domain's contexts, drawn without enumerating it (:func:`sample_contexts`).

Every context is equally likely, with replacement, as a target's sample is:

* ``strings``: a group (each input length, or the template's slots) is drawn
  weighted by how many inputs it has, then its drawn tokens uniformly — for
  ``distinct`` inputs, a random permutation's prefix — placed slot by slot;
* ``answer_so_far``: a group weighted by its inputs times the contexts each
  gives (one per token of its answer), an input drawn as above (one the rule
  does not answer is drawn again), then how much of the answer is so far,
  uniformly.
"""

from collections.abc import Iterator

import numpy as np

from handwired.errors import HandwiredError
from handwired.judge.kinds.domains import Domain

BATCH = 65536  # contexts drawn at a time
REDRAWS = 64  # rounds per batch of drawing again the inputs the rule does not answer, before giving up


def groups(domain: Domain) -> list[tuple[int, int, int]]:
    """(drawn tokens, input length, contexts per input) for each group of the domain's inputs."""
    inputs = domain.inputs
    lengths = [len(inputs.template)] if inputs.template is not None else list(inputs.lengths)
    return [(inputs.slots(k), k, 1 if domain.rule is None else domain.rule.answer_length(k)) for k in lengths]


def draw_inputs(domain: Domain, length: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` inputs of ``length`` tokens drawn uniformly [count, length]: the slots from the alphabet (a random
    permutation's prefix when distinct), the template's fixed tokens in place."""
    inputs = domain.inputs
    alphabet = np.array(inputs.alphabet)  # [a]
    drawn = inputs.slots(length)
    if inputs.distinct:
        picks = np.argsort(rng.random((count, len(alphabet))), axis=1)[:, :drawn]  # [count, drawn]
    else:
        picks = rng.integers(0, len(alphabet), (count, drawn))  # [count, drawn]
    if inputs.template is None:
        return alphabet[picks]  # [count, length]
    out = np.empty((count, length), dtype=np.int64)  # [count, length]
    slots = [i for i, t in enumerate(inputs.template) if t is None]
    out[:, slots] = alphabet[picks]
    for i, token in enumerate(inputs.template):
        if token is not None:
            out[:, i] = token
    return out


def _contexts(domain: Domain, length: int, per: int, count: int, rng: np.random.Generator) -> dict[int, np.ndarray]:
    """``count`` draws of one group's contexts, by context length (fewer when the rule does not answer an input)."""
    start = [] if domain.inputs.start is None else [np.full((count, 1), domain.inputs.start)]
    if domain.rule is None:
        row = np.concatenate([*start, draw_inputs(domain, length, count, rng)], axis=1)  # [count, L]
        return {row.shape[1]: row}
    body = draw_inputs(domain, length, count, rng)  # [count, length]
    answers, valid = domain.rule.answering(body)  # [count, A], [count]: an input it does not answer is no context
    body, answers, count = body[valid], answers[valid], int(valid.sum())
    so_far = rng.integers(0, per, count)  # [count]: answer tokens before the one judged
    full = np.concatenate([*start, body, np.full((count, 1), domain.rule.separator), answers[:, :per - 1]], axis=1)
    cut = full.shape[1] - (per - 1)  # the context's length with nothing of the answer so far
    return {cut + j: full[so_far == j, :cut + j] for j in np.unique(so_far).tolist()}


def sample_contexts(domain: Domain, sample: int, seed: int) -> Iterator[np.ndarray]:
    """``sample`` of the domain's contexts drawn uniformly with replacement, never enumerating it: batches of one
    length each [n, L], the same for the same seed. A draw of an input the rule does not answer is drawn again,
    group and all, so every context stays equally likely."""
    found = groups(domain)
    weights = np.array([float(domain.inputs.picks(drawn)) * per for drawn, _, per in found])  # exact up to rounding
    rng = np.random.default_rng(seed)
    dtype = np.min_scalar_type(domain.n_vocab)
    left = sample
    for _ in range(REDRAWS * (1 + sample // BATCH)):
        for (_, length, per), count in zip(found, rng.multinomial(min(left, BATCH), weights / weights.sum())):
            for _, rows in sorted(_contexts(domain, length, per, int(count), rng).items()) if count else ():
                left -= len(rows)
                yield rows.astype(dtype)
        if left == 0:
            return
    raise HandwiredError("domain: the rule answers too few of its inputs to draw a sample of its contexts")
