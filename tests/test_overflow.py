"""An overflow or a NaN inside the certified arithmetic never leaves a finite radius (issue 30).

A fuzz against tests/exact.py's 50-digit forward pass (mpmath: no overflow, no NaN) on small random models whose
entries span float64's whole range, and on models placed where an intermediate overflows: LayerNorm's squares,
GELU's x³ and its exp, attention's q·k and softmax, sums and products near 1.8e308. Every certified pass the
judge reads (whole contexts, the domain walk, every string cut by slot) must hold the real logits within every
finite radius, and a context its bounds prove must be the real model's prediction; an infinite or NaN radius is
allowed: it proves nothing. Then crafted files through the command line: a model that float64 gets right only
because an intermediate overflowed is never proved, solved or recorded.
"""

import json
import math

import exact
import mpmath as mp
import numpy as np
import pytest
from exact import ExactModel
from reference import params_to_document

from handwired.engine import certify
from handwired.engine.arithmetic import interval
from handwired.engine.parts import every_string
from handwired.engine.walk import EveryString
from handwired.weightfile import Model, load
from handwired.weightfile.parse import parse

VOCAB = ["a", "b", "c"]
SEEDS = 30  # models per kind: the 50-digit pass is slow, and most models of the wide kinds overflow at once


def draw(rng, shape, low, high, zeros=0.3):
    """Entries of random sign and magnitude 10^U(low, high) (log-uniform), about ``zeros`` of them exactly 0."""
    magnitude = 10.0 ** rng.uniform(low, high, shape)
    values = rng.choice([-1.0, 1.0], shape) * magnitude
    return np.where(rng.random(shape) < zeros, 0.0, values)


def skeleton(rng, scale):
    """A random model's parameters (vocab 2-3, n_ctx 2-4, n_embd 4-8, 0-2 blocks, each LayerNorm and MLP there or
    not), every array drawn by ``scale(name, shape)``, and its n_head."""
    n_vocab = int(rng.integers(2, 4))
    n_ctx = int(rng.integers(2, 5 if n_vocab == 2 else 4))  # at most 39 contexts: the 50-digit pass is slow
    n_embd = int(rng.choice([4, 6, 8]))
    n_head = int(rng.choice([h for h in (1, 2) if n_embd % h == 0]))
    blocks = []
    for _ in range(int(rng.integers(0, 3))):
        block = {"attn": {"c_attn": {"w": scale("c_attn.w", (n_embd, 3 * n_embd)), "b": scale("c_attn.b", 3 * n_embd)},
                          "c_proj": {"w": scale("c_proj.w", (n_embd, n_embd)), "b": scale("c_proj.b", n_embd)}}}
        if rng.random() < 0.6:
            block["ln_1"] = {"g": scale("ln.g", n_embd), "b": scale("ln.b", n_embd)}
        if rng.random() < 0.6:
            hidden = int(rng.integers(2, 7))
            block["mlp"] = {"c_fc": {"w": scale("c_fc.w", (n_embd, hidden)), "b": scale("c_fc.b", hidden)},
                            "c_proj": {"w": scale("mlp.c_proj.w", (hidden, n_embd)), "b": scale("c_proj.b", n_embd)}}
            if rng.random() < 0.6:
                block["ln_2"] = {"g": scale("ln.g", n_embd), "b": scale("ln.b", n_embd)}
        blocks.append(block)
    params = {"wte": scale("wte", (n_vocab, n_embd)), "wpe": scale("wpe", (n_ctx, n_embd)), "blocks": blocks}
    if rng.random() < 0.6:
        params["ln_f"] = {"g": scale("ln.g", n_embd), "b": scale("ln.b", n_embd)}
    return params, n_head


def moderate(rng):  # ordinary weights, of unit size
    return lambda name, shape: draw(rng, shape, -1, 0.5)


