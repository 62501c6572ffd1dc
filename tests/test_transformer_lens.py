"""An exported folder in the real TransformerLens computes what handwired computes.

Needs torch and transformer-lens, which the main test run does not install: this
module runs in its own environment (``.ci/transformer-lens``, see the README). There
HANDWIRED_REQUIRE_TL=1 is set, so a missing library fails the run instead of skipping;
and in CI (CI=true) the main run fails here unless that comparison has passed.

Each model is exported, loaded with the very loading code the folder's README gives,
and run on every context of length 1 … min(n_ctx, 6); the logits and every hook handwired records under a
TransformerLens name must agree with handwired's to 1e-9 of their size.
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from test_interop import random_model

from handwired.engine.forward import forward
from handwired.interop import export_folder, import_folder
from handwired.interop.readme import LOAD_V3, LOAD_V4, TESTED
from handwired.weightfile import bundled_models, load

try:
    from importlib.metadata import version

    import torch
    import transformer_lens  # noqa: F401  (only whether it is there)

    TL_VERSION = version("transformer-lens")
except ImportError as error:  # pragma: no cover - depends on the environment
    # .ci/transformer-lens leaves this behind once the comparison has passed in .venv-tl
    COMPARED = Path(__file__).resolve().parent.parent / ".venv-tl" / "compared"
    in_ci = os.environ.get("CI", "").lower() in ("true", "1")
    if os.environ.get("HANDWIRED_REQUIRE_TL") == "1" or (in_ci and not COMPARED.is_file()):
        raise RuntimeError(f"the comparison with TransformerLens must run here, but TransformerLens cannot be "
                           f"imported ({error}) and no {COMPARED} says it passed in .venv-tl: "
                           "run .ci/transformer-lens") from None
    if COMPARED.is_file():
        pytest.skip(f"compared in .venv-tl with TransformerLens {COMPARED.read_text().strip()}",
                    allow_module_level=True)
    pytest.skip(f"TransformerLens not installed ({error}); run .ci/transformer-lens", allow_module_level=True)

MAJOR = TL_VERSION.split(".")[0]
# 3.x warns that HookedTransformer goes away in 4.0; the 3.x loader is tested on purpose
pytestmark = pytest.mark.filterwarnings("ignore:HookedTransformer is deprecated:DeprecationWarning")
TOLERANCE = 1e-9
MAX_LENGTH = 6
MAX_CONTEXTS = 4096  # per length: every context while there are so few, else as many drawn at random (add: 12**6)
ATTENTION_HOOKS = ("hook_q", "hook_k", "hook_v", "hook_pattern", "hook_z")


RANDOM = {
    # the forward pass tests' set: (n_head, layer_norm, mlp, n_layer)
    f"random h{h} ln{int(ln)} mlp{int(mlp)} L{n}": (lambda h=h, ln=ln, mlp=mlp, n=n:
                                                    random_model(h * 100 + n, h, ln, mlp, n))
    for h, ln, mlp, n in [(1, False, False, 1), (2, False, False, 1), (4, True, False, 2), (2, False, True, 2),
                          (4, True, True, 2), (8, True, True, 3)]
}
# blocks with MLPs of different widths and one without: zero padding and a zero MLP
RANDOM["random mixed widths"] = lambda: random_model(21, 2, False, [5, None, 12])
RANDOM["random mixed widths, LayerNorm"] = lambda: random_model(22, 4, True, [None, 3, 9])
SOLUTIONS = sorted((Path(__file__).resolve().parent.parent / "puzzles" / "solutions").glob("*.json"))
MODELS = {
    **{f"bundled {name}": (lambda name=name: load(name)) for name in bundled_models()},
    **{f"solution {path.stem}": (lambda path=path: load(str(path))) for path in SOLUTIONS},  # hand-wired too
    **RANDOM,
}


def load_in_transformer_lens(folder: Path):
    """The README's own loading code, run as a user would."""
    namespace: dict = {}
    exec(LOAD_V4 if MAJOR == "4" else LOAD_V3, namespace)
    return namespace["load_handwired"](str(folder))


