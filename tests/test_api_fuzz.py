"""A seeded fuzz over the Python face's documented functions: every argument drawn from a pool of wrong and right
values (wrong types, out-of-range numbers, empty and ragged inputs, strangers to the vocabulary). A call may work
or raise HandwiredError; any other exception fails the test. (``cache[key]`` is a Mapping's look-up, which raises
KeyError as every Mapping does; it is not fuzzed.)"""

import random

import numpy as np
import pytest

import handwired
from handwired import HandwiredError

POOL = [None, True, False, -1, 0, 1, 2, 3, 99, 1.5, float("nan"), -0.0, "", "a", "ab", "aab", "zzz", "x:y",
        "pattern", "resid_post", "blocks.0.attn.c_proj.w", "wte", "z7", "b", "lead", [], [0], [0, 1], [[0], [0, 1]],
        ["aa", "b"], ["aab"], (), ("a", "b"), {}, {1: 2}, {"format": "handwired/1"}, np.zeros(3), np.ones((2, 2)),
        np.array([[0, 1]]), np.array([0.5]), np.zeros((2, 1, 3, 8)), object(), lambda *a: None, 10**30]
DRAWS = 120


def model():
    return handwired.load("aab")


def cache():
    return model().run_with_cache("aab")[1]


TARGETS = {
    "load": (lambda a: handwired.load(a[0]), 1),
    "call": (lambda a: model()(a[0]), 1),
    "to_tokens": (lambda a: model().to_tokens(a[0]), 1),
    "to_string": (lambda a: model().to_string(a[0]), 1),
    "to_str_tokens": (lambda a: model().to_str_tokens(a[0]), 1),
    "run_with_cache": (lambda a: model().run_with_cache(a[0], names_filter=a[1], use_attn_result=a[2]), 3),
    "run_with_hooks": (lambda a: model().run_with_hooks(a[0], fwd_hooks=a[1]), 2),
    "run_with_hooks pairs": (lambda a: model().run_with_hooks("aab", fwd_hooks=[(a[0], a[1])]), 2),
    "predict": (lambda a: model().predict(a[0], every_position=a[1]), 2),
    "explain": (lambda a: model().explain(a[0], step=a[1], block=a[2], head=a[3]), 4),
    "spread": (lambda a: model().spread(a[0], puzzle=a[1], by=a[2], position=a[3], head=a[4]), 5),
    "set": (lambda a: model().set(a[0], a[1], row=a[2], col=a[3]), 4),
    "save": (lambda a: model().save(a[0], force=a[1]), 2),
    "stack_activation": (lambda a: cache().stack_activation(a[0], a[1], a[2]), 3),
    "accumulated_resid": (lambda a: cache().accumulated_resid(a[0], a[1], a[2], a[3], a[4]), 5),
    "decompose_resid": (lambda a: cache().decompose_resid(a[0], a[1], a[2], a[3], a[4]), 5),
    "apply_ln_to_stack": (lambda a: cache().apply_ln_to_stack(a[0], a[1], a[2]), 3),
    "stack_head_results": (lambda a: cache().stack_head_results(a[0], a[1], a[2], a[3], a[4]), 5),
    "stack_neuron_results": (lambda a: cache().stack_neuron_results(a[0], a[1], a[2], a[3], a[4]), 5),
    "get_full_resid_decomposition": (lambda a: cache().get_full_resid_decomposition(*a), 6),
    "logit_attrs": (lambda a: cache().logit_attrs(a[0], a[1], a[2], a[3]), 4),
    "logit_attribution": (lambda a: cache().logit_attribution(a[0], a[1]), 2),
    "check": (lambda a: handwired.check(model(), a[0], sample=a[1], seed=a[2], min_length=a[3], length=a[4],
                                         show=a[5], proof=False), 6),
    "check exhaustive": (lambda a: handwired.check(model(), exhaustive=a[0], near_miss=a[1], proof=a[2]), 3),
    "puzzle": (lambda a: handwired.puzzle(a[0]), 1),
    "answer": (lambda a: handwired.puzzle("previous").answer(a[0]), 1),
    "submit": (lambda a: handwired.puzzle("previous").submit(a[0], show=a[1], proof=False), 2),
    "diff": (lambda a: handwired.diff(a[0], a[1], sample=a[2], seed=a[3], show=a[4]), 5),
    "act_name": (lambda a: handwired.act_name(a[0], a[1], a[2]), 3),
    "OV index": (lambda a: handwired.load("multihead").OV[a[0]], 1),
    "hook layer": (lambda a: handwired.HookPoint(a[0]).layer(), 1),
}


@pytest.mark.parametrize("name", list(TARGETS))
def test_bad_arguments_raise_handwired_error_or_work(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # save writes where it is told
    call, arity = TARGETS[name]
    draw = random.Random(f"fuzz {name}")
    for _ in range(DRAWS):
        args = [draw.choice(POOL) for _ in range(arity)]
        try:
            call(args)
        except HandwiredError as error:
            assert "\n" not in str(error) or name in ("load",), (args, str(error))
        except Exception as error:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{name}{tuple(args)!r} raised {type(error).__name__}: {error}")
