"""Rules over cases: what the right next token is for every context of a case at once, or that it must be split.

A rule kind that can say implements ``over_cases(inputs, so_far)``: ``inputs`` [n, k, n_vocab] bool, the tokens
each case's input may hold at each of its k positions (the domain's start token and separator aside), ``so_far`` the
answer tokens the contexts hold after the separator (None: a ``strings`` domain, no answer). It returns, per case,
the one right token (-1: it cannot say, the case is split), the tokens each answer-so-far position may hold
([n, so_far, n_vocab] bool, a superset of those it does: what the case's embedding is the hull of; None without an
answer), and the input position whose set matters most to it (-1: no preference). A kind without the method cannot
say: its cases split down to single contexts (:mod:`handwired.judge.checking.cases`).
"""

import numpy as np

NONE = -1


def sum_over_cases(rule, inputs: np.ndarray, so_far: int, constraints: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``sum`` rule over cases of inputs ``A+B`` (digit sets at each place): the answer's digit at place P
    (10^P) is (a_P + b_P + c_P) mod 10, and the carries a case can reach are followed up from place 0 (a carry
    into p+1 is possible when some digits of p and a possible carry into p reach 10, or stay below it), so a digit is
    often fixed with the lower places still sets. Written least significant first, the answer so far holds the lower
    places' digits: ``constraints`` [n, so_far, V], the tokens a case allows there (split on), narrow the carries
    too. Decided only where every input is a sum the width holds. The position to split, in the body's positions
    (input 0…k-1, the separator k, answer token j at k+1+j): the predicted place's digits, the place below's, then
    (least significant first) the answer so far's digit there, else the highest lower place still a set."""
    n, k, _ = inputs.shape
    answer, split = np.full(n, NONE), np.full(n, NONE)
    derived = np.ones((n, so_far, inputs.shape[2]), dtype=bool)
    plus = _plus(rule, inputs)
    for q in np.unique(plus[plus > 0]).tolist():
        rows = np.flatnonzero(plus == q)
        if q < k - 1:
            allowed = None if constraints is None else constraints[rows]
            _decide(rule, inputs[rows], q, so_far, allowed, (answer, derived, split), rows)
    return answer, derived, split


def _columns(rule, inputs: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray]:
    values = inputs[:, :, list(rule.digits)]  # [m, k, 10]: the digit values each position may hold
    return values[:, :q][:, ::-1], values[:, q + 1:][:, ::-1]  # places 0, 1, …: [m, places, 10]


def _decide(rule, inputs, q, so_far, allowed, out, rows) -> None:
    answer, derived, split = out
    left, right = _columns(rule, inputs, q)
    width, least = rule.width, getattr(rule, "least_first", False)
    hi = [_number(part, 9 - np.argmax(part[:, :, ::-1], axis=2)) for part in (left, right)]
    valid = hi[0] + hi[1] < 10**width  # every input of the case has an answer
    place_of = (lambda i: i) if least else (lambda i: width - 1 - i)
    target = place_of(so_far)
    ids = np.array(rule.digits)
    digits, _ = _follow(left, right, target + 1 if least else width, _by_place(allowed, place_of, least, ids))
    for i in range(so_far):
        derived[rows, i] = False
        derived[rows[:, None], i, ids[None]] = digits[place_of(i)]
    one = valid & (digits[target].sum(axis=1) == 1)
    if least and target > 0:  # judged once the place below is fixed too: what a model reads for the carry (a
        one &= (_place(left, target - 1).sum(axis=1) == 1) & (_place(right, target - 1).sum(axis=1) == 1)  # case
        # judged before then is rarely proved, and split the same way after)
    answer[rows[one]] = ids[np.argmax(digits[target][one], axis=1)]
    below = digits.get(target - 1) if least and 0 < target <= so_far else None
    split[rows] = _matters(left, right, target, (q, inputs.shape[1]), below)


def _by_place(allowed, place_of, least, ids):  # the answer so far's constraints by place, [m, 10] over digit values
    if allowed is None or not least:  # (most significant first, they are the higher places: not followed)
        return {}
    return {place_of(i): allowed[:, i][:, ids] for i in range(allowed.shape[1])}


def _follow(left, right, places, allowed) -> tuple[dict, dict]:
    """The digits each place may hold and the carries into it ([m, 10], [m, 2] bool per place), followed up from
    place 0 (carry 0), a constrained place keeping only the digits its constraint allows."""
    m = len(left)
    carry = np.zeros((m, 2), dtype=bool)
    carry[:, 0] = True
    digits, carries = {}, {}
    for p in range(places):
        carries[p] = carry
        pairs = (_place(left, p)[:, :, None] & _place(right, p)[:, None, :]).reshape(m, 100)
        digit, out = np.zeros((m, 10), dtype=bool), np.zeros((m, 2), dtype=bool)
        for c in (0, 1):
            total = (np.arange(10)[:, None] + np.arange(10)[None]).ravel() + c  # [100]
            hit = pairs & carry[:, c:c + 1]
            if p in allowed:
                hit &= allowed[p][:, total % 10]
            for s in range(c, 19 + c):
                any_ = hit[:, total == s].any(axis=1)
                digit[:, s % 10] |= any_
                out[:, int(s >= 10)] |= any_
        digits[p], carry = digit, out
    carries[places] = carry
    return digits, carries


def _plus(rule, inputs: np.ndarray) -> np.ndarray:
    """[n, k, V] -> [n]: the position of the plus where it is the only token there and every other position holds
    digits alone (-1 else)."""
    digits = np.zeros(inputs.shape[2], dtype=bool)
    digits[list(rule.digits)] = True
    only_plus = inputs[:, :, rule.plus] & (inputs.sum(axis=2) == 1)  # [n, k]
    all_digits = ~(inputs & ~digits).any(axis=2)  # [n, k]
    ok = (only_plus.sum(axis=1) == 1) & (only_plus | all_digits).all(axis=1)
    return np.where(ok, np.argmax(only_plus, axis=1), NONE)


def _number(places: np.ndarray, digit: np.ndarray) -> np.ndarray:  # [m, p, 10], [m, p] -> [m]: Σ digit·10^place
    return (digit * 10 ** np.arange(places.shape[1], dtype=np.int64)).sum(axis=1) if places.shape[1] else np.zeros(
        len(places), dtype=np.int64)


def _place(part: np.ndarray, place: int) -> np.ndarray:  # [m, places, 10] -> [m, 10]: the digits at ``place``
    if place < part.shape[1]:
        return part[:, place]
    out = np.zeros((len(part), 10), dtype=bool)
    out[:, 0] = True  # beyond the number's digits: 0
    return out


def _matters(left, right, target, shape, below) -> np.ndarray:
    """[m]: the body position to split: the predicted place's digits, then the place below's, then (least
    significant first) the answer so far's digit at the place below (``below``, the digits it may hold), then the
    lower places from the highest; at each, the larger set (-1: every one fixed)."""
    q, k = shape
    sizes = []  # (sizes [m], body position) in order
    for p in [target, target - 1, None, *range(target - 2, -1, -1)]:
        if p is None:
            if below is not None:
                sizes.append((below.sum(axis=1), k + target))  # answer token j = target - 1 sits at k + 1 + j
            continue
        if p < 0:
            continue
        pair = [(part[:, p].sum(axis=1), pos) for part, pos in ((left, q - 1 - p), (right, k - 1 - p))
                if p < part.shape[1]]
        pair.sort(key=lambda each: -int(each[0].max()))
        sizes.extend(pair)
    out = np.full(len(left), NONE)
    for size, position in reversed(sizes):  # the first in order that is a set wins
        out = np.where(size > 1, position, out)
    return out


def max_over_cases(inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``max`` rule over cases: every context's latest token is the same, M, when some position can hold
    nothing below M while no position holds more (max over positions of their smallest = max of their largest).
    -> ([n] M or -1, [n] the position to split: the largest set among those that may hold the top token)."""
    n, k, v = inputs.shape
    tokens = np.arange(v)
    smallest = np.where(inputs, tokens, v).min(axis=2).max(axis=1)  # [n]
    largest = np.where(inputs, tokens, -1).max(axis=2)  # [n, k]
    top = largest.max(axis=1)
    answer = np.where(smallest == top, top, NONE)
    sizes = np.where(largest == top[:, None], inputs.sum(axis=2), 0)  # [n, k]
    split = np.where(sizes.max(axis=1) > 1, k - 1 - np.argmax(sizes[:, ::-1], axis=1), NONE)
    return answer, split


def latest_token(sets: np.ndarray) -> np.ndarray:
    """[n, V] bool (each set non-empty) -> [n, V] bool: each set's latest token alone, what the ``max`` rule splits
    off a position's set (the rest, every token below it, is the other child)."""
    out = np.zeros_like(sets)
    out[np.arange(len(sets)), sets.shape[1] - 1 - np.argmax(sets[:, ::-1], axis=1)] = True
    return out


def token_at_over_cases(inputs: np.ndarray, position: int) -> tuple[np.ndarray, np.ndarray]:
    """A rule whose answer is the token at ``position`` (first: 0; previous: -2) over cases: decided where that
    position's set is one token, else split there. -> ([n] token or -1, [n] position to split or -1)."""
    n, k, _ = inputs.shape
    if not -k <= position < k:  # too short: no answer (a single context is out of domain)
        return np.full(n, NONE), np.full(n, NONE)
    at = inputs[:, position]  # [n, V]
    one = at.sum(axis=1) == 1
    return np.where(one, np.argmax(at, axis=1), NONE), np.where(one, NONE, position % k)


def sum_count(rule, inputs: np.ndarray, so_far: int, constraints: np.ndarray) -> list[int]:
    """How many inputs of each case of the ``sum`` rule (least significant first) write an answer so far its
    ``constraints`` allow: the carries counted up from place 0 (exact integers), times the sets above."""
    n, k, _ = inputs.shape
    plus = _plus(rule, inputs)
    out = [0] * n
    ids = np.array(rule.digits)
    for q in np.unique(plus[plus > 0]).tolist():
        rows = np.flatnonzero(plus == q)
        left, right = _columns(rule, inputs[rows], q)
        counts = [np.ones(len(rows), dtype=object), np.zeros(len(rows), dtype=object)]  # ways to carry 0, 1
        for p in range(so_far):
            pairs = (_place(left, p)[:, :, None] & _place(right, p)[:, None, :]).reshape(len(rows), 100)
            allowed = constraints[rows, p][:, ids]  # [m, 10] over digit values
            moved = [np.zeros(len(rows), dtype=object), np.zeros(len(rows), dtype=object)]
            for c in (0, 1):
                total = (np.arange(10)[:, None] + np.arange(10)[None]).ravel() + c
                hit = pairs & allowed[:, total % 10]
                for carry in (0, 1):
                    ways = hit[:, (total >= 10) == bool(carry)].sum(axis=1).astype(object)
                    moved[carry] = moved[carry] + counts[c] * ways
            counts = moved
        above = [int(np.prod([int(_place(part, p)[r].sum()) for part in (left, right)
                              for p in range(so_far, max(left.shape[1], right.shape[1]))], dtype=object))
                 for r in range(len(rows))]
        for r, row in enumerate(rows.tolist()):
            out[row] = int(counts[0][r] + counts[1][r]) * above[r]
    return out
