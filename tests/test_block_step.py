"""The walk's one block step, in each of its arithmetics, gives forward.py's numbers on bundled puzzles: the float
walk's logits and recorded intermediates are forward.py's bits at the last position, the certified walk's mids are
the same bits with radii that hold the 50-digit logits, and a variant resumed at its first changed stage (a sweep's,
an ablation's) gives the edited file's forward.py logits."""

import copy
from dataclasses import replace

import numpy as np
import pytest
from exact import ExactModel

from handwired.engine.arithmetic.certified import certified_walk
from handwired.engine.arithmetic.floats import float_walk
from handwired.engine.forward import forward
from handwired.engine.resume import resumed, variant_walk
from handwired.engine.walk import EveryString
from handwired.judge.game.catalogue import load_puzzle, solution_path
from handwired.weightfile import load

PUZZLES = ["add", "histogram", "parity", "induction", "sort"]  # three with MLPs, two of attention alone


def shape_of(name: str, longest: int = 4):
    """The puzzle's domain, or every string up to ``longest`` tokens where it has none."""
    puzzle, model = load_puzzle(name), load(str(solution_path(name)))
    return model, puzzle.domain if puzzle.domain is not None else EveryString(model.n_vocab, longest)


@pytest.mark.parametrize("name", PUZZLES)
def test_the_float_walk_gives_forwards_logits_bit_for_bit(name):
    model, shape = shape_of(name)
    judged = 0
    for visit in float_walk(model, shape):
        if visit.logits is not None:
            want = forward(model.params, visit.prefixes, model.n_head, last_only=True)  # [n, n_vocab]
            np.testing.assert_array_equal(visit.logits, want)
            judged += int(visit.judged.sum())
    assert judged > 100


@pytest.mark.parametrize("name", ["add", "parity"])
def test_the_float_walks_intermediates_are_forwards_at_the_last_position(name):
    model, shape = shape_of(name)
    seen: dict = {}
    for visit in float_walk(model, shape, hook=lambda key, value: seen.__setitem__(key, np.array(value))):
        if visit.prefixes.shape[1] >= 3 and visit.logits is not None:  # the hook has seen this batch's
            break
        seen.clear()
    else:
        pytest.fail("no judged batch of three tokens or more")
    record: dict = {}
    forward(model.params, visit.prefixes, model.n_head, record=record)
    assert {"blocks.0.mlp.hook_post", "blocks.0.attn.hook_z", "logits"} <= seen.keys() <= record.keys()
    for key, value in seen.items():  # [n, …]: forward's at the last position (the last query's scores), to the
        # rounding of sums made in another order (a softmax's), and the logits bit for bit
        want = record[key][:, :, -1] if key.endswith(("scores", "mask", "pattern")) else record[key][:, -1]
        np.testing.assert_allclose(value, want, rtol=1e-13, atol=0, err_msg=key)
    np.testing.assert_array_equal(seen["logits"], record["logits"][:, -1])


@pytest.mark.parametrize("name", ["add", "histogram", "induction"])
def test_the_certified_walks_mids_are_forwards_bits_and_its_radii_hold_the_real_logits(name):
    model, shape = shape_of(name)
    exact = ExactModel(model.params, model.n_head)
    checked = 0
    for visit in certified_walk(model, shape):
        if visit.logits is None:
            continue
        mid, rad = np.split(visit.logits, 2, axis=1)
        np.testing.assert_array_equal(mid, forward(model.params, visit.prefixes, model.n_head, last_only=True))
        assert np.isfinite(rad).all() and (rad > 0).all()
        for row in (0, len(mid) - 1):  # a few contexts in 50 digits (a prefix's keys are remembered)
            real = np.array([float(value) for value in exact.logits(tuple(visit.prefixes[row].tolist()))])
            assert (np.abs(real - mid[row]) <= rad[row]).all()
            checked += 1
    assert checked >= 8


@pytest.mark.parametrize("name, change", [("add", ("mlp", "c_proj")), ("add", ("attn", "c_proj")),
                                          ("parity", ("mlp", "c_fc"))])
def test_a_resumed_variant_gives_the_edited_files_forward_logits(name, change):
    model, shape = shape_of(name)
    params = copy.deepcopy(model.params)
    last = params["blocks"][-1][change[0]][change[1]]
    last["w"] = last["w"] * 0.75  # the last block's layer scaled: the variant resumes there
    variant = replace(model, params=params)
    plan = resumed(model, variant)
    assert plan.stage > 1 and plan.hooks  # resumed, not walked from its embeddings
    judged = 0
    for visit, logits, _ in variant_walk(model, [plan], shape):
        if logits is not None:
            np.testing.assert_array_equal(logits[0], forward(params, visit.prefixes, model.n_head, last_only=True))
            np.testing.assert_array_equal(visit.logits, forward(model.params, visit.prefixes, model.n_head,
                                                                last_only=True))
            judged += int(visit.judged.sum())
    assert judged > 100
