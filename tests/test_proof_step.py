"""The certified step of the domain walk on the float step's columns: its bounds hold in 50-digit arithmetic on
sparse models whose skipped dimensions matter, its mids are the float walk's bits, and a dimension float64
computes as zero for every input (but real arithmetic does not) is kept, not skipped."""

import glob
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from exact import ExactModel
from reference import params_to_document, random_params
from test_step import N_VOCAB, contexts, model_of, sparse
from walkable import too_large_to_walk

from handwired.engine.arithmetic import certified as proof_step
from handwired.engine.arithmetic import floats as stepping
from handwired.engine.arithmetic.floats import float_walk
from handwired.engine.certify import certified_walk, logit_bounds
from handwired.engine.walk import EveryString, Listed
from handwired.judge.game.catalogue import load_puzzle
from handwired.weightfile import load, parse

ROOT = Path(__file__).resolve().parent.parent
REFERENCES = sorted(glob.glob(str(ROOT / "puzzles" / "solutions" / "*.json")))


def by_context(visits) -> dict[tuple[int, ...], np.ndarray]:
    return {tuple(int(t) for t in row): logits for visit in visits if visit.logits is not None
            for row, logits in zip(visit.prefixes[visit.judged], visit.logits[visit.judged])}


def assert_bounds_hold(model, walked: dict, label) -> int:
    exact = ExactModel(model.params, model.n_head)
    for context, packed in walked.items():
        lo, hi = logit_bounds(packed[:model.n_vocab], packed[model.n_vocab:])
        real = exact.logits(context)
        assert all(mp.mpf(float(lo[t])) <= real[t] <= mp.mpf(float(hi[t])) for t in range(model.n_vocab)), (
            label, context, [float(v) for v in real], lo, hi)
    return len(walked)


@pytest.mark.parametrize("layer_norm", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_sparse_models_are_bounded_in_50_digits_with_the_float_walks_bits(seed, layer_norm):
    """Zero q, k or v columns, a head that attends evenly, one that adds nothing, a value made by its bias alone
    (test_step's models): in batches of 1, 5 and the walk's own size, every real logit lies within the bounds,
    and the mids are the float walk's logits bit for bit."""
    model = model_of(sparse(seed, layer_norm))
    shape = Listed(contexts(seed), N_VOCAB)
    for chunk in (1, 5, None):
        walked = by_context(certified_walk(model, shape, chunk=chunk))
        plain = by_context(float_walk(model, shape, chunk=chunk))
        assert walked.keys() == plain.keys() == shape.contexts
        for context, logits in plain.items():
            assert np.array_equal(walked[context][:N_VOCAB], logits), (chunk, context)
            assert (walked[context][N_VOCAB:] > 0).all()
    assert assert_bounds_hold(model, walked, (seed, layer_norm)) == len(shape.contexts)


@pytest.mark.parametrize("path", [path for path in REFERENCES if not too_large_to_walk(Path(path).stem)],
                         ids=lambda p: Path(p).stem)
def test_every_references_certified_walk_has_the_float_walks_bits(path):
    """On each bundled puzzle's whole set (its domain, or every string), walked as its check walks it (the
    certified walk's batches may be smaller, each node's numbers are its own)."""
    model, puzzle = load(path), load_puzzle(Path(path).stem)
    shape = puzzle.domain if puzzle.domain is not None else EveryString(model.n_vocab, model.n_ctx)
    plain, proved = by_context(float_walk(model, shape)), by_context(certified_walk(model, shape))
    assert plain.keys() == proved.keys() and len(plain) > 0
    assert all(np.array_equal(logits, proved[context][:model.n_vocab]) for context, logits in plain.items())


def rounded_away() -> tuple:
    """Block 0's q dimension 0 is x_0 - x_1, where x_0 = 1 + 2^-60 rounds to 1 = x_1 in float64: zero for every token
    at every position in float64, 2^-60 in real arithmetic, times keys of up to 2^52 (token b): real scores of
    0 and 1/512 where float64's are all 0. The value (dim 3) is the key's token."""
    params = random_params(np.random.default_rng(0), n_vocab=2, n_ctx=3, n_embd=4, n_layer=1, layer_norm=False,
                           mlp=False)
    params["wte"] = np.array([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.5]])
    params["wpe"] = np.array([[2.0**-60, 0.0, 0.0, 0.0]] * 3)
    attn = params["blocks"][0]["attn"]
    w, b = np.zeros((4, 12)), np.zeros(12)
    w[0, 0], w[1, 0] = 1.0, -1.0  # q_0 = x_0 - x_1
    w[2, 4] = 2.0**52  # k_0 = 2^52 · x_2
    w[2, 11] = 1.0  # v_3 = x_2
    attn["c_attn"] = {"w": w, "b": b}
    attn["c_proj"] = {"w": np.diag([0.0, 0.0, 0.0, 3.0]), "b": np.zeros(4)}
    model, problems = parse(params_to_document(params, 1, "ab", 3))
    assert problems == []
    return model, Listed([np.array([[a, b, c] for a in (0, 1) for b in (0, 1) for c in (0, 1)])], 2)


def test_a_dimension_float64_rounds_to_zero_everywhere_is_kept_and_bounded(monkeypatch):
    """The float walk skips block 0's q dimension 0 (zero in its table for every input); the certified walk keeps
    it, since its weights are not zero, and its bounds hold the real logits. Skipping it as the float walk does
    would not be sound: the bounds then miss the real logits."""
    model, shape = rounded_away()
    reads = [True]
    assert stepping.prepare(model, reads, False).heads[0].columns[0] == -1  # the float walk: no score dimension
    assert proof_step.prepare(model).floats.heads[0].columns[0] == 0  # the certified walk keeps q_0 (and k_0)
    walked = by_context(certified_walk(model, shape))
    assert assert_bounds_hold(model, walked, "kept") == 8
    real = ExactModel(model.params, 1).logits((0, 1, 0))
    assert all(np.isfinite(packed).all() for packed in walked.values())
    assert abs(real[1] - mp.mpf(float(by_context(float_walk(model, shape))[(0, 1, 0)][1]))) > mp.mpf("1e-4")

    real_prepare = stepping.prepare
    monkeypatch.setattr(stepping, "prepare", lambda model, reads, full, by_weights=False: real_prepare(
        model, reads, full))
    with pytest.raises(AssertionError):
        assert_bounds_hold(model, by_context(certified_walk(model, shape)), "skipped")
