"""The second ladder's rule kinds and domain kinds, against contexts worked out by hand and by brute force."""

import itertools

import numpy as np
import pytest

from handwired.engine.arithmetic.floats import float_walk
from handwired.engine.batch import next_logits
from handwired.engine.walk import shape_walk
from handwired.errors import HandwiredError
from handwired.judge.kinds.domains import domain_from_spec
from handwired.judge.kinds.rules import DECIDED
from handwired.judge.kinds.spec import rule_from_spec
from handwired.weightfile import Checker, parse

ADD = "0123456789+="
ADD_RULE = {"kind": "sum", "plus": "+", "equals": "=", "digits": "0123456789", "width": 3}


def built(spec, vocab):
    check = Checker()
    rule = rule_from_spec(spec, tuple(vocab), check)
    if check.problems:
        raise HandwiredError(check.problems[0])
    return rule


def answer(rule, vocab, context):
    """What the rule says follows one context: a token, or None when it does not judge it."""
    judgement = rule.judge(np.array([[vocab.index(t) for t in context]]))
    if judgement.status[0] != DECIDED:
        return None
    return vocab[int(np.argmax(judgement.acceptable[0]))]


@pytest.mark.parametrize("context,expected", [
    ("00+00=", "0"), ("00+00=0", "0"), ("00+00=00", "0"),
    ("99+99=", "1"), ("99+99=1", "9"), ("99+99=19", "8"),
    ("19+01=", "0"), ("19+01=0", "2"), ("19+01=02", "0"),
    ("50+50=", "1"), ("50+50=10", "0"),
    ("19+01=1", None),  # not the start of the answer
    ("19+01=020", None),  # the answer is complete
    ("19+01", None), ("1+=", None), ("+12=", None), ("1+2+3=", None),  # no separator, an empty or a third number
])
def test_sum_worked_by_hand(context, expected):
    assert answer(built(ADD_RULE, ADD), ADD, context) == expected


@pytest.mark.parametrize("kind,context,expected", [
    ("sort", "cab|", "a"), ("sort", "cab|a", "b"), ("sort", "cab|ab", "c"), ("sort", "cab|abc", None),
    ("sort", "dc|", "c"), ("sort", "cab|b", None),
    ("copy", "abc|ab", "c"), ("copy", "ca|", "c"), ("copy", "ca|c", "a"), ("copy", "ca|ca", None),
    ("reverse", "abc|", "c"), ("reverse", "abc|cb", "a"), ("reverse", "abc|cba", None), ("reverse", "abc", None),
])
def test_answers_after_a_separator_worked_by_hand(kind, context, expected):
    vocab = "abcd|"
    assert answer(built({"kind": kind, "separator": "|"}, vocab), vocab, context) == expected


@pytest.mark.parametrize("spec,vocab,context,expected", [
    ({"kind": "count_last", "counts": "12345"}, "^abc12345", "^abca", "2"),
    ({"kind": "count_last", "counts": "12345"}, "^abc12345", "^c", "1"),
    ({"kind": "count_last", "counts": "12345"}, "^abc12345", "^bbbbb", "5"),
    ({"kind": "count_last", "counts": "123"}, "^abc123", "^bbbb", None),  # four times: more than it counts
    ({"kind": "parity", "of": "b", "even": "a", "odd": "b"}, "^ab", "^abba", "a"),
    ({"kind": "parity", "of": "b", "even": "a", "odd": "b"}, "^ab", "^b", "b"),
    ({"kind": "parity", "of": "b", "even": "a", "odd": "b"}, "^ab", "^aaa", "a"),
    ({"kind": "successor", "order": "abcd"}, "abcd", "ab", "c"),
    ({"kind": "successor", "order": "abcd"}, "abcd", "cd", "a"),
    ({"kind": "successor", "order": "abc"}, "abcd", "d", None),  # not in the cycle
])
def test_rules_of_the_context_worked_by_hand(spec, vocab, context, expected):
    assert answer(built(spec, vocab), vocab, context) == expected


def domain(spec, rule_spec, vocab, n_ctx):
    check = Checker()
    rule = rule_from_spec(rule_spec, tuple(vocab), check)
    made = domain_from_spec(spec, tuple(vocab), rule, n_ctx, check)
    if check.problems:
        raise HandwiredError(check.problems[0])
    return made, rule


def texts(made, vocab):
    return {"".join(vocab[i] for i in row) for batch in made.contexts for row in batch}


def test_strings_with_a_start_token_by_brute_force():
    vocab = "^abc12345"
    made, _ = domain({"kind": "strings", "start": "^", "alphabet": "abc", "length": [1, 5]},
                     {"kind": "count_last", "counts": "12345"}, vocab, 6)
    expected = {"^" + "".join(s) for n in range(1, 6) for s in itertools.product("abc", repeat=n)}
    assert texts(made, vocab) == expected and made.size == 363
    assert made.description == "^ then every string over a, b, c of length 1…5"


@pytest.mark.parametrize("kind,answer_of,distinct,alphabet,size", [
    ("sort", lambda x: "".join(sorted(x)), True, "abcd", 196),
    ("copy", lambda x: x, False, "abc", 426),
    ("reverse", lambda x: x[::-1], False, "abc", 426),
])
def test_answer_so_far_is_teacher_forcing_by_brute_force(kind, answer_of, distinct, alphabet, size):
    vocab = "abcd|"
    made, _ = domain({"kind": "answer_so_far", "alphabet": alphabet, "length": [1, 4], "distinct": distinct},
                     {"kind": kind, "separator": "|"}, vocab, 9)
    inputs = ["".join(p) for n in range(1, 5)
              for p in (itertools.permutations(alphabet, n) if distinct else itertools.product(alphabet, repeat=n))]
    expected = {x + "|" + answer_of(x)[:j] for x in inputs for j in range(len(x))}
    assert texts(made, vocab) == expected and made.size == size


