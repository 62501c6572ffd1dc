"""Rules whose answer follows a separator: an input, the separator, then the answer so far.

``copy``, ``reverse`` and ``sort`` answer with the input copied, reversed or
sorted (in vocab order); ``sum`` with the zero-padded sum of the two numbers in
the input (``19+01=`` → ``020``). The right next token is the answer's next one:
after ``abc|ab``, ``c``. A context without the separator, whose answer so far is
not the start of the answer, or whose answer is already complete, is out of
domain. Used with the domain kind ``answer_so_far`` (teacher forcing: every
prefix of the answer is a context of its own).
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from handwired.judge.kinds.rules import DECIDED, OUT_OF_DOMAIN, Judgement, first_row, one_hot
from handwired.weightfile.axes import shown

# inputs [n, p] token ids -> (answers [n, A] token ids, valid [n] bool): one answer length per input length
Answering = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def judge_after(contexts: np.ndarray, separator: int, answering: Answering, n_vocab: int) -> Judgement:
    """[n, L] contexts -> which token follows each: the next of its input's answer after what follows the separator."""
    n, length = contexts.shape
    columns = np.ascontiguousarray(contexts.T)  # [L, n]: each step a whole row of n, not a few tokens per context
    first = first_row(columns == separator, length)  # [n]: the first separator (length: none)
    answer = np.full(n, -1, dtype=np.intp)  # [n]: the right token, -1 where none is
    counts = np.bincount(first, minlength=length + 1)[:length]
    for p in np.flatnonzero(counts).tolist():  # (not np.unique, which imports numpy.ma: 20 ms for a few ints)
        rows = slice(None) if counts[p] == n else np.flatnonzero(first == p)  # every context alike: no copy
        answers, valid = answering(contexts[rows, :p])  # [k, A], [k]
        so_far = length - p - 1  # answer tokens the context already holds
        if so_far >= answers.shape[1]:
            continue  # the answer is complete: nothing follows in the domain
        right = valid.copy()  # [k]: the answer so far is the answer's start
        for j in range(so_far):
            right &= columns[p + 1 + j, rows] == answers[:, j]
        if isinstance(rows, slice):  # every context: its answer where its answer so far is right
            np.copyto(answer, answers[:, so_far], where=right)
        else:
            answer[rows[right]] = answers[right, so_far]
    return Judgement(np.where(answer >= 0, np.int8(DECIDED), np.int8(OUT_OF_DOMAIN)), one_hot(answer, n_vocab), answer)


class Last:
    """The last inputs a rule answered, with its answers: a domain's walk asks for the same inputs' answers at each
    token of the answer (which tokens follow, which is right), so they are computed once. Read and replaced as one
    tuple (a thread that reads it sees one whole entry); the answers are read only."""

    __slots__ = ("entry",)

    def __init__(self) -> None:
        self.entry: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def answers(self, inputs: np.ndarray, answering: Answering) -> tuple[np.ndarray, np.ndarray]:
        entry = self.entry
        if entry is not None and entry[0].shape == inputs.shape and np.array_equal(entry[0], inputs):
            return entry[1], entry[2]
        answers, valid = answering(inputs)
        answers.flags.writeable = valid.flags.writeable = False
        self.entry = (inputs.copy(), answers, valid)
        return answers, valid


