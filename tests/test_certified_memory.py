"""The memory estimate made before a certified check (``walk_bytes``, the figure ``refuse_large_walk`` compares with
MAX_MEMORY whether or not the proof is on) bounds what the certified walk allocates, as it does the float walk's."""

import tracemalloc

import numpy as np
from reference import params_to_document, random_params

from handwired.engine import certify
from handwired.engine.arithmetic.floats import float_walk
from handwired.engine.cost import walk_bytes
from handwired.engine.walk import EveryString
from handwired.weightfile import parse


def one_dimensional_heads():
    """Heads of one dimension each (n_head = n_embd, as caps allow): a key's bounds are as many numbers as the key."""
    params = random_params(np.random.default_rng(0), n_vocab=5, n_ctx=7, n_embd=16, n_layer=2, n_hidden=8)
    model, problems = parse(params_to_document(params, 16, "abcde", 7))
    assert not problems
    return model


def peak(visits) -> int:
    tracemalloc.start()
    try:
        for _ in visits:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_float_walk_stays_within_the_estimate():
    model = one_dimensional_heads()
    assert peak(float_walk(model, EveryString(5, 7))) <= walk_bytes(model, 7)


def test_the_certified_walk_stays_within_the_estimate():
    model = one_dimensional_heads()
    assert peak(certify.certified_walk(model, EveryString(5, 7))) <= walk_bytes(model, 7)
