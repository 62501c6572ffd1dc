# pyright: strict
"""A user's script that uses every documented name of ``import handwired``: it must type-check clean under
``mypy --strict`` and pyright's strict mode (tests/test_typing.py runs both)."""

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

import handwired
from handwired import (
    ActivationCache,
    CheckReport,
    Factored,
    HandwiredError,
    HookedModel,
    HookPoint,
    ModelDiff,
    PuzzleHandle,
    Verdict,
    View,
)


def main(folder: Path) -> None:
    model: HookedModel = handwired.load("aab")
    print(handwired.__version__, model.name, model.vocab, model.cfg.n_layer, model.hook_names)
    weight: NDArray[np.float64] = model.params["blocks"][0]["attn"]["c_proj"]["w"]
    print(weight.shape)

    tokens: NDArray[np.intp] = model.to_tokens("aabaa")
    text: str = model.to_string([0, 0, 1])
    texts: list[str] = model.to_string([[0, 0], [1, 1]])
    str_tokens: list[str] = model.to_str_tokens("aab")
    str_batches: list[list[str]] = model.to_str_tokens(["aa", "bb"])
    logits: NDArray[np.float64] = model(tokens)
    print(text, texts, str_tokens, str_batches, logits.shape)

    logits, cache = model.run_with_cache("aabaa", names_filter=lambda name: name != "probs",
                                   use_attn_result=True)
    assert isinstance(cache, ActivationCache)
    pattern: NDArray[np.float64] = cache["pattern", 0]
    stacked: NDArray[np.float64] = cache.stack_activation(activation_name="resid_post")
    grown: NDArray[np.float64] = cache.accumulated_resid(apply_ln=True)
    grown_labelled, grown_labels = cache.accumulated_resid(incl_mid=True, return_labels=True)
    parts: NDArray[np.float64] = cache.decompose_resid(mode="attn")
    parts_labelled, part_labels = cache.decompose_resid(return_labels=True)
    scaled: NDArray[np.float64] = cache.apply_ln_to_stack(parts)
    heads, head_labels = cache.stack_head_results(return_labels=True, incl_remainder=True)
    whole: NDArray[np.float64] = cache.get_full_resid_decomposition(expand_neurons=False)
    attrs: NDArray[np.float64] = cache.logit_attrs(whole, "a", incorrect_tokens="b")
    shares = cache.logit_attribution(position=-1)
    print(pattern.shape, stacked.shape, grown.shape, grown_labelled.shape, grown_labels, parts.shape,
          parts_labelled.shape, part_labels, scaled.shape, heads.shape, head_labels, attrs.shape, shares.parts)

    def zero(value: NDArray[np.float64], hook: HookPoint) -> NDArray[np.float64]:
        print(hook.name, hook.layer())
        return np.zeros_like(value)

    ablated: NDArray[np.float64] = model.run_with_hooks("aabaa", fwd_hooks=[("blocks.0.attn.hook_z", zero)])
    print(ablated.shape, handwired.act_name("pattern", 0))

    w_q: NDArray[np.float64] = model.W_Q
    ov: Factored = model.OV
    product: NDArray[np.float64] = ov[0, 0].AB
    print(w_q.shape, model.W_K.shape, model.W_V.shape, model.W_O.shape, model.b_Q.shape, model.b_K.shape,
          model.b_V.shape, model.b_O.shape, model.W_E.shape, model.W_pos.shape, model.W_U.shape, model.b_U.shape,
          model.QK.shape, model.W_OV.shape, model.W_QK.shape, product.shape)

    model.set("blocks.0.attn.c_proj.w", 3.0, row="z7", col="b")
    saved: Path = model.save(folder / "edited.json", force=True)
    changes: ModelDiff = handwired.diff("aab", saved, sample=100)
    print(changes.weights[0].label)

    report: CheckReport = handwired.check(model, "aab", exhaustive=True, proof=False)
    shown: View = report.view()
    print(report.ok, str(shown))
    game: PuzzleHandle = handwired.puzzle("previous")
    verdict: Verdict = game.submit(game.reference(), proof=False)
    print(game.name, game.answer("abc"), verdict.submission)
    views: list[View] = [model.predict("aab"), model.explain(step="pattern"), model.spread("lead")]
    print(len(views))
    with handwired.allow(max_seconds=10, max_memory="1G"):
        try:
            handwired.load("no such model")
        except HandwiredError as error:
            print(error)


if __name__ == "__main__":
    main(Path("."))