def fuzz_params(kind: str, rng):
    """A random model of one kind: its parameters and n_head."""
    if kind == "wide":  # every entry log-uniform over 1e-300…1e300
        return skeleton(rng, lambda name, shape: draw(rng, shape, -300, 300))
    if kind == "wide arrays":  # each array one magnitude, log-uniform over 1e-300…1e300
        return skeleton(rng, lambda name, shape: draw(rng, shape, *(rng.uniform(-300, 300) + np.array([-1, 1]))))
    params, n_head = skeleton(rng, moderate(rng))
    n_embd = params["wte"].shape[1]
    if kind == "layer norm squares":  # residual entries of 1e150…1e160: the centred squares overflow
        for name in ("wte", "wpe"):
            params[name] += draw(rng, params[name].shape, 150, 160, zeros=0.7)
        for block in params["blocks"]:  # so that a later block's LayerNorm meets them too, if any
            block.setdefault("ln_1", {"g": draw(rng, n_embd, -1, 1), "b": draw(rng, n_embd, -1, 0.5)})
    elif kind == "gelu":  # pre-activations near ±1e103 (x³ overflows), ±1.3e154 (x² does), or -20.7 (exp's edge)
        for block in params["blocks"]:
            mlp = block.setdefault("mlp", {"c_fc": {"w": draw(rng, (n_embd, 3), -1, 0.5), "b": np.zeros(3)},
                                           "c_proj": {"w": draw(rng, (3, n_embd), -1, 0.5), "b": np.zeros(n_embd)}})
            hidden = mlp["c_fc"]["b"].shape[0]
            edge = rng.choice([103.2, 154.1, math.log10(20.7)], hidden)
            mlp["c_fc"]["w"] = mlp["c_fc"]["w"] * 10.0 ** (edge + rng.uniform(-0.3, 0.3, hidden))
            mlp["c_fc"]["b"] = np.where(rng.random(hidden) < 0.5, -(10.0 ** edge) * rng.uniform(0.9, 1.1, hidden), 0.0)
            mlp["c_proj"]["w"] = mlp["c_proj"]["w"] * 10.0 ** -rng.uniform(90, 160, (hidden, 1))
    elif kind == "attention":  # q·k near overflow, or scores that saturate softmax (near its reach of 700, or far)
        for block in params["blocks"]:
            w = block["attn"]["c_attn"]["w"]
            size = 10.0 ** rng.choice([154.0, 155.0, 1.5, 3.0, 8.0])
            w[:, :2 * n_embd] *= size * rng.uniform(0.5, 2, 2 * n_embd)
            w[:, 2 * n_embd:] *= 10.0 ** rng.choice([0.0, 150.0, 300.0])
    elif kind == "sums":  # embeddings, products and sums near 1.8e308 (no LayerNorm: its squares would overflow)
        params.pop("ln_f", None)
        if rng.random() < 0.5:  # wte + wpe, and x·wte, at the edge
            params["wpe"] = draw(rng, params["wpe"].shape, 306, 308.2, zeros=0.3)
        else:  # the unembedding's products at the edge: x·wte of about |wte|²
            params["wte"] = draw(rng, params["wte"].shape, 152.5, 154.3, zeros=0.2)
        for block in params["blocks"]:  # blocks read the huge residual at unit size, and write back near 1e308
            for name in ("ln_1", "ln_2"):
                block.pop(name, None)
            for layer in (block["attn"], block.get("mlp", {})):
                if layer:
                    layer["c_fc" if "c_fc" in layer else "c_attn"]["w"] *= 10.0 ** -rng.uniform(300, 310)
                    layer["c_proj"]["w"] *= 10.0 ** rng.uniform(280, 307.5)
    return params, n_head


def model_of(params, n_head) -> Model:
    n_vocab, n_ctx = len(params["wte"]), len(params["wpe"])
    model, problems = parse(params_to_document(params, n_head, VOCAB[:n_vocab], n_ctx), "fuzz.json")
    assert model is not None and not problems, problems
    return model


def every_context(model: Model) -> dict[int, np.ndarray]:
    """Every string of length 1…n_ctx, by length, in vocab order."""
    return {length: np.array(np.meshgrid(*[range(model.n_vocab)] * length, indexing="ij")).reshape(length, -1).T
            for length in range(1, model.n_ctx + 1)}


def certified_passes(model: Model) -> dict[str, dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]]]:
    """What each certified pass gives every context: (mid, rad) of its logits."""
    n = model.n_vocab
    whole = {}
    for tokens in every_context(model).values():
        mid, rad = certify.certified_logits(model, tokens)
        whole.update({tuple(int(t) for t in row): (mid[i], rad[i]) for i, row in enumerate(tokens)})
    walk = {tuple(int(t) for t in row): (packed[:n], packed[n:])
            for visit in certify.certified_walk(model, EveryString(n, model.n_ctx))
            if visit.logits is not None for row, packed in zip(visit.prefixes[visit.judged],
                                                               visit.logits[visit.judged])}
    strings = {tuple(int(t) for t in row): (packed[:n], packed[n:])  # what check --exhaustive walks: cut by slot
               for visit in every_string(model, lambda shape: certify.certified_walk(model, shape))
               if visit.logits is not None for row, packed in zip(visit.prefixes[visit.judged],
                                                                  visit.logits[visit.judged])}
    assert whole.keys() == walk.keys() == strings.keys()
    return {"whole contexts": whole, "domain walk": walk, "every string": strings}


