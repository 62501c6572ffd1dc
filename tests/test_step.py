"""The float step of the walk on columns, skipping the attention dimensions that cannot reach the output: its logits
are the independent reference pass's on sparse models (zero q, k or v columns, zero c_proj rows, a head that
attends evenly or adds nothing), and with a hook every intermediate is forward.py's at the last position."""

import numpy as np
import pytest
from reference import params_to_document, random_params, reference_forward

from handwired.engine.arithmetic import floats as stepping
from handwired.engine.arithmetic.floats import float_walk, prepare
from handwired.engine.forward import forward
from handwired.engine.walk import EveryString, Listed
from handwired.weightfile import parse

N_EMBD, N_HEAD, N_VOCAB, N_CTX = 8, 2, 4, 6  # d_head 4


def model_of(params):
    model, problems = parse(params_to_document(params, N_HEAD, "abcd", N_CTX))
    assert problems == []
    return model


def sparse(seed, layer_norm):
    """A random model whose attentions are cut the way hand-wired ones are: in block 0 head 0 has q only in dim 1 and
    k in dims 1 and 2 (one score dim), head 1 no q at all (it attends evenly), v only in dim 5 (head 1) and a bias
    alone in dim 6; in block 1 head 0's v dims are all cut from c_proj (it adds nothing), and so on."""
    rng = np.random.default_rng(seed)
    params = random_params(rng, n_vocab=N_VOCAB, n_ctx=N_CTX, n_embd=N_EMBD, n_layer=2, n_hidden=6,
                           layer_norm=layer_norm)
    first, second = (block["attn"] for block in params["blocks"])
    q, k, v = (slice(i * N_EMBD, (i + 1) * N_EMBD) for i in range(3))
    for attn, q_dims, k_dims, v_dims in ((first, [1], [1, 2], [5]), (second, [0, 3, 4, 6], [0, 3, 5, 6, 7], [])):
        for part, dims in ((q, q_dims), (k, k_dims), (v, v_dims)):
            cut = [d for d in range(N_EMBD) if d not in dims]
            attn["c_attn"]["w"][:, part][:, cut] = 0
            attn["c_attn"]["b"][part][cut] = 0
    first["c_attn"]["b"][2 * N_EMBD + 6] = 0.8  # a value made by its bias alone
    second["c_attn"]["w"][:, 2 * N_EMBD:] = np.random.default_rng(seed + 1).normal(0, 0.7, (N_EMBD, N_EMBD))
    second["c_proj"]["w"][:4] = 0  # head 0's values reach nothing
    second["c_proj"]["w"][6] = 0
    return params


def contexts(seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, N_VOCAB, (12, length)) for length in range(1, N_CTX + 1)] + [
        np.array([[0, 1, 2, 3, 0, 1], [0, 1, 2, 3, 0, 2]])]  # an only child's chain, then two siblings


