"""Rule kinds: hand-worked contexts, and every context against a plain Python version of each rule."""

import itertools

import numpy as np
import pytest

from handwired.errors import HandwiredError
from handwired.judge.kinds.rules import AMBIGUOUS, DECIDED, OUT_OF_DOMAIN, FunctionRule
from handwired.judge.kinds.spec import rule_from_spec as rule_from_spec_checked
from handwired.weightfile import Checker

# Plain, one-context-at-a-time versions of each kind, written from the rule's words:
# a set of acceptable tokens, AMBIGUOUS, or OUT_OF_DOMAIN.


def brute_pattern(pattern):
    def rule(context):
        stream = pattern * (len(context) // len(pattern) + 3)
        following = {stream[i + len(context)] for i in range(len(pattern)) if stream[i : i + len(context)] == context}
        return OUT_OF_DOMAIN if not following else AMBIGUOUS if len(following) > 1 else following
    return rule


def brute_first(context):
    return {context[0]}


def brute_previous(context):
    return OUT_OF_DOMAIN if len(context) == 1 else {context[-2]}


def brute_max(context):
    return {sorted(context)[-1]}  # the fixtures' vocabs are in alphabetical order


def brute_majority(context):
    counts = {token: context.count(token) for token in set(context)}
    best = max(counts.values())
    leaders = [token for token, count in counts.items() if count == best]
    return AMBIGUOUS if len(leaders) > 1 else set(leaders)


def brute_same_last_two(same, different):
    def rule(context):
        if len(context) == 1:
            return OUT_OF_DOMAIN
        return {same if context[-1] == context[-2] else different}
    return rule


def brute_induction(context):
    last = context[-1]
    for p in range(len(context) - 2, -1, -1):
        if context[p] == last:
            return {context[p + 1]}
    return OUT_OF_DOMAIN


CASES = [  # (spec, vocab, brute force, longest context)
    ({"kind": "pattern", "pattern": "aab"}, "ab", brute_pattern("aab"), 6),
    ({"kind": "pattern", "pattern": "abc"}, "abc", brute_pattern("abc"), 5),
    ({"kind": "pattern", "pattern": "aaab"}, "ab", brute_pattern("aaab"), 7),
    ({"kind": "first"}, "abc", brute_first, 5),
    ({"kind": "previous"}, "abc", brute_previous, 5),
    ({"kind": "max"}, "abcd", brute_max, 5),
    ({"kind": "majority"}, "ab", brute_majority, 7),
    ({"kind": "majority"}, "abc", brute_majority, 5),
    ({"kind": "same_last_two", "same": "a", "different": "b"}, "ab", brute_same_last_two("a", "b"), 5),
    ({"kind": "same_last_two", "same": "c", "different": "a"}, "abc", brute_same_last_two("c", "a"), 4),
    ({"kind": "induction"}, "abcd", brute_induction, 6),
    ({"kind": "induction"}, "ab", brute_induction, 6),
]


def judge_one_length(rule, vocab, length):
    contexts = ["".join(c) for c in itertools.product(vocab, repeat=length)]
    ids = np.array([[vocab.index(t) for t in c] for c in contexts]).reshape(len(contexts), length)
    return contexts, rule.judge(ids)


def answer(judgement, row, vocab):
    status = judgement.status[row]
    if status == DECIDED:
        return {vocab[i] for i in np.flatnonzero(judgement.acceptable[row])}
    return int(status)


@pytest.mark.parametrize("spec,vocab,brute,longest", CASES,
                         ids=lambda v: v.get("kind") if isinstance(v, dict) else None)
def test_every_kind_agrees_with_brute_force_on_every_context(spec, vocab, brute, longest):
    rule = rule_from_spec(spec, tuple(vocab))
    for length in range(1, longest + 1):
        contexts, judgement = judge_one_length(rule, vocab, length)
        assert judgement.status.shape == (len(contexts),)
        assert judgement.acceptable.shape == (len(contexts), len(vocab))
        for row, context in enumerate(contexts):
            assert answer(judgement, row, vocab) == brute(context), context


def judged(spec, vocab, context):
    rule = rule_from_spec(spec, tuple(vocab))
    judgement = rule.judge(np.array([[vocab.index(t) for t in context]]))
    return answer(judgement, 0, vocab)


@pytest.mark.parametrize(
    "spec,vocab,context,expected",
    [
        # worked out by hand
        ({"kind": "pattern", "pattern": "aab"}, "ab", "a", AMBIGUOUS),  # phase 0 says a, phase 1 says b
        ({"kind": "pattern", "pattern": "aab"}, "ab", "bb", OUT_OF_DOMAIN),
        ({"kind": "pattern", "pattern": "aab"}, "ab", "b", {"a"}),  # the only phase: a comes next
        ({"kind": "pattern", "pattern": "aab"}, "ab", "aa", {"b"}),
        ({"kind": "pattern", "pattern": "ab"}, "ab", "aba", {"b"}),
        ({"kind": "first"}, "abc", "c", {"c"}),
        ({"kind": "first"}, "abc", "bcaac", {"b"}),
        ({"kind": "previous"}, "abc", "a", OUT_OF_DOMAIN),
        ({"kind": "previous"}, "abc", "ca", {"c"}),
        ({"kind": "previous"}, "abc", "abcab", {"a"}),
        ({"kind": "max"}, "abcd", "a", {"a"}),
        ({"kind": "max"}, "abcd", "acab", {"c"}),
        ({"kind": "max"}, "abcd", "dab", {"d"}),
        ({"kind": "majority"}, "ab", "ab", AMBIGUOUS),  # a tie
        ({"kind": "majority"}, "ab", "abba", AMBIGUOUS),
        ({"kind": "majority"}, "ab", "abb", {"b"}),
        ({"kind": "majority"}, "ab", "a", {"a"}),
        ({"kind": "majority"}, "ab", "aabbbaa", {"a"}),
        ({"kind": "same_last_two", "same": "a", "different": "b"}, "ab", "b", OUT_OF_DOMAIN),
        ({"kind": "same_last_two", "same": "a", "different": "b"}, "ab", "bb", {"a"}),
        ({"kind": "same_last_two", "same": "a", "different": "b"}, "ab", "aab", {"b"}),
        ({"kind": "induction"}, "abcd", "aa", {"a"}),  # p = 0, the token at p+1 is the last a itself
        ({"kind": "induction"}, "abcd", "abcab", {"c"}),
        ({"kind": "induction"}, "abcd", "a", OUT_OF_DOMAIN),
        ({"kind": "induction"}, "abcd", "abcd", OUT_OF_DOMAIN),
        ({"kind": "induction"}, "abcd", "abacda", {"c"}),  # the latest earlier a (position 2), not the first
        ({"kind": "induction"}, "abcd", "aaab", OUT_OF_DOMAIN),
        ({"kind": "induction"}, "abcd", "baab", {"a"}),
    ],
)
def test_hand_worked_contexts(spec, vocab, context, expected):
    assert judged(spec, vocab, context) == expected


def test_every_kind_handles_an_empty_batch_and_long_batches():
    for spec, vocab, _, _ in CASES:
        rule = rule_from_spec(spec, tuple(vocab))
        judgement = rule.judge(np.zeros((0, 3), dtype=np.uint8))
        assert judgement.status.shape == (0,) and judgement.acceptable.shape == (0, len(vocab))


def test_descriptions_say_the_rule_in_words():
    assert "before the last" in rule_from_spec({"kind": "previous"}, ("a", "b")).description
    assert "'a' if the last two tokens are equal, else 'b'" in rule_from_spec(
        {"kind": "same_last_two", "same": "a", "different": "b"}, ("a", "b")).description
    assert "tie" in rule_from_spec({"kind": "majority"}, ("a", "b")).description
    assert "'aab'" in rule_from_spec({"kind": "pattern", "pattern": "aab"}, ("a", "b")).description


@pytest.mark.parametrize(
    "spec,message",
    [
        ({"kind": "nexttoken"},
         "rule.kind: expected one of pattern, first, previous, max, majority, same_last_two, induction, successor, "
         "count_last, parity, copy, reverse, sort, sum, modular_sum, balanced, indirect_object, greater_than; found "
         "the string 'nexttoken'"),
        ({"kind": 3}, "rule.kind: expected one of pattern,"),
        ({"kind": []}, "rule.kind: expected one of pattern,"),  # unhashable: once a TypeError
        ("previous", "rule: expected an object such as {\"kind\": \"first\"}; found the string 'previous'"),
        ({}, "rule: expected an object"),
        ({"kind": "pattern"}, "rule: kind 'pattern' needs 'pattern'"),
        ({"kind": "pattern", "pattern": "abx"}, "rule.pattern: 'x' (position 2) is not in the vocabulary a, b"),
        ({"kind": "pattern", "pattern": ""}, "rule.pattern: expected a non-empty string of vocabulary tokens"),
        ({"kind": "first", "pattern": "ab"}, "rule.pattern: not a parameter of kind 'first' (its parameters: none)"),
        ({"kind": "same_last_two", "same": "a"}, "rule: kind 'same_last_two' needs 'different'"),
        ({"kind": "same_last_two", "same": "ab", "different": "b"},
         "rule.same: expected one token of the vocabulary a, b; found the string 'ab'"),
        ({"kind": "same_last_two", "same": "a", "different": "b", "sam": "a"},
         "rule.sam: not a parameter of kind 'same_last_two' (its parameters: same, different)"),
    ],
)
def test_bad_specs_give_one_line(spec, message):
    with pytest.raises(HandwiredError) as error:
        rule_from_spec(spec, ("a", "b"))
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def rule_from_spec(spec, vocab):
    """A rule, or the first problem the checker found with the spec, raised as one line."""
    check = Checker()
    rule = rule_from_spec_checked(spec, vocab, check)
    if check.problems:
        raise HandwiredError(check.problems[0])
    assert rule is not None
    return rule


def test_function_rule_can_say_ambiguous_and_out_of_domain():
    def rule(context):
        if context == "a":
            return AMBIGUOUS
        if context == "b":
            return OUT_OF_DOMAIN
        if context == "aa":
            return ""  # nothing acceptable: out of domain
        return "ab" if context == "ab" else context[-1]  # "ab": either token passes, still decided

    judgement = FunctionRule(rule, ("a", "b")).judge(np.array([[0], [1]]))
    assert judgement.status.tolist() == [AMBIGUOUS, OUT_OF_DOMAIN]
    judgement = FunctionRule(rule, ("a", "b")).judge(np.array([[0, 0], [0, 1], [1, 0]]))
    assert judgement.status.tolist() == [OUT_OF_DOMAIN, DECIDED, DECIDED]
    assert judgement.acceptable.tolist() == [[False, False], [True, True], [True, False]]


@pytest.mark.parametrize("returned,message", [
    (0, "returned 0, a number; expected the acceptable next tokens (e.g. 'a' or a list of tokens), AMBIGUOUS or "
        "OUT_OF_DOMAIN (token id 0 is 'a')"),
    (1, "returned 1, a number; expected"),  # not read as AMBIGUOUS, which is 1 in the arrays
    (2, "returned 2, a number; expected"),  # nor as OUT_OF_DOMAIN
    (None, "returned None; expected"),
    ("c", "returned 'c': 'c' is not in the vocabulary a, b"),
])
def test_a_rule_function_returning_something_unusable_is_named(returned, message):
    rule = FunctionRule(lambda context: returned, ("a", "b"), "my rule")
    with pytest.raises(HandwiredError) as caught:
        rule.judge(np.array([[0, 1]]))
    assert str(caught.value).startswith("my rule: on 'ab' the rule function ") and message in str(caught.value)


@pytest.mark.parametrize("left,right", [(2**64 + 5, 1), (10**19 + 7, 3), (10**17 - 1, 10**17), (10**18 - 2, 1),
                                        (10**18 - 1, 1), (123, 10**40 + 2**64), (0, 10**17 * 9 + 5)])
@pytest.mark.parametrize("width", [18, 5])
def test_a_sum_of_operands_beyond_int64_is_never_judged_wrapped(left, right, width):
    """Operands of 19 digits and more (a statement's n_ctx allows them) are summed as Python's exact integers do: a
    sum wider than ``width`` has no answer (not judged), never the digits of a sum wrapped around 2^64."""
    spec = {"kind": "sum", "plus": "+", "equals": "=", "digits": "0123456789", "width": width}
    vocab = "0123456789+="
    total = left + right
    expected = {str(total).zfill(width)[0]} if total < 10**width else OUT_OF_DOMAIN
    assert judged(spec, vocab, f"{left}+{right}=") == expected
    padded = f"{left:0>22}+{right}="  # leading zeros change nothing
    assert judged(spec, vocab, padded) == expected


@pytest.mark.parametrize("period, n_vocab", [(65, 2), (200, 3), (5000, 3), (300, 300)])
def test_a_long_patterns_windows_judge_as_every_phase_compared_one_by_one(period, n_vocab):
    # past SHORT_PATTERN phases the rule looks each context up among the pattern's windows; brute force here
    from handwired.judge.kinds.rules import SHORT_PATTERN, PatternRule

    assert period > SHORT_PATTERN
    rng = np.random.default_rng(period)
    pattern = rng.integers(0, n_vocab, period)
    rule = PatternRule(pattern, n_vocab, "long")
    for length in (1, 2, 5, 8):
        contexts = rng.integers(0, n_vocab, (400, length))
        phases = rng.integers(0, period, 200)  # half of them windows of the pattern, so most fit somewhere
        contexts[:200] = pattern[(phases[:, None] + np.arange(length)) % period]
        expected = np.zeros((400, n_vocab), dtype=bool)
        for phase in range(period):
            fits = np.all(contexts == pattern[(phase + np.arange(length)) % period], axis=1)
            expected[fits, pattern[(phase + length) % period]] = True
        assert np.array_equal(rule.judge(contexts).acceptable, expected)