def contexts_of(n_vocab: int, length: int) -> np.ndarray:  # -> [min(n_vocab**length, MAX_CONTEXTS), length]
    if n_vocab**length > MAX_CONTEXTS:
        tokens = np.random.default_rng(length).integers(0, n_vocab, size=(MAX_CONTEXTS, length))
    else:
        grid = np.meshgrid(*[np.arange(n_vocab)] * length, indexing="ij")
        tokens = np.array(grid).reshape(length, -1).T
    # contiguous: TransformerLens 3.x's MLP views its input and fails on a transposed batch
    return np.ascontiguousarray(tokens)


def relative_error(found, expected) -> float:
    found, expected = np.asarray(found), np.asarray(expected)
    assert found.shape == expected.shape, (found.shape, expected.shape)
    return float(np.max(np.abs(found - expected)) / max(1.0, float(np.max(np.abs(expected)))))


def test_versions_match_the_readme():
    assert TL_VERSION == TESTED[MAJOR], f"README says {TESTED[MAJOR]} was tested, this is {TL_VERSION}"
    assert torch.__version__.startswith("2.13.0")


# What handwired records under names of its own, which TransformerLens has no hook for
HANDWIRED_ONLY = ("logits", "probs", ".attn.scores_before_mask")
# A hook TransformerLens has under the same name in one major version only: 3.x has no LayerNorm hook_out
NOT_IN = {"3": (".hook_out",), "4": ()}


@pytest.mark.parametrize("name", list(MODELS))
def test_transformer_lens_computes_what_handwired_computes(name, tmp_path):
    """Hook by hook: every hook handwired records under a TransformerLens name holds what TransformerLens holds
    there, but the one docs/transformer-lens.md lists (4.x's hook_attn_scores, see check_conventions)."""
    model = MODELS[name]()
    folder = tmp_path / "export"
    export_folder(model, folder)
    tl_model = load_in_transformer_lens(folder)
    assert next(tl_model.parameters()).dtype == torch.float64
    worst = {"logits": 0.0}
    for length in range(1, min(model.n_ctx, MAX_LENGTH) + 1):
        tokens = contexts_of(model.n_vocab, length)  # [batch, length]
        record: dict = {}
        expected = forward(model.params, tokens, model.n_head, record=record)
        with torch.no_grad():
            logits, cache = tl_model.run_with_cache(torch.from_numpy(tokens))
        worst["logits"] = max(worst["logits"], relative_error(logits.numpy(), expected))
        for key in compared_hooks(record):
            found = cache[key].numpy()
            if key.endswith((".mlp.hook_pre", ".mlp.hook_post")):  # an export pads narrower MLPs to the widest
                found = found[..., :record[key].shape[-1]]
            hook = key.rsplit(".", 1)[-1] if key.startswith("blocks.") else key
            worst[hook] = max(worst.get(hook, 0.0), hook_error(found, record[key]))
        for i in range(model.n_layer):
            check_conventions(model, i, cache, record)
    print(f"\n{name} (TransformerLens {TL_VERSION}): worst relative error {worst}")
    assert set(ATTENTION_HOOKS) <= set(worst) or model.n_layer == 0
    assert all(error <= TOLERANCE for error in worst.values()), worst


def compared_hooks(record: dict) -> list[str]:
    """The hooks handwired records under a TransformerLens name in this major version."""
    skipped = HANDWIRED_ONLY + NOT_IN[MAJOR] + ((".attn.hook_attn_scores",) if MAJOR == "4" else ())
    return [key for key in record if not (key in HANDWIRED_ONLY or key.endswith(skipped))]


def hook_error(found, expected) -> float:
    """relative_error, where −∞ (a masked score) must be −∞ in both."""
    found, expected = np.asarray(found), np.asarray(expected)
    assert found.shape == expected.shape, (found.shape, expected.shape)
    assert np.array_equal(np.isneginf(found), np.isneginf(expected))
    finite = np.isfinite(expected)
    return relative_error(found[finite], expected[finite]) if finite.any() else 0.0