@pytest.mark.parametrize("layer_norm", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_sparse_model_walks_to_the_reference_logits(seed, layer_norm):
    params = sparse(seed, layer_norm)
    model = model_of(params)
    shape = Listed(contexts(seed), N_VOCAB)
    compared = 0
    for visit in float_walk(model, shape, chunk=5):
        judged = visit.prefixes[visit.judged]
        for row, logits in zip(judged, visit.logits[visit.judged] if len(judged) else ()):
            want = reference_forward(params, row.tolist(), N_HEAD)[0][-1]
            np.testing.assert_allclose(logits, want, rtol=1e-11, atol=1e-11)
            compared += 1
    assert compared == len(shape.contexts)


def test_the_skipped_dimensions_are_the_ones_that_cannot_matter():
    """Block 0 (looked up): head 0 keeps one score dim, head 1 none (padded to one zero column); values: dim 5 and
    the bias-made dim 6, both head 1's (head 0's padded). Block 1 (computed): score dims 0 and 3 (head 0) and 6
    (head 1); values 4, 5 and 7 (head 1)."""
    model = model_of(sparse(0, True))
    first, second = prepare(model, [True, True], full=False).heads
    assert (first.qk, first.v, first.b) == (1, 2, None)
    assert first.w.shape == (N_CTX, N_HEAD * (2 * 1 + 2), N_VOCAB)
    assert not first.w[:, [1, 3, 5]].any() and first.w[:, [0, 2, 6, 7]].any(axis=(0, 2)).all()  # pads are zero
    assert (second.qk, second.v) == (2, 3) and second.w.shape == (N_EMBD, N_HEAD * (2 * 2 + 3))
    np.testing.assert_array_equal(second.proj[3:], model.params["blocks"][1]["attn"]["c_proj"]["w"][[4, 5, 7]])
    assert not second.proj[:3].any()
    full = prepare(model, [True, True], full=True).heads[1]
    assert (full.qk, full.v) == (4, 4)
    np.testing.assert_array_equal(full.w, model.params["blocks"][1]["attn"]["c_attn"]["w"])


def test_with_a_hook_every_intermediate_is_forwards_at_the_last_position():
    """Every value the hook sees ([n, …]) against forward.py's record of the same contexts, at their last
    position; nothing is skipped, so the sparse model's full q, k, v and z come out."""
    params = sparse(3, True)
    model = model_of(params)
    seen: dict[str, list] = {}
    walked = []
    for visit in float_walk(model, EveryString(N_VOCAB, 3), hook=lambda name, value: seen.setdefault(
            name, []).append(np.array(value))):
        walked.append(visit.prefixes)
    assert len(seen) == 2 + 2 * 16 + 3 and all(len(values) == len(walked) for values in seen.values())
    for i, prefixes in enumerate(walked):
        record: dict = {}
        forward(params, prefixes, N_HEAD, record=record)
        for name, values in seen.items():
            want = record[name]
            if name.endswith(("scores_before_mask", "hook_attn_scores", "hook_pattern")):
                want = want[:, :, -1]  # [n, head, query, key] -> the last query
            elif name != "hook_pos_embed" or want.ndim > 2:
                want = want[:, -1]
            else:
                want = np.broadcast_to(want[-1], values[i].shape)
            np.testing.assert_allclose(values[i], want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_a_sibling_batch_keeps_its_past_in_its_lengths_room(monkeypatch):
    """Siblings' pasts live in one room per length, block and part, reused by each later batch of that length: a walk of
    every string allocates no new room once each length has its widest batch."""
    model = model_of(random_params(np.random.default_rng(5), n_vocab=N_VOCAB, n_ctx=N_CTX, n_embd=N_EMBD))
    made = []
    real = stepping.Prepared.room

    def watched(self, key, shape):
        before = self.rooms.get(key)
        out = real(self, key, shape)
        made.append(self.rooms[key] is not before)
        return out

    monkeypatch.setattr(stepping.Prepared, "room", watched)
    batches = sum(1 for _ in float_walk(model, EveryString(N_VOCAB, N_CTX), chunk=64))
    assert batches > 40 and 0 < sum(made) <= 2 * 2 * N_CTX < len(made)


def test_gelu_spares_exp_its_slow_inputs_and_gives_the_same_bits():
    """Far-off units (an MLP gated to -G) made exp overflow or leave the normal numbers, many times slower: gelu now
    clips them where it changes nothing. Every result is bit for bit the plain formula's, x / (1 + exp(-2u)), with
    -2u rounded in the same steps."""
    from handwired.engine.forward import gelu

    def plain(x):
        u = (x * x * (-2 * 0.044715 * np.sqrt(2 / np.pi)) - 2 * np.sqrt(2 / np.pi)) * x
        return x / (1 + np.exp(u))

    xs = np.concatenate([np.linspace(-40, 40, 80_001), -np.logspace(-320, 150, 3000), np.logspace(-320, 150, 3000),
                         [np.inf, -np.inf, np.nan, 0.0, -0.0, -21.5, -21.6, -22.0, -5096.0, 390.0]])
    with np.errstate(all="ignore"):
        got, want = gelu(xs.copy()), plain(xs)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    far = np.isfinite(xs) & (xs < -30)
    assert np.signbit(got[far]).all() and not got[far].any()  # far below zero: -0, as x / inf