def violations(model: Model, label: str) -> tuple[list[str], int]:
    """Where a pass's finite radius misses the real logit, or its bounds prove a token the real model does not
    predict, one line each; and how many finite radii the passes gave (the claims checked)."""
    real_model = ExactModel(model.params, model.n_head)
    found, claimed = [], 0
    with np.errstate(all="ignore"):  # the float passes overflow here on purpose
        passes = certified_passes(model)
    for name, logits in passes.items():
        for context, (mid, rad) in logits.items():
            if not np.isfinite(rad).any():
                continue  # nothing claimed
            claimed += int(np.isfinite(rad).sum())
            real = real_model.logits(context)
            with np.errstate(all="ignore"):
                lo, hi = certify.logit_bounds(mid, rad)
            for t in np.flatnonzero(np.isfinite(rad)):
                if not mp.mpf(float(lo[t])) <= real[t] <= mp.mpf(float(hi[t])):  # a NaN bound is never within
                    found.append(f"{label} {name} {context} token {t}: real {mp.nstr(real[t], 8)} outside "
                                 f"mid {mid[t]!r} ± rad {rad[t]!r}")
            for t in range(model.n_vocab):
                others = np.delete(hi, t)
                if lo[t] > others.max() and not all(real[t] > real[u] for u in range(model.n_vocab) if u != t):
                    found.append(f"{label} {name} {context}: token {t} proved, real logits "
                                 f"{[mp.nstr(v, 8) for v in real]}")
    return found, claimed


KINDS = ["wide", "wide arrays", "layer norm squares", "gelu", "attention", "sums"]


@pytest.mark.parametrize("kind", KINDS)
def test_finite_radii_hold_the_real_logits_across_float64s_range(kind):
    """Seeded random models of each kind: wherever a certified pass (whole contexts, the domain walk, every string)
    gives a finite radius, the 50-digit logit is within it, and every context its bounds prove is predicted so in
    real arithmetic too."""
    found, claimed = [], 0
    for seed in range(SEEDS):
        rng = np.random.default_rng([30, KINDS.index(kind), seed])
        params, n_head = fuzz_params(kind, rng)
        more, claims = violations(model_of(params, n_head), f"{kind} #{seed}")
        found += more
        claimed += claims
    assert not found, f"{len(found)} violations; the first: " + " | ".join(found[:3])
    assert claimed > 0  # the kind makes some finite claims: it tests something


def test_layer_norm_bounds_hold_where_the_squares_overflow():
    """LayerNorm's bounds alone, on rows with entries of 1e150…1e160 among small ones (and a few near 1e300), along
    either axis (the whole-context pass's rows, the walk's columns): a finite radius holds the 50-digit value."""
    rng = np.random.default_rng(30)
    found = []
    for _ in range(200):
        n = int(rng.integers(2, 9))
        row = draw(rng, n, -1, 1, zeros=0.2) + draw(rng, n, *rng.choice([(150, 160), (153, 155), (299, 300)]),
                                                    zeros=0.6)
        g, b = draw(rng, n, -1, 1.5), draw(rng, n, -1, 0.5, zeros=0.5)
        real = exact.layer_norm(row, g, b)
        for axis in (-1, 0):
            shaped = (lambda a: a[None, :]) if axis == -1 else (lambda a: a[:, None])
            with np.errstate(all="ignore"):
                mid, rad = interval.layer_norm_bounds((shaped(row), shaped(np.abs(row) * interval.U)), shaped(g),
                                                      shaped(b), axis=axis)
                lo, hi = certify.logit_bounds(mid.ravel(), rad.ravel())
            found += [f"row {row.tolist()} g {g.tolist()} b {b.tolist()} axis {axis} entry {i}: real "
                      f"{mp.nstr(real[i], 8)} outside {mid.ravel()[i]!r} ± {rad.ravel()[i]!r}"
                      for i in range(n) if math.isfinite(rad.ravel()[i])
                      and not mp.mpf(float(lo[i])) <= real[i] <= mp.mpf(float(hi[i]))]
    assert not found, f"{len(found)} violations; the first: {found[0]}"