def check_conventions(model, i, cache, record):
    """Where TransformerLens differs from itself: 4.x's boot_native path stores the softmax pattern under
    hook_attn_scores, where 3.x (and handwired) keep the scaled, masked scores."""
    scores = cache[f"blocks.{i}.attn.hook_attn_scores"].numpy()
    if MAJOR == "4":
        assert relative_error(scores, record[f"blocks.{i}.attn.hook_pattern"]) <= TOLERANCE
    else:
        assert hook_error(scores, record[f"blocks.{i}.attn.hook_attn_scores"]) <= TOLERANCE


def test_the_folders_readme_runs_as_written(tmp_path, monkeypatch, capsys):
    import re

    model = load("multihead")
    folder = tmp_path / "export"
    export_folder(model, folder)
    loader_v4, loader_v3, use = re.findall(r"```python\n(.*?)```", (folder / "README.md").read_text(), re.S)
    monkeypatch.chdir(folder)
    namespace: dict = {}
    exec(loader_v4 if MAJOR == "4" else loader_v3, namespace)
    exec(use, namespace)
    printed = capsys.readouterr().out.splitlines()
    expected = re.search(r"argmax\(\)\]\)\s+# (\S+)", use).group(1)  # the prediction the README promises
    assert printed[0] == expected
    example = re.search(r'for c in "(\w+)"', use).group(1)
    assert printed[0] == model.vocab[int(forward(model.params, model.encode(example)[None],
                                                 model.n_head)[0, -1].argmax())]


@pytest.mark.skipif(MAJOR != "3", reason="HookedTransformer.state_dict() is the 3.x format; 4.x saves bridge keys")
def test_a_transformer_lens_state_dict_imports_exactly(tmp_path):
    """A model TransformerLens made itself (random init, tied and bias-free unembedding) comes into
    handwired exactly."""
    import json

    from safetensors.torch import save_file
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    config = {"d_model": 12, "d_head": 4, "n_heads": 3, "n_layers": 2, "n_ctx": 7, "d_vocab": 5, "d_mlp": 10,
              "act_fn": "gelu_new", "normalization_type": "LN", "positional_embedding_type": "standard",
              "default_prepend_bos": False, "seed": 3}
    tl_model = HookedTransformer(HookedTransformerConfig(**config, dtype=torch.float64))
    with torch.no_grad():
        for name, parameter in tl_model.named_parameters():
            if name.endswith(("ln1.w", "ln2.w", "ln_final.w")):
                parameter.normal_(1, 0.2)
            elif name.endswith((".b", "b_Q", "b_K", "b_V", "b_O", "b_in", "b_out")):
                parameter.normal_(0, 0.3)
        tl_model.unembed.W_U.copy_(tl_model.embed.W_E.T)
        tl_model.unembed.b_U.zero_()
    folder = tmp_path / "from-tl"
    folder.mkdir()
    save_file({k: v.contiguous() for k, v in tl_model.state_dict().items()}, str(folder / "model.safetensors"))
    # the whole config as TransformerLens holds it, every default included
    (folder / "config.json").write_text(json.dumps(tl_model.cfg.to_dict(), default=str))
    model = import_folder(folder, tmp_path / "model.json", vocab="abcde")
    assert load(str(tmp_path / "model.json")).dims == model.dims
    tokens = contexts_of(5, 4)
    with torch.no_grad():
        expected = tl_model(torch.from_numpy(tokens)).numpy()
    assert relative_error(forward(model.params, tokens, model.n_head), expected) <= TOLERANCE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q", "-s"]))


