"""The Python API (handwired.api, and its names at the top level): the numbers against an independent forward
pass, the hooks as TransformerLens uses them, the results as a notebook shows them."""

import html
import itertools
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from reference import params_to_document, random_params, reference_forward

import handwired
from handwired.errors import HandwiredError
from handwired.weightfile import bundled_folder

AAB = bundled_folder("puzzles") / "solutions" / "aab.json"


def every_context(model, min_length=1):  # -> {length: [n, length] ids}: every string the model can see
    n = model.cfg.n_vocab
    return {length: np.array(list(itertools.product(range(n), repeat=length)))
            for length in range(min_length, model.cfg.n_ctx + 1)}


@pytest.fixture(scope="module")
def layered():
    """Random weights with LayerNorm, MLPs and two heads, loaded from a dict, and the params themselves."""
    params = random_params(np.random.default_rng(25), n_vocab=3, n_ctx=5, n_embd=8, n_layer=2, n_hidden=6)
    return handwired.load(params_to_document(params, 2, "xyz", 5)), params


def test_the_top_level_names_load_only_when_used():
    code = ("import sys, handwired; assert 'numpy' not in sys.modules and 'handwired.api' not in sys.modules; "
            "assert 'load' in dir(handwired); handwired.load; assert 'handwired.api' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_model_runs_on_text_ids_and_batches_as_the_independent_pass_does(layered):
    model, params = layered
    texts = ["xyzzx", "zzyxy", "yyyyy"]
    expected = np.array([reference_forward(params, list(model.to_tokens(text)[0]), 2)[0] for text in texts])
    np.testing.assert_allclose(model(texts), expected, rtol=1e-10, atol=1e-10)  # [batch, pos, vocab]
    ids = model.to_tokens(texts)
    assert ids.shape == (3, 5)
    np.testing.assert_allclose(model(ids), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model(list(ids[1])), expected[1:2], rtol=1e-10, atol=1e-10)
    assert model.to_string(ids) == texts


@pytest.mark.parametrize("given,message", [
    (0, "expected text, a list of texts, or token ids"),
    ([[0, 1], [1]], "one length"),
    (["xy", "xyz"], "lengths 2, 3"),
    ([0, 3], "token id 3 is not in the vocabulary, whose ids are 0…2"),
    ([0.5, 1.0], "whole numbers"),
    ("xyzxyz", "6 positions, more than the model's n_ctx 5"),
    ("xq", "'q' (position 1) is not in the vocabulary"),
    ([], "expected text"),
])
def test_bad_input_is_one_line_naming_what_was_given(layered, given, message):
    with pytest.raises(HandwiredError) as caught:
        layered[0](given)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("given,message", [
    ([-1], "tokens: token id -1 is not in the vocabulary, whose ids are 0…2"),  # never the last token
    ([3], "tokens: token id 3 is not in the vocabulary"),
    ([0.5], "tokens: token ids are whole numbers; found float64 values"),  # never token 0, truncated
    ("xyz", "tokens: expected token ids [pos] or [batch, pos]; found str"),
    ([[0, 1], [1]], "tokens: a batch is contexts of one length"),
])
def test_to_string_refuses_what_is_no_token_id(layered, given, message):
    assert layered[0].to_string([2, 0]) == "zx" and layered[0].to_string(np.array([[2], [1]])) == ["z", "y"]
    with pytest.raises(HandwiredError) as caught:
        layered[0].to_string(given)
    assert str(caught.value).startswith(message)


def test_a_huge_batch_is_refused_before_any_array(layered, monkeypatch):
    import handwired.api.model as api_model

    monkeypatch.setattr(api_model, "forward", lambda *args, **kwargs: pytest.fail("ran"))
    with pytest.raises(HandwiredError, match="give fewer contexts"):  # its logits alone are over the budget
        layered[0](np.zeros((100_000_000, 5), dtype=int))
    with pytest.raises(HandwiredError, match="give fewer contexts"):  # a cache keeps every activation at once
        layered[0].run_with_cache(np.zeros((10_000_000, 5), dtype=int))


def test_a_batch_too_large_for_one_pass_runs_in_parts_and_gives_the_same_logits(layered, monkeypatch):
    import handwired
    import handwired.api.model as api_model
    from handwired.engine.cost import trace_bytes

    model, params = layered
    tokens = np.random.default_rng(5).integers(0, 3, size=(40, 5))
    one_by_one = np.array([reference_forward(params, list(row), 2)[0] for row in tokens])
    calls = []
    real = api_model.forward
    monkeypatch.setattr(api_model, "forward", lambda *args, **kwargs: calls.append(len(args[1])) or
                        real(*args, **kwargs))
    room = tokens.size * 3 * 8 + 7 * trace_bytes(model.model, 5)  # the logits, and 7 contexts' pass at a time
    with handwired.allow(max_memory=room):
        logits = model(tokens)
        with pytest.raises(HandwiredError, match="give fewer contexts"):  # all 40 traces at once do not fit
            model.run_with_cache(tokens)
    assert calls == [7, 7, 7, 7, 7, 5]
    assert np.allclose(logits, one_by_one, rtol=0, atol=1e-12)


def test_the_cache_keeps_the_batch_axis_and_knows_transformerlens_short_names(layered):
    model, _ = layered
    logits, cache = model.run_with_cache(["xyzzx", "zzyxy"])
    assert cache["blocks.1.attn.hook_pattern"].shape == (2, 2, 5, 5)  # [batch, head, query, key]
    for short, full in [(("pattern", 1), "blocks.1.attn.hook_pattern"), (("q", 0), "blocks.0.attn.hook_q"),
                        (("resid_pre", 1), "blocks.1.hook_resid_pre"), (("post", 0), "blocks.0.mlp.hook_post"),
                        (("normalized", 0, "ln1"), "blocks.0.ln1.hook_normalized"), ("embed", "hook_embed"),
                        (("normalized",), "ln_final.hook_normalized"), (("attn", 0), "blocks.0.attn.hook_pattern")]:
        assert handwired.act_name(*(short if isinstance(short, tuple) else (short,))) == full
        assert cache[short] is cache[full]
    np.testing.assert_array_equal(cache["logits"], logits)
    assert cache.stack_activation("resid_post").shape == (2, 2, 5, 8)  # [layer, batch, pos, n_embd]
    with pytest.raises(KeyError, match="no hook 'blocks.7.attn.hook_pattern'"):
        cache["pattern", 7]
    assert cache["pattern", -1] is cache["blocks.1.attn.hook_pattern"]  # from the last block, as TransformerLens
    assert cache["normalized", -2, "ln2"] is cache["blocks.0.ln2.hook_normalized"] and ("resid_pre", -1) in cache
    with pytest.raises(KeyError, match="no hook 'blocks.-1.attn.hook_pattern'"):
        cache["pattern", -3]  # before the first block: none
    filtered = model.run_with_cache("xyz", names_filter=lambda name: name.endswith("hook_pattern"))[1]
    assert list(filtered) == ["blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"]


def test_the_residual_stream_decomposes_and_the_shares_add_up_to_the_logits(layered):
    model, params = layered
    logits, cache = model.run_with_cache(["xyzzx", "yzx"[::-1] + "xx"])
    parts, labels = cache.decompose_resid(return_labels=True)
    assert labels == ["embed", "pos_embed", "0_attn_out", "0_mlp_out", "1_attn_out", "1_mlp_out"]
    np.testing.assert_allclose(parts.sum(axis=0), cache["resid_post", 1], rtol=1e-12, atol=1e-12)
    grown, names = cache.accumulated_resid(incl_mid=True, return_labels=True)
    assert names == ["0_pre", "0_mid", "1_pre", "1_mid", "final_post"]
    np.testing.assert_array_equal(grown[-1], cache["resid_post", 1])
    # up to the input of a block, that block's resid_pre included, as TransformerLens stacks them
    hooks = {"0_pre": ("resid_pre", 0), "0_mid": ("resid_mid", 0), "1_pre": ("resid_pre", 1),
             "final_post": ("resid_post", 1)}
    for layer, incl_mid, mlp_input, expected in [(0, False, False, ["0_pre"]), (0, True, True, ["0_pre", "0_mid"]),
                                                 (1, True, False, ["0_pre", "0_mid", "1_pre"]),
                                                 (2, False, False, ["0_pre", "1_pre", "final_post"])]:
        grown, names = cache.accumulated_resid(layer, incl_mid, return_labels=True, mlp_input=mlp_input)
        assert names == expected
        np.testing.assert_array_equal(grown, np.stack([cache[hooks[name]] for name in expected]))
    for stack in (cache.accumulated_resid, cache.decompose_resid):
        for layer in (3, -2):
            with pytest.raises(HandwiredError, match=f"layer={layer}: the model has blocks 0…1"):
                stack(layer)
    # with the final LayerNorm frozen at each position's scale, each part's share of each logit adds up to the logit
    shares = cache.decompose_resid(apply_ln=True) * params["ln_f"]["g"] @ params["wte"].T  # [part, batch, pos, vocab]
    bias = params["ln_f"]["b"] @ params["wte"].T
    np.testing.assert_allclose(shares.sum(axis=0) + bias, logits, rtol=1e-9, atol=1e-9)


def test_logit_attribution_is_what_why_shows_and_adds_up(layered):
    model, params = layered
    _, cache = model.run_with_cache(["xyzzx", "zzyxy"])
    split = cache.logit_attribution(position=-1, batch=1)
    assert split.parts[2:4] == ("block 0 head 0", "block 0 head 1")
    expected = reference_forward(params, list(model.to_tokens("zzyxy")[0]), 2)[0][-1]
    np.testing.assert_allclose(split.total, expected, rtol=1e-9, atol=1e-9)
    with pytest.raises(HandwiredError, match="batch=2: the cache holds contexts 0…1"):
        cache.logit_attribution(batch=2)


def test_zero_ablating_the_aab_head_changes_predictions_exactly_as_zeroing_c_proj_in_the_file():
    model = handwired.puzzle("aab").reference()
    document = json.loads(AAB.read_text())
    document["blocks"][0]["attn"]["c_proj"]["w"] = {}  # the head's whole write into the residual stream: zero
    edited = handwired.load(document)

    def zero(z, hook):
        z[:] = 0  # in place, returning None, as TransformerLens users write it

    moved = 0
    for contexts in every_context(model).values():
        ablated = model.run_with_hooks(contexts, fwd_hooks=[("blocks.0.attn.hook_z", zero)])
        np.testing.assert_array_equal(ablated, edited(contexts))
        moved += int((ablated[:, -1].argmax(-1) != model(contexts)[:, -1].argmax(-1)).sum())
    assert moved > 0  # the head is what makes b: without it, 'aa' is followed by a


def test_a_hook_may_return_a_replacement_mean_ablate_or_patch_from_another_run(layered):
    model, params = layered
    clean, clean_cache = model.run_with_cache("xyzzx")
    corrupt = model.to_tokens("zzyxy")
    # patching block 0's whole residual stream from the clean run gives the clean run
    patched = model.run_with_hooks(corrupt, fwd_hooks=[("blocks.0.hook_resid_pre",
                                                        lambda value, hook: clean_cache[hook.name])])
    np.testing.assert_allclose(patched, clean, rtol=1e-12, atol=1e-12)
    # mean-ablating an MLP's output: the independent pass with that MLP's c_proj set to write its mean
    batch = model.to_tokens(["xyzzx", "zzyxy", "yxzyy"])
    _, cache = model.run_with_cache(batch)
    mean = cache["mlp_out", 1].mean(axis=(0, 1))  # [n_embd]
    ablated = model.run_with_hooks(batch, fwd_hooks=[(lambda name: name == "blocks.1.hook_mlp_out",
                                                      lambda value, hook: np.broadcast_to(mean, value.shape))])
    flat = dict(params, blocks=[params["blocks"][0], {**params["blocks"][1], "mlp": {
        "c_fc": params["blocks"][1]["mlp"]["c_fc"],
        "c_proj": {"w": np.zeros_like(params["blocks"][1]["mlp"]["c_proj"]["w"]), "b": mean}}}])
    expected = np.array([reference_forward(flat, list(row), 2)[0] for row in batch])
    np.testing.assert_allclose(ablated, expected, rtol=1e-9, atol=1e-9)


def test_a_hook_that_returns_something_unusable_is_named(layered):
    model, _ = layered
    with pytest.raises(HandwiredError, match=r"for blocks.0.attn.hook_z returned 'zero'; expected None or an array"):
        model.run_with_hooks("xyz", fwd_hooks=[("blocks.0.attn.hook_z", lambda value, hook: "zero")])
    with pytest.raises(HandwiredError, match=r"returned ndarray of shape \[7\]; expected None or an array of "
                                             r"shape \[1, 3, 2, 4\]"):
        model.run_with_hooks("xyz", fwd_hooks=[("blocks.0.attn.hook_z", lambda value, hook: np.zeros(7))])
    with pytest.raises(HandwiredError, match="no hook 'blocks.0.hook_z'"):
        model.run_with_hooks("xyz", fwd_hooks=[("blocks.0.hook_z", lambda value, hook: None)])


def test_check_and_puzzle_give_the_cores_verdicts():
    model = handwired.load("aab")
    report = handwired.check(model, exhaustive=True)
    assert report.ok and report.report.failed == 0 and report.report.passed == 13  # every context aab decides
    broken = handwired.check(model, target="ab", exhaustive=True)
    # by brute force: the contexts of the pattern ab (abab… or baba…) whose top token is not the next one
    wrong = [text for length in range(1, 6) for text in (("ab" * 3)[:length], ("ba" * 3)[:length])
             if model.vocab[int(model(text)[0, -1].argmax())] != {"a": "b", "b": "a"}[text[-1]]]
    assert not broken.ok and broken.report.failed == len(wrong) == 4
    assert broken.report.shortest_failure.context == min(wrong, key=len) == "ba"
    with pytest.raises(HandwiredError, match="exhaustive=True and sample: choose one"):
        handwired.check(model, exhaustive=True, sample=3)
    aab = handwired.puzzle("aab")
    verdict = aab.submit(aab.reference())
    assert verdict.solved and verdict.score == aab.puzzle.par
    misfit = handwired.puzzle("abc").submit(model)
    assert not misfit.fits and "vocab a, b, c" in repr(misfit)


def test_check_by_a_python_rule_judges_every_context_as_brute_force_does():
    from handwired.judge.kinds.rules import AMBIGUOUS

    model = handwired.load("aab")

    def after_two(context):  # the next token of abab…: the other one; a context ending "aa" or "bb" is no pattern
        return AMBIGUOUS if context[-2:] in ("aa", "bb") else {"a": "b", "b": "a"}[context[-1]]

    judged = [text for length in range(1, 6) for text in map("".join, itertools.product("ab", repeat=length))
              if after_two(text) is not AMBIGUOUS]
    wrong = [text for text in judged if model.vocab[int(model(text)[0, -1].argmax())] != after_two(text)]
    report = handwired.check(model, rule=after_two).report
    assert (report.decided, report.failed) == (len(judged), len(wrong)) and report.failed > 0
    assert report.shortest_failure.context == min(wrong, key=len)
    sampled = handwired.check(model, rule=after_two, sample=200, seed=3).report
    assert sampled.checked == 200 and sampled.passed + sampled.failed + sampled.ambiguous == 200
    assert sampled.failed > 0 and {f.context for f in sampled.failures} <= set(wrong)
    for given, message in [({"target": "ab"}, "rule judges instead of a target: target and length do not apply"),
                           ({"exhaustive": True, "sample": 3}, "exhaustive=True and sample: choose one")]:
        with pytest.raises(HandwiredError, match=message):
            handwired.check(model, rule=after_two, **given)
    with pytest.raises(HandwiredError, match="on 'a' the rule function returned 1, a number"):
        handwired.check(model, rule=lambda context: 1)


def test_check_on_a_model_without_a_target_says_how_to_judge_it_from_python(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = json.loads(AAB.read_text())
    del doc["target"]
    with pytest.raises(HandwiredError) as plain:
        handwired.check(doc)
    assert str(plain.value) == "<dict>: has no 'target'; give one as target=, e.g. check(model, target='aa')"
    doc["puzzle"] = "aab"  # an answer that names its puzzle, as puzzles start writes it: judged by the puzzle
    with pytest.raises(HandwiredError, match=re.escape("judge it with handwired.puzzle('aab').submit(model)")):
        handwired.check(doc)
    assert handwired.puzzle("aab").submit(doc).solved  # the advice works
    doc["puzzle"] = "mine.json#0123456789ab"  # a statement beside the file: named by its path
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ans.json").write_text(json.dumps(doc))
    with pytest.raises(HandwiredError, match=re.escape("handwired.puzzle('sub/mine.json').submit(model)")):
        handwired.check("sub/ans.json")
    with pytest.warns(UserWarning, match=re.escape(  # a target given is checked, with a word on the puzzle
            "<dict> names the puzzle 'mine.json#0123456789ab'; checked on the target 'aab' instead (as the puzzle's "
            "answer: handwired.puzzle('mine.json').submit(model))")):
        assert handwired.check(doc, target="aab", exhaustive=True).ok


def test_text_from_a_file_is_shown_escaped_in_reprs_and_html(tmp_path):
    evil = "\x1b]0;pwned\x07\x1b[2J\x9b"
    statement = json.loads((bundled_folder("puzzles") / "aab.json").read_text())
    statement.update(title="Title" + evil, story="Story" + evil)
    (tmp_path / "evil.json").write_text(json.dumps(statement))
    doc = json.loads(AAB.read_text())
    doc.update(vocab=["a", "\x1b"], target="aa\x1b", example="aa\x1baa", description="About" + evil)
    doc["wte"]["\x1b"] = doc["wte"].pop("b")
    model = handwired.load(doc)
    shown = [handwired.puzzle(tmp_path / "evil.json"), model, handwired.check(model, exhaustive=True)]
    for thing in shown:
        for text in (repr(thing), thing._repr_html_()):
            assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", text), text
    assert "Title\\x1b]0;pwned\\x07" in repr(shown[0]) and "About\\x1b]0;pwned" in shown[1]._repr_html_()


def test_everything_has_a_one_or_two_line_repr_and_an_html_form(layered):
    model = handwired.load("aab")
    _, cache = model.run_with_cache("aabaa")
    aab = handwired.puzzle("aab")
    shown = {
        "model": (model, "aab"),
        "cache": (cache, "blocks.0.attn.hook_pattern"),
        "report": (handwired.check(model, target="ab", exhaustive=True), "shortest failing context"),
        "verdict": (aab.submit(aab.reference()), "Solved puzzle"),
        "puzzle": (aab, "Two a"),
        "explain": (model.explain("aabaa", step="pattern"), "hook_pattern"),
        "predict": (model.predict("aab"), "aab → a"),
        "spread": (model.spread("blocks.0.attn.hook_z:z7"), "grouped by the right answer"),
    }
    for name, (thing, text) in shown.items():
        assert len(repr(thing)) <= 240 and repr(thing).count("\n") == 0, name
        assert text in html.unescape(re.sub(r"<[^>]+>", "", thing._repr_html_())), name


def test_spread_reads_what_the_command_reads_lead_too():
    from test_cli import invoke

    model = handwired.load("aab")
    for value in ("lead", "blocks.0.attn.hook_z:z7"):
        words = [" ".join(text.split()) for text in (str(model.spread(value)), invoke("spread", value).stdout)]
        assert words[0] == words[1] and f"{value} at the last position" in words[0], value


def test_a_puzzle_shows_the_players_own_hints_and_best_and_records_nothing(handwired_home):
    from test_cli import invoke

    def shown():
        return " ".join(html.unescape(re.sub(r"<[^>]+>", "", handwired.puzzle("aab")._repr_html_())).split())

    assert "hints: 0 of 4 revealed" in shown() and "solved ✓" not in shown()
    invoke("puzzles", "hint", "aab")
    invoke("puzzles", "hint", "aab")
    aab = handwired.puzzle("aab")
    assert aab.submit(aab.reference()).solved  # a verdict from Python records nothing
    before = (handwired_home / "progress.json").read_text()
    assert "hints: 2 of 4 revealed" in shown() and "solved ✓" not in shown()
    assert (handwired_home / "progress.json").read_text() == before


def test_the_cores_objects_print_in_a_line_and_a_matrix_shows_itself_as_html():
    from handwired.engine.trace import trace
    from handwired.views import steps as explaining
    from handwired.views.matrices import MatrixView

    model = handwired.load("aab")
    verdict = handwired.puzzle("aab").submit(model)
    for core in (model.model, verdict.submission, verdict.report):
        assert len(repr(core)) <= 200 and "\n" not in repr(core), type(core).__name__
    assert repr(verdict.report).startswith("<Report ok: 13 passed, 0 failed of 62 checked")
    step = next(step for step in explaining.steps(model.model, trace(model.model, "aabaa"), ["pattern"])
                if step.key == "pattern")
    view = MatrixView(step.matrices[0])
    assert "hook_pattern" in repr(view)
    assert "pattern" in html.unescape(re.sub(r"<[^>]+>", "", view._repr_html_()))


def test_a_view_too_slow_to_make_is_refused_before_the_trace(monkeypatch):
    import handwired.api.model as api_model
    import handwired.views.cost as cost

    model = handwired.load("aab")
    monkeypatch.setattr(api_model, "trace", lambda *args, **kwargs: pytest.fail("traced"))
    monkeypatch.setattr(cost, "MAX_VIEW_SECONDS", 0.0)  # every estimate is over it
    for make in (lambda: model.explain("aabaa"), lambda: model.predict("aabaa")):
        with pytest.raises(HandwiredError, match="more than"):
            make()


def test_errors_from_python_name_the_keywords_a_caller_writes(layered):
    """The core names its parameters; from Python each reads as the keyword given (``sample=…``, ``seed=-1``,
    ``by='…'``), a switch as its value (``exhaustive=True``), never a flag or the command line's spelling."""
    model, _ = layered
    cases = [(lambda: handwired.check(model, target="xy", sample=10**9), "sample=1000000000: about "),
             (lambda: handwired.check(model, target="xy", sample=5, seed=-1), "seed=-1: expected a whole number"),
             (lambda: handwired.check(model, target="xy", exhaustive=True, sample=5),
              "exhaustive=True and sample: choose one"),
             (lambda: handwired.check(model, target="xy", min_length=0, exhaustive=True), "min_length=0: expected"),
             (lambda: model.spread("lead", by="zzz"), "by='zzz': expected one of"),
             (lambda: model.explain("xyz", head=7), "head=7: the model has heads 0…1"),
             (lambda: model.run_with_cache("xyz")[1].accumulated_resid(layer=9), "layer=9: the model has blocks")]
    wide = {**params_to_document(random_params(np.random.default_rng(3), n_vocab=3, n_ctx=16, n_embd=4), 1, "abc",
                                 16), "target": "abc"}
    cases.append((lambda: handwired.check(wide, exhaustive=True), "every context: 3^1 + … + 3^16 = 64,570,080 "))
    for call, start in cases:
        with pytest.raises(HandwiredError) as error:
            call()
        message = str(error.value)
        assert message.startswith(start), message
        instead = "e.g. sample=1000000, seed=0 (or allow it: max_seconds="
        assert "sample 1000000" not in message, message
        assert "check a random sample" not in message or instead in message, message
        assert "--" not in message and "{" not in message, message
        flag = error.value.render(lambda name: "--" + name.replace("_", "-"))  # the command line's, unchanged
        assert "--" in flag, flag


def test_a_refused_proof_offers_proof_false_from_python(tmp_path, monkeypatch):
    """A puzzle whose certified check is over the limit but whose float64 check is not: from Python the refusal
    offers the keyword submit takes (``proof=False``), not the command line's flag, and that keyword works."""
    from test_walk import _refuse, wide_add

    from handwired.engine import walk as walking

    wide_add(tmp_path, "###+###")
    monkeypatch.setattr(walking, "walk", _refuse)
    puzzle = handwired.puzzle(tmp_path / "wide.json")
    with handwired.allow(max_seconds=60):  # 4,000,000 contexts: the float check under a minute, the proof over
        with pytest.raises(HandwiredError) as error:
            puzzle.submit(tmp_path / "model.json")
        assert "or judge it in float64 without the proof (proof=False: about " in str(error.value), str(error.value)
        assert "no_proof" not in str(error.value)
        with pytest.raises(AssertionError, match="called"):  # proof=False: the float walk starts
            puzzle.submit(tmp_path / "model.json", proof=False)


def test_spread_and_submit_from_python_warn_as_the_command_line_does(tmp_path, monkeypatch):
    """A statement changed since the file was started, or a puzzle asked for that is not the one the file names:
    the command line warns on stderr, Python with a UserWarning pointing at the caller's line."""
    import warnings

    from test_cli import invoke

    monkeypatch.chdir(tmp_path)
    invoke("puzzles", "new", "-o", "mine.json")
    assert invoke("puzzles", "start", "mine.json", "-o", "ans.json").exit_code == 0
    model = handwired.load("ans.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing changed: no warning
        model.spread("lead")
    statement = tmp_path / "mine.json"
    statement.write_text(statement.read_text() + "\n")
    cli = invoke("spread", "lead", "-w", "ans.json").stderr
    assert "it has changed since" in cli
    with pytest.warns(UserWarning) as caught:
        model.spread("lead")
    assert [str(w.message) for w in caught] == [" ".join(cli.removeprefix("warning: ").split())]
    assert caught[0].filename == __file__
    with pytest.warns(UserWarning, match=r"ans.json names the puzzle 'mine.json#[0-9a-f]+'; judged by 'aab', as asked"):
        handwired.puzzle("aab").submit(model)
    (tmp_path / "other.json").write_text(statement.read_text())
    with pytest.warns(UserWarning, match=r"names the puzzle 'mine.json#[0-9a-f]+'; judged by 'mine', as asked"):
        model.spread("lead", puzzle="other.json")


def test_apply_ln_holds_what_transformer_lens_holds_the_stream_as_its_layernorm_normalises_it(layered):
    """apply_ln=True, as TransformerLens's apply_ln_to_stack: each component centred and divided by the scale of the
    LayerNorm that reads the stream there (ln_f's after the last block, block k's ln_1 before it, ln_2 with
    mlp_input), no gain and no bias: so the components add up to that LayerNorm's hook_normalized, which the forward
    pass records on its own path (and which the TransformerLens comparison checks hook by hook)."""
    model, params = layered
    _, cache = model.run_with_cache(["xyzzx", "zzyxy", "yxzxz"])
    normalised = {None: "ln_final.hook_normalized", -1: "ln_final.hook_normalized", 2: "ln_final.hook_normalized",
                  0: "blocks.0.ln1.hook_normalized", 1: "blocks.1.ln1.hook_normalized"}
    for layer, hook in normalised.items():
        parts = cache.decompose_resid(layer, apply_ln=True)
        np.testing.assert_allclose(parts.sum(axis=0), cache[hook], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cache.apply_ln_to_stack(cache.decompose_resid(layer), layer), parts)
        if layer in (0, 1):  # up to a block: the same scaling
            grown = cache.accumulated_resid(layer, apply_ln=True)
            np.testing.assert_allclose(grown[-1], cache[hook], rtol=1e-12, atol=1e-12)
    grown = cache.accumulated_resid(1, apply_ln=True, mlp_input=True)
    np.testing.assert_allclose(grown[-1], cache["blocks.1.ln2.hook_normalized"], rtol=1e-12, atol=1e-12)
    assert not np.allclose(params["ln_f"]["g"], 1)  # a gain that would show if it were applied
    # up to the end, TransformerLens's logit lens: ln_f whole on each stage of the stream, the last what ln_f gives
    grown = cache.accumulated_resid(apply_ln=True)
    np.testing.assert_allclose(grown[-1], cache["ln_final.hook_out"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grown[0], reference_layer_norm(cache["resid_pre", 0], params["ln_f"]), rtol=1e-12)
    plain = handwired.load("aab")  # no LayerNorm anywhere: the stack as it is
    _, cache = plain.run_with_cache("aabaa")
    np.testing.assert_array_equal(cache.decompose_resid(apply_ln=True), cache.decompose_resid())


@pytest.mark.parametrize("name", ["successor", "add", "aab"])
def test_a_statement_in_jupyter_wraps_its_story_as_a_terminal_does(name, handwired_home):
    """A statement's HTML is as wide as a saved view (120 columns), its story and sentences wrapped in it, every
    word kept; a part that must not wrap (a table wider than that) still widens the view, as before."""
    from rich.table import Table

    from handwired.views.display import EXPORT_WIDTH, recorded

    puzzle = handwired.puzzle(name)
    lines = html.unescape(re.sub(r"<[^>]+>", "", puzzle._repr_html_())).splitlines()
    assert max(map(len, lines)) == EXPORT_WIDTH, max(map(len, lines))
    shown = " ".join(" ".join(line.strip("│ ") for line in lines).split())
    assert " ".join(puzzle.puzzle.story.split()) in shown
    wide = Table(*[f"column{i:02}" for i in range(20)])
    wide.add_row(*[f"{i * 1e6:.6g}" for i in range(20)])
    console = recorded([puzzle.puzzle.story, wide])
    assert console.width > EXPORT_WIDTH and max(map(len, console.export_text().splitlines())) == console.width


def reference_layer_norm(x, ln):  # [..., n_embd] -> the same: LayerNorm written out from its formula
    mean = x.mean(axis=-1, keepdims=True)
    return ln["g"] * (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + 1e-5) + ln["b"]


def test_stack_activation_takes_transformer_lens_layer_and_sublayer_type(layered):
    model, _ = layered
    _, cache = model.run_with_cache(["xyzzx", "zzyxy"])
    np.testing.assert_array_equal(cache.stack_activation("resid_post"),
                                  np.stack([cache["blocks.0.hook_resid_post"], cache["blocks.1.hook_resid_post"]]))
    np.testing.assert_array_equal(cache.stack_activation("normalized", 1, "ln1"),
                                  cache["blocks.0.ln1.hook_normalized"][None])
    assert cache.stack_activation("pattern", -1).shape == (2, 2, 2, 5, 5)  # [layer, batch, head, query, key]
    with pytest.raises(HandwiredError, match="^layer=0: no block comes before block 0"):
        cache.stack_activation("resid_post", 0)


@pytest.mark.parametrize("value,start", [(float("nan"), "near_miss=nan: "), (-1.5, "near_miss=-1.5: "),
                                         (float("inf"), "near_miss=inf: ")])
def test_check_refuses_a_near_miss_the_command_line_refuses(value, start, monkeypatch):
    """near_miss is a number of logits, 0 or more, from Python as on the command line: a negative one, nan or ∞
    (which would call a margin of 1,023 logits a near miss) is refused before anything is checked."""
    from handwired.api import judging

    monkeypatch.setattr(judging, "verdict", lambda *args, **kwargs: pytest.fail("checked"))
    for model in (handwired.load("aab"), "aab"):
        with pytest.raises(HandwiredError) as error:
            handwired.check(model, near_miss=value)
        assert str(error.value) == start + "expected a number of logits, 0 or more"