def test_the_sum_domain_holds_thirty_thousand_contexts():
    made, rule = domain({"kind": "answer_so_far", "alphabet": "0123456789", "template": "##+##"}, ADD_RULE, ADD, 9)
    assert made.size == 30_000 and made.longest == 8
    assert made.description == "every ##+##, each # one of 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, then = and the answer so far"
    for context in ("00+00=", "99+99=1", "19+01=02"):
        assert made.holds([ADD.index(t) for t in context])
    assert not made.holds([ADD.index(t) for t in "19+01=1"])
    assert sum(len(visit.prefixes) for visit in shape_walk(made)) == 10 + 100 + 100 + 1000 + 3 * 10_000 + 10_000
    assert made.bound() == (30_000, 10 + 100 + 100 + 1000 + 3 * 10_000 + 10_000)  # the formula, exact here


@pytest.mark.parametrize("spec,rule_spec,message", [
    ({"kind": "strings", "alphabet": "ab"}, {"kind": "first"}, "domain: give the inputs' 'length'"),
    ({"kind": "strings", "alphabet": "ab", "length": [3, 2]}, {"kind": "first"}, "is longer than the longest"),
    ({"kind": "strings", "alphabet": "ab", "length": [1, 9]}, {"kind": "first"}, "domain.length[1]: 9 is more"),
    ({"kind": "strings", "alphabet": "ax", "length": [1, 2]}, {"kind": "first"},
     "domain.alphabet: 'x' (position 1) is not in the vocabulary"),
    ({"kind": "strings", "alphabet": "ab", "length": [1, 2], "start": "ab"}, {"kind": "first"},
     "domain.start: expected one token of the vocabulary"),
    ({"kind": "answer_so_far", "alphabet": "ab", "length": [1, 2]}, {"kind": "first"},
     "domain: kind 'answer_so_far' needs a rule that answers after a separator"),
    ({"kind": "answer_so_far", "alphabet": "ab", "length": [1, 4]}, {"kind": "copy", "separator": "|"},
     "domain: its contexts reach 8 tokens, more than n_ctx 5"),
    ({"kind": "strings", "alphabet": "ab", "template": "a"}, {"kind": "first"}, "domain.template: expected tokens"),
    ({"kind": "strings", "alphabet": "ab", "length": [1, 2], "size": 3}, {"kind": "first"},
     "domain.size: not a parameter of kind 'strings'"),
    ({"kind": "everything"}, {"kind": "first"}, "domain.kind: expected one of strings, answer_so_far"),
])
def test_a_bad_domain_is_one_line_naming_its_path(spec, rule_spec, message):
    with pytest.raises(HandwiredError) as error:
        domain(spec, rule_spec, "ab|", 5)
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("silenced", [(), ((0, "attn"),), ((1, "attn"),), ((0, "mlp"), (1, "attn")),
                                      ((0, "attn"), (0, "mlp"), (1, "attn"), (1, "mlp"))])
def test_the_trie_gives_the_per_context_logits(silenced):
    """Against the batched forward pass, which computes every sublayer: the trie skips those whose c_proj.w is zero
    (they add their bias alone), and must give the same logits."""
    from reference import params_to_document, random_params

    rng = np.random.default_rng(5)
    params = random_params(rng, n_vocab=5, n_ctx=9, n_embd=8, n_layer=2, n_hidden=6)
    for block, sublayer in silenced:
        params["blocks"][block][sublayer]["c_proj"]["w"][:] = 0.0
    model, problems = parse(params_to_document(params, 2, "abcd|", 9))
    assert problems == []
    made, _ = domain({"kind": "answer_so_far", "alphabet": "abcd", "length": [1, 4], "distinct": True},
                     {"kind": "sort", "separator": "|"}, "abcd|", 9)
    seen = 0
    for chunk in (1, 7, None):  # batches of one node, of a few (families split between them), of many
        for visit in float_walk(model, made, chunk):
            batch = visit.prefixes[visit.judged]
            if len(batch):
                want = next_logits(model, batch.astype(np.intp))
                np.testing.assert_allclose(visit.logits[visit.judged], want, rtol=1e-11, atol=1e-11)
                seen += len(batch)
    assert seen == 3 * made.size


@pytest.mark.parametrize("spec,rule_spec,vocab", [
    ({"kind": "answer_so_far", "alphabet": "0123456789", "template": "##+##"}, ADD_RULE, ADD),
    ({"kind": "answer_so_far", "alphabet": "abcd", "length": [1, 4], "distinct": True},
     {"kind": "sort", "separator": "|"}, "abcd|"),
    ({"kind": "answer_so_far", "alphabet": "abc", "length": [2, 3]}, {"kind": "reverse", "separator": "|"}, "abc|"),
    ({"kind": "strings", "alphabet": "ab", "length": [1, 5], "start": "^"}, {"kind": "first"}, "ab^"),
])
def test_a_domains_widths_are_its_tries_nodes_at_each_length(spec, rule_spec, vocab):
    """The walk's memory is priced from these (an only child shares its parent's keys): counted here by walking."""
    made, _ = domain(spec, rule_spec, vocab, 9)
    counted = [0] * made.longest
    for visit in shape_walk(made):
        if visit.prefixes.shape[1]:
            counted[visit.prefixes.shape[1] - 1] += len(visit.prefixes)
    assert made.widths() == counted and sum(counted) <= made.bound()[1]