@pytest.mark.parametrize("name", ["random h4 ln1 mlp0 L2", "random h8 ln1 mlp1 L3", "random mixed widths, LayerNorm"])
def test_the_residual_stream_helpers_apply_ln_as_transformer_lens_does(name, tmp_path):
    """decompose_resid and accumulated_resid with apply_ln=True, at every layer, hold what TransformerLens's hold:
    the components centred and divided by the scale of the LayerNorm that reads the stream there, no gain, no
    bias; but accumulated_resid up to the end, which applies the whole final LayerNorm to each component (its own
    statistics, gain and bias: a logit lens)."""
    import handwired

    model = RANDOM[name]()
    export_folder(model, tmp_path / "export")
    tl_model = load_in_transformer_lens(tmp_path / "export")
    tokens = contexts_of(model.n_vocab, min(model.n_ctx, 4))
    _, cache = handwired.load(model).run_with_cache(tokens)
    with torch.no_grad():
        _, tl_cache = tl_model.run_with_cache(torch.from_numpy(tokens))
    mids = all(("resid_mid", i) in cache for i in range(model.n_layer))  # TransformerLens has none attention-only
    for layer in range(model.n_layer + 1):
        found, labels = cache.decompose_resid(layer, apply_ln=True, return_labels=True)
        assert by_label(found, labels, *tl_cache.decompose_resid(layer, apply_ln=True, return_labels=True)), layer
        found, labels = cache.accumulated_resid(layer, incl_mid=mids, apply_ln=True, return_labels=True)
        expected, tl_labels = tl_cache.accumulated_resid(layer, incl_mid=mids, apply_ln=True, return_labels=True)
        assert by_label(found, labels, expected, tl_labels), layer
        if layer:  # and one hook of each block before it, stacked
            expected = tl_cache.stack_activation("normalized", layer, "ln1").detach().numpy()
            assert relative_error(cache.stack_activation("normalized", layer, "ln1"), expected) <= TOLERANCE
    grown = cache.accumulated_resid(apply_ln=True)  # the logit lens: ln_f whole, on each component's own statistics
    assert relative_error(grown[-1], cache["ln_final.hook_out"]) <= TOLERANCE


def by_label(found, labels, expected, tl_labels) -> bool:
    """handwired's components are TransformerLens's of the same labels. TransformerLens lists a few more where
    handwired records nothing: the zero MLP an export gives a block without one, and such a block's resid_mid."""
    assert set(labels) <= set(tl_labels) and labels == [label for label in tl_labels if label in labels], \
        (labels, tl_labels)
    kept = [tl_labels.index(label) for label in labels]
    return relative_error(found, expected.detach().numpy()[kept]) <= TOLERANCE


