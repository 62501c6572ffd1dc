"""Rules over cases: what the right next token is for every context of a case at once, or that it must be split.

A rule kind that can say implements ``over_cases(inputs, so_far)``: ``inputs`` [n, k, n_vocab] bool, the tokens
each case's input may hold at each of its k positions (the domain's start token and separator aside), ``so_far`` the
answer tokens the contexts hold after the separator (None: a ``strings`` domain, no answer). It returns, per case,
the one right token (-1: it cannot say, the case is split), the tokens each answer-so-far position may hold
([n, so_far, n_vocab] bool, a superset of those it does: what the case's embedding is the hull of; None without an
answer), and the input position whose set matters most to it (-1: no preference). A kind without the method cannot
say: its cases split down to single contexts (:mod:`handwired.judge.cases`).
"""

import numpy as np

NONE = -1


def sum_over_cases(rule, inputs: np.ndarray, so_far: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``sum`` rule over cases of inputs ``A+B`` (digit sets at each place): the answer's digit at place P
    (10^P) is (a_P + b_P + c) mod 10, where the carry c into P is 1 for every context once the smallest lower parts
    of A and B already reach 10^P, and 0 once the largest stay below it; so a digit is often fixed with the lower
    places still sets. Decided only where every input is a sum the width holds (the rest split down to contexts)."""
    n, k, _ = inputs.shape
    answer, split = np.full(n, NONE), np.full(n, NONE)
    derived = np.ones((n, so_far, inputs.shape[2]), dtype=bool)
    plus = _plus(rule, inputs)
    for q in np.unique(plus[plus > 0]).tolist():
        rows = np.flatnonzero(plus == q)
        if q < k - 1:
            _decide(rule, inputs[rows], q, so_far, answer, derived, split, rows)
    return answer, derived, split


def _plus(rule, inputs: np.ndarray) -> np.ndarray:
    """[n, k, V] -> [n]: the position of the plus where it is the only token there and every other position holds
    digits alone (-1 else)."""
    digits = np.zeros(inputs.shape[2], dtype=bool)
    digits[list(rule.digits)] = True
    only_plus = inputs[:, :, rule.plus] & (inputs.sum(axis=2) == 1)  # [n, k]
    all_digits = ~(inputs & ~digits).any(axis=2)  # [n, k]
    ok = (only_plus.sum(axis=1) == 1) & (only_plus | all_digits).all(axis=1)
    return np.where(ok, np.argmax(only_plus, axis=1), NONE)


def _decide(rule, inputs, q, so_far, answer, derived, split, rows) -> None:
    values = inputs[:, :, list(rule.digits)]  # [m, k, 10]: the digit values each position may hold
    left, right = values[:, :q][:, ::-1], values[:, q + 1:][:, ::-1]  # places 0, 1, …: [m, places, 10]
    width = rule.width
    hi = [_number(part, 9 - np.argmax(part[:, :, ::-1], axis=2)) for part in (left, right)]
    valid = hi[0] + hi[1] < 10**width  # every input of the case has an answer
    for i in range(so_far + 1):  # the answer's digits so far, then the one to predict
        place = width - 1 - i
        low = (_number(left[:, :place], np.argmax(left[:, :place], axis=2)) +
               _number(right[:, :place], np.argmax(right[:, :place], axis=2)))
        high = (_number(left[:, :place], 9 - np.argmax(left[:, :place, ::-1], axis=2)) +
                _number(right[:, :place], 9 - np.argmax(right[:, :place, ::-1], axis=2)))
        carries = np.stack([low < 10**place, high >= 10**place], axis=1)  # [m, 2]: carry 0 or 1 possible
        digit = _digit_set(_place(left, place), _place(right, place), carries)  # [m, 10]
        if i < so_far:
            derived[rows, i] = False
            derived[rows[:, None], i, np.array(rule.digits)[None]] = digit
            continue
        one = valid & (digit.sum(axis=1) == 1)
        answer[rows[one]] = np.array(rule.digits)[np.argmax(digit[one], axis=1)]
        split[rows] = _matters(left, right, place, q, inputs.shape[1], carries.all(axis=1))


def _number(places: np.ndarray, digit: np.ndarray) -> np.ndarray:  # [m, p, 10], [m, p] -> [m]: Σ digit·10^place
    return (digit * 10 ** np.arange(places.shape[1], dtype=np.int64)).sum(axis=1) if places.shape[1] else np.zeros(
        len(places), dtype=np.int64)


def _place(part: np.ndarray, place: int) -> np.ndarray:  # [m, places, 10] -> [m, 10]: the digits at ``place``
    if place < part.shape[1]:
        return part[:, place]
    out = np.zeros((len(part), 10), dtype=bool)
    out[:, 0] = True  # beyond the number's digits: 0
    return out


def _digit_set(a: np.ndarray, b: np.ndarray, carries: np.ndarray) -> np.ndarray:
    """[m, 10] x2, [m, 2] -> [m, 10]: every (x + y + c) mod 10 with x in a, y in b, c a possible carry."""
    pairs = (a[:, :, None] & b[:, None, :]).reshape(len(a), 100)  # x*10 + y
    total = (np.arange(10)[:, None] + np.arange(10)[None]).ravel()  # [100]
    out = np.zeros((len(a), 10), dtype=bool)
    for c in (0, 1):
        hit = pairs & carries[:, c:c + 1]
        for s in range(19):
            out[:, (s + c) % 10] |= hit[:, total == s].any(axis=1)
    return out


def _matters(left, right, place, q, k, undetermined) -> np.ndarray:
    """[m]: the input position to split: with the carry into ``place`` undetermined, the highest lower place holding
    a set (it decides the carry most often); else the digits at ``place``, then the lower places (-1: all fixed)."""
    m = len(left)
    out = np.full(m, NONE)
    order_top = list(range(min(place, max(left.shape[1], right.shape[1])) - 1, -1, -1))
    order = ([place] if place < max(left.shape[1], right.shape[1]) else []) + order_top
    for row in range(m):
        places = order_top + order[:1] if undetermined[row] else order
        for p in places:
            sizes = [(part[row, p].sum() if p < part.shape[1] else 1, pos) for part, pos in
                     ((left, q - 1 - p), (right, k - 1 - p))]
            best = max(sizes)
            if best[0] > 1:
                out[row] = best[1]
                break
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


def token_at_over_cases(inputs: np.ndarray, position: int) -> tuple[np.ndarray, np.ndarray]:
    """A rule whose answer is the token at ``position`` (first: 0; previous: -2) over cases: decided where that
    position's set is one token, else split there. -> ([n] token or -1, [n] position to split or -1)."""
    n, k, _ = inputs.shape
    if not -k <= position < k:  # too short: no answer (a single context is out of domain)
        return np.full(n, NONE), np.full(n, NONE)
    at = inputs[:, position]  # [n, V]
    one = at.sum(axis=1) == 1
    return np.where(one, np.argmax(at, axis=1), NONE), np.where(one, NONE, position % k)
