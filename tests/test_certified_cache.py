"""A proof is about the weights as they are when it runs: from Python a model's parameters are arrays a caller may
edit in place (``model.params``, as TransformerLens users ablate), and a check after the edit proves exactly what a
check of a fresh copy of the edited weights proves."""

import copy
from dataclasses import replace

import handwired


def test_a_check_after_editing_the_weights_in_place_proves_what_a_fresh_copy_proves():
    model = handwired.load("aab")
    assert handwired.check(model).report.proved == 27  # the unedited file: every context proved
    model.params["blocks"][0]["attn"]["c_attn"]["w"][:] *= 1e6  # scores far sharper, bounds far wider
    model.params["wte"][:] *= 30
    edited = handwired.check(model).report
    fresh = handwired.check(replace(model.model, params=copy.deepcopy(model.model.params))).report
    assert fresh.proved < fresh.passed  # the edit leaves contexts the bounds cannot prove
    assert (edited.passed, edited.proved, edited.unproved) == (fresh.passed, fresh.proved, fresh.unproved)