WEIGHT_NAMES = ("W_E", "W_pos", "W_U", "b_U", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")
MLP_NAMES = ("W_in", "b_in", "W_out", "b_out")
EXACT = 1e-12  # of their size: the weights are the same numbers, moved; products and sums agree to rounding


@pytest.mark.parametrize("name", [*RANDOM, "bundled aab", "bundled multihead"])
def test_the_weight_names_hold_what_transformer_lens_holds(name, tmp_path):
    """model.W_Q … W_out, OV and QK (their factors and products), read from handwired's model, against the same
    names on the model TransformerLens loads from the export."""
    import handwired

    model = MODELS[name]()
    export_folder(model, tmp_path / "export")
    tl_model = load_in_transformer_lens(tmp_path / "export")
    hooked = handwired.load(model)
    names = WEIGHT_NAMES + (MLP_NAMES if any(model.hidden) else ())
    for weight in names:
        found, expected = getattr(hooked, weight), getattr(tl_model, weight).detach().numpy()
        assert found.shape == expected.shape, (weight, found.shape, expected.shape)
        assert np.array_equal(found, expected), weight  # the same numbers, moved
    for factored in ("OV", "QK"):
        ours, theirs = getattr(hooked, factored), getattr(tl_model, factored)
        for part in ("A", "B", "AB"):
            expected = getattr(theirs, part).detach().numpy()
            assert close(getattr(ours, part), expected), (factored, part)
        if model.n_layer:
            assert close(ours[0, 0].AB, theirs[0, 0].AB)
    assert close(hooked.W_OV, tl_model.OV.AB) and close(hooked.W_QK, tl_model.QK.AB)


@pytest.mark.parametrize("name", [*RANDOM, "bundled multihead"])
def test_the_per_head_stacks_hold_what_transformer_lens_holds(name, tmp_path):
    """hook_result, stack_head_results, get_full_resid_decomposition (with and without neurons, at every layer, for
    attention and MLP input, with apply_ln) and logit_attrs against TransformerLens's, component by component."""
    import handwired

    model = MODELS[name]()
    export_folder(model, tmp_path / "export")
    tl_model = load_in_transformer_lens(tmp_path / "export")
    tokens = contexts_of(model.n_vocab, min(model.n_ctx, 4))[:64]
    _, cache = handwired.load(model).run_with_cache(tokens, use_attn_result=True)
    with torch.no_grad():
        _, tl_cache = tl_model.run_with_cache(torch.from_numpy(tokens))
    for layer in range(model.n_layer):  # TransformerLens's own head results (4.x's bridge has no hook_result here)
        expected = torch.einsum("bphd,hdm->bphm", tl_cache["z", layer], tl_model.W_O[layer])
        assert close(cache["result", layer], expected), layer
    for layer in range(1, model.n_layer + 1):
        found, labels = cache.stack_head_results(layer, return_labels=True, incl_remainder=True, apply_ln=True)
        expected, tl_labels = tl_cache.stack_head_results(layer, return_labels=True, incl_remainder=True,
                                                          apply_ln=True)
        assert labels == tl_labels and close(found, expected), layer
    for layer in range(model.n_layer + 1):
        for mlp_input in ([False, True] if layer < model.n_layer and model.hidden[layer] else [False]):
            # 3.x's accumulated_bias reads an MLP's bias where an attention-only model has none
            for expand in (True, False) if MAJOR != "3" or any(model.hidden) else (False,):
                for apply_ln in (False, True):
                    found, labels = cache.get_full_resid_decomposition(layer, mlp_input, expand, apply_ln,
                                                                       return_labels=True)
                    expected, tl_labels = tl_cache.get_full_resid_decomposition(
                        layer, mlp_input, expand, apply_ln, return_labels=True)
                    assert each_close(found, labels, expected, tl_labels), (layer, mlp_input, expand, apply_ln)
    stack = cache.get_full_resid_decomposition(expand_neurons=False)[:-1]  # (3.x's bias is summed in float32)
    tl_stack = torch.from_numpy(np.ascontiguousarray(stack))
    wrong = (tokens + 1) % model.n_vocab  # a token per context and position: the same in TransformerLens 3.x and 4.x
    assert close(cache.logit_attrs(stack, tokens, incorrect_tokens=wrong),
                 tl_cache.logit_attrs(tl_stack, torch.from_numpy(tokens), incorrect_tokens=torch.from_numpy(wrong)))
    answers = torch.from_numpy(tokens[:, -1].copy())
    assert close(cache.logit_attrs(stack[:, :, -1], tokens[:, -1], pos_slice=-1),
                 tl_cache.logit_attrs(tl_stack[:, :, -1], answers, pos_slice=-1))


def each_close(found, labels, expected, tl_labels) -> bool:
    """by_label, component by component to 1e-12 of its size; but 3.x sums the biases in float32 (its
    accumulated_bias starts from torch's default dtype), so its ``bias`` component is float32's to 1e-7."""
    assert set(labels) <= set(tl_labels), (labels, tl_labels)
    expected = expected.detach().numpy()
    for i, label in enumerate(labels):
        loose = label == "bias" and MAJOR == "3"
        assert relative_error(found[i], expected[tl_labels.index(label)]) <= (1e-7 if loose else EXACT), label
    return True


def close(found, expected) -> bool:
    expected = expected.detach().numpy() if hasattr(expected, "detach") else np.asarray(expected)
    assert np.shape(found) == expected.shape, (np.shape(found), expected.shape)
    return relative_error(found, expected) <= EXACT if expected.size else True