@dataclass(frozen=True)
class AnswerRule:
    """The input, after the separator: copied, reversed or sorted in vocab order."""

    kind: str  # copy, reverse or sort
    separator: int  # token id
    vocab: tuple[str, ...]

    @property
    def description(self) -> str:
        order = ", ".join(map(shown, self.vocab))
        done = {"copy": "copied", "reverse": "reversed", "sort": f"sorted in the order {order}"}
        return (f"the input before {self.vocab[self.separator]!r}, {done[self.kind]}: the token after the answer "
                "so far")

    def answer_length(self, input_length: int) -> int:
        """How many tokens the answer to an input of ``input_length`` tokens has."""
        return input_length

    def answering(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # [n, p] -> [n, p], [n]
        answers = {"copy": lambda x: x, "reverse": lambda x: x[:, ::-1], "sort": lambda x: np.sort(x, axis=1)}
        return answers[self.kind](inputs), np.ones(len(inputs), dtype=bool)

    def judge(self, contexts: np.ndarray) -> Judgement:
        return judge_after(contexts, self.separator, self.answering, len(self.vocab))


SATURATED = 10**18  # above every sum a rule's width (at most 18 digits) holds; two of them still fit in int64


@dataclass(frozen=True)
class SumRule:
    """The sum of the two numbers before ``equals`` (``12+34``), zero-padded to ``width`` digits."""

    plus: int  # token ids
    equals: int
    digits: tuple[int, ...]  # the tokens of 0…9
    width: int
    vocab: tuple[str, ...]
    least_first: bool = False  # the answer written from its least significant digit (order "least_first")

    @property
    def separator(self) -> int:
        return self.equals

    @property
    def description(self) -> str:
        v = self.vocab
        padded = _padded(20, self.width)[::-1 if self.least_first else 1]
        return (f"the sum of the two numbers before {v[self.equals]!r}, zero-padded to {self.width} digits"
                f"{', least significant first' if self.least_first else ''} "
                f"({v[self.digits[1]]}{v[self.digits[9]]}{v[self.plus]}{v[self.digits[0]]}{v[self.digits[1]]}"
                f"{v[self.equals]} → {''.join(v[self.digits[d]] for d in padded)}): "
                "the token after the answer so far")

    def answer_length(self, input_length: int) -> int:
        """How many tokens the answer has, whatever the input (one without a sum has none)."""
        return self.width

    last: Last = field(default_factory=lambda: Last(), compare=False, repr=False)  # the last inputs answered

    def answering(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # [n, p] -> [n, width], [n]
        return self.last.answers(inputs, self._answering)

    def _answering(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # by columns ([p, n]): every step is a whole row of n, not a few numbers per input
        value = np.full(len(self.vocab), -1)  # token id -> its digit; -1: not a digit
        value[list(self.digits)] = np.arange(len(self.digits))
        n, p = inputs.shape
        columns = np.ascontiguousarray(inputs.T)  # [p, n]
        digit = value.take(columns)  # [p, n]
        at_plus = columns == self.plus  # [p, n]
        valid = at_plus.sum(axis=0) == 1  # [n]: one plus
        split = first_row(at_plus, 0)  # [n]: where the plus is, in an input with one
        total = np.zeros(n, dtype=np.int64)
        for q in np.flatnonzero(np.bincount(split[valid], minlength=p)):  # each place of the plus, in order
            rows = np.flatnonzero(valid & (split == q))
            (left, left_ok), (right, right_ok) = (_number(digit[part].take(rows, axis=1))
                                                  for part in (slice(None, q), slice(q + 1, None)))
            total[rows] = left + right
            valid[rows] &= left_ok & right_ok & (q > 0) & (q < p - 1)
        valid &= total < 10**self.width
        places = np.empty((self.width, n), dtype=np.int64)  # the answer's digits, last first
        for i in reversed(range(self.width)):  # (total is never negative: // and a product, not numpy's slower %)
            below = total // 10
            places[i] = total - 10 * below
            total = below
        if self.least_first:
            places = places[::-1]
        return np.take(self.digits, places).T, valid  # [n, width]

    def judge(self, contexts: np.ndarray) -> Judgement:
        return judge_after(contexts, self.equals, self.answering, len(self.vocab))

    def over_cases(self, inputs: np.ndarray, so_far: int,
                   constraints: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The right digit over each case of inputs (sets of tokens), or -1 (see handwired.judge.kinds.case_rules)."""
        from handwired.judge.kinds.case_rules import sum_over_cases  # (only a proof by cases loads it)

        return sum_over_cases(self, inputs, so_far, constraints)

    def count_cases(self, inputs: np.ndarray, so_far: int, constraints: np.ndarray) -> list[int]:
        """How many inputs of each case write an answer so far ``constraints`` allows (least significant first)."""
        from handwired.judge.kinds.case_rules import sum_count  # (only a proof by cases loads it)

        return sum_count(self, inputs, so_far, constraints)


def _number(digits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[d, n] digit values, most significant first, -1 where a token is none -> the numbers [n] (a -1 read as 0;
    one of SATURATED or more is SATURATED, never wrapped around 2^64) and whether every token was a digit [n]."""
    out, ok = np.zeros(digits.shape[1], dtype=np.int64), np.ones(digits.shape[1], dtype=bool)
    for row in digits:
        np.minimum(out, SATURATED // 10 + 1, out=out)  # a number already that large stays at least SATURATED
        out *= 10  # at most 10^18 + 10: within int64
        out += np.maximum(row, 0)
        np.minimum(out, SATURATED, out=out)
        ok &= row >= 0
    return out, ok


def _padded(value: int, width: int) -> list[int]:
    return [int(d) for d in f"{value:0{width}d}"]