def test_layer_norm_bounds_hold_for_every_input_within_its_radius():
    """LayerNorm's bounds alone, on inputs known exactly or only within radii from 1e-17 of their size to wider than
    the entries themselves (so the real variance, and LayerNorm's divisor, is far from float64's), entries from 1e-300
    to 1e150 and gains from 1e-300 to 1e100, along either axis: the 50-digit value at the radii's corners and at
    points inside is within every finite radius, and the radius is finite wherever nothing overflows."""
    rng = np.random.default_rng(31)
    found, finite = [], 0
    for _ in range(300):
        n = int(rng.integers(2, 9))
        low, high = sorted(rng.uniform(-300, 150, 2)) if rng.random() < 0.5 else (-6, 2)
        row = draw(rng, n, low, high, zeros=0.2) if rng.random() < 0.7 else rng.normal(0, 10 ** rng.uniform(-5, 1), n)
        width = np.abs(row) * 10.0 ** rng.uniform(-17, 0.5, n) + np.abs(draw(rng, n, low - 5, high - 2, zeros=0.7))
        width *= rng.random() < 0.7  # or exact, as the embeddings are: forward's roundings alone
        g = draw(rng, n, *rng.choice([(-1, 1.5), (-300, -290), (90, 100), (-20, 20)]), zeros=0.1)
        b = rng.normal(0, 1, n)
        for axis in (-1, 0):
            shaped = (lambda a: a[None, :]) if axis == -1 else (lambda a: a[:, None])
            with np.errstate(all="ignore"):
                mid, rad = interval.layer_norm_bounds((shaped(row), shaped(width)), shaped(g), shaped(b), axis=axis)
            mid, rad = mid.ravel(), rad.ravel()
            finite += bool(np.isfinite(rad).all())
            for point in range(3):
                where = rng.choice([-1.0, 1.0], n) if point < 2 else rng.uniform(-1, 1, n)
                real_x = [mp.mpf(float(x)) + mp.mpf(float(w)) * mp.mpf(float(t)) for x, w, t in zip(row, width, where)]
                real = exact._layer_norm(real_x, {"g": [mp.mpf(float(v)) for v in g],
                                                  "b": [mp.mpf(float(v)) for v in b]})
                found += [f"row {row.tolist()} ± {width.tolist()} g {g.tolist()} b {b.tolist()} axis {axis} entry {i}: "
                          f"real {mp.nstr(real[i], 8)} outside {mid[i]!r} ± {rad[i]!r}"
                          for i in range(n) if math.isfinite(rad[i]) and abs(real[i] - mp.mpf(mid[i])) > rad[i]]
    assert not found, f"{len(found)} violations; the first: {found[0]}"
    assert finite >= 200  # most rows are bounded: the test claims something


def test_an_overflowing_unembedding_leaves_no_finite_radius():
    """No blocks, no ln_f: after b, the logit of a is 1e308 + 1e308 - 1.5e308 = 5e307 in real arithmetic, and +inf in
    float64, whose sum overflows before the last term; b's is 1.7e308. A finite radius around +inf would rank a
    first where the real model says b: every pass must give that logit an infinite (or NaN) radius."""
    doc = {"format": "handwired/1", "vocab": ["a", "b"], "n_ctx": 1, "n_embd": 3, "n_head": 1,
           "wte": [[1e154, 1e154, -1.5e154], [1.7e154, 0.0, 0.0]], "wpe": [[-0.7e154, 1e154, 1e154]], "blocks": []}
    model, problems = parse(doc, "unembedding.json")
    assert not problems and model is not None
    with np.errstate(all="ignore"):
        mid, _ = certify.certified_logits(model, np.array([[1]]))
    real = ExactModel(model.params, 1).logits((1,))
    assert mid[0, 0] == np.inf and np.isfinite(mid[0, 1]) and 0 < real[0] < real[1]  # float64 ranks a first, real b
    found, claimed = violations(model, "unembedding")
    assert not found, found
    assert claimed > 0  # b's logits


# float64 says b after a, real arithmetic a: ln_f's centred squares overflow (1e160² > 1.8e308), float64 divides by
# √inf and returns ln_f's bias, (0, 1, 0, 0), while the real ln_f of a's residual has -10·(-0.577) = 5.77 on a
OVERFLOW_LN_F = {"format": "handwired/1", "name": "overflow-lnf", "vocab": ["a", "b"], "n_ctx": 4, "n_embd": 4,
                 "n_head": 1, "dims": ["a", "b", "big", "pad"], "target": "ab",
                 "wte": {"a": {"a": 1, "big": 1e160}, "b": {"b": 1}}, "wpe": {}, "blocks": [],
                 "ln_f": {"g": {"a": -10, "b": 0, "big": 0, "pad": 0}, "b": {"b": 1}}}

# The same in block 0's ln_1: every position carries 1e160 on big, so float64's ln_1 is 0 everywhere and the head
# (uniform attention, v = ln_1's big) writes nothing, while the real ln_1 has √3 = 1.732 on big and the head writes
# -3·1.732 on b. The MLP (no LayerNorm) turns the current token into the other one, by 3·gelu(1) = 2.52; so after a
# float64 says b (2.52 against 1) and real arithmetic a (1 against -5.20 + 2.52). No ln_f, and wte has nothing on
# big: the overflow is in ln_1 alone.
OVERFLOW_LN_1 = {
    "format": "handwired/1", "name": "overflow-ln1", "vocab": ["a", "b"], "n_ctx": 4, "n_embd": 4, "n_head": 1,
    "dims": ["a", "b", "big", "s"], "target": "ab",
    "wte": {"a": {"a": 1}, "b": {"b": 1}}, "wpe": {str(p): {"big": 1e160} for p in range(4)},
    "blocks": [{"ln_1": {"g": {"big": 1}, "b": {}},
                "attn": {"c_attn": {"w": {"big": {"v3": 1}}, "b": {}}, "c_proj": {"w": {"z3": {"b": -3}}, "b": {}}},
                "mlp": {"hidden": 2, "c_fc": {"w": {"a": {"0": 1}, "b": {"1": 1}}, "b": {}},
                        "c_proj": {"w": {"0": {"b": 3}, "1": {"a": 3}}, "b": {}}}}]}


def float_and_real(path) -> tuple[str, str]:
    """The token float64 and real arithmetic predict after 'a'."""
    model = load(str(path))
    mid, _ = certify.certified_logits(model, np.array([[0]]))
    real = ExactModel(model.params, model.n_head).logits((0,))
    return model.vocab[int(np.argmax(mid[0]))], model.vocab[max(range(model.n_vocab), key=lambda t: real[t])]


@pytest.mark.parametrize("doc", [OVERFLOW_LN_F, OVERFLOW_LN_1], ids=["ln_f", "ln_1"])
def test_check_does_not_prove_what_only_an_overflow_gets_right(doc, write_json):
    """The model passes in float64 on every context only because LayerNorm's squares overflow; after a real
    arithmetic predicts a. ``check`` (the stream) and ``check --exhaustive`` (every string) must not prove it:
    exit 1, "Not proved", and none of the four judged contexts ending in a proved."""
    from test_cli import invoke

    path = write_json(doc)
    assert float_and_real(path) == ("b", "a")  # the test means something: float64 is right, real arithmetic wrong
    for flags in ((), ("--exhaustive",)):
        result = invoke("check", str(path), *flags)
        assert result.exit_code == 1, (flags, result.stdout)
        assert "Proved on every context" not in result.stdout and "Not proved" in result.stdout, (flags, result.stdout)
        verdict = json.loads(invoke("check", str(path), *flags, "--json").stdout)
        assert verdict["failed"] == 0 and verdict["unproved"] > 0 and not verdict["ok"], (flags, verdict)
    # every string: a, ba, aba, baba are judged (b next) and wrong in real arithmetic
    assert verdict["passed"] == 8 and verdict["proved"] <= 4, verdict


def test_a_puzzle_answer_that_only_an_overflow_gets_right_is_not_solved(write_json, handwired_home):
    """The ln_f model as an answer to the bundled puzzle 'ab' (within its caps): passing in float64 is not enough;
    it is not solved, through ``check`` (the file names the puzzle) or ``puzzles check ab``, and nothing reaches
    the progress file."""
    from test_cli import invoke

    path = write_json({**OVERFLOW_LN_F, "puzzle": "ab"})
    assert float_and_real(path) == ("b", "a")
    for args in (("check", str(path)), ("puzzles", "check", "ab", str(path))):
        result = invoke(*args)
        assert result.exit_code == 1, (args, result.stdout)
        assert "Solved puzzle" not in result.stdout and "Proved on every context" not in result.stdout, (
            args, result.stdout)
        verdict = json.loads(invoke(*args, "--json").stdout)
        assert not verdict["solved"] and verdict["score"] is None and verdict["unproved"] > 0, (args, verdict)
        assert not (handwired_home / "progress.json").exists(), args
