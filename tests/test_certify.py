"""The certified bounds: they hold against 50-digit arithmetic, their mids are float64's bits, and the bundled
answers are proved."""

import glob
import json
import re
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from exact import ExactModel
from reference import params_to_document, random_params
from walkable import slow_to_prove, too_large, too_large_to_walk

from handwired.engine import certify
from handwired.engine.arithmetic import interval
from handwired.engine.arithmetic.floats import float_walk
from handwired.engine.forward import forward, gelu, softmax
from handwired.engine.parts import side_by_side
from handwired.engine.walk import EveryString, Listed
from handwired.judge.game.catalogue import load_puzzle
from handwired.judge.game.verdict import submit
from handwired.judge.kinds.sampling import sample_contexts
from handwired.weightfile import Model, load
from handwired.weightfile.parse import parse

ROOT = Path(__file__).resolve().parent.parent
REFERENCES = sorted(glob.glob(str(ROOT / "puzzles" / "solutions" / "*.json")))
RECORDS = sorted(glob.glob(str(ROOT / "tests" / "data" / "records" / "*.json")))
PUZZLES = sorted(Path(path).stem for path in glob.glob(str(ROOT / "puzzles" / "*.json")))


def puzzle_of(path: str):
    return load_puzzle(Path(path).stem)


def model_of(params, vocab, n_ctx, n_head) -> Model:
    model, problems = parse(params_to_document(params, n_head, vocab, n_ctx), "random.json")
    assert not problems, problems
    return model


def random_answer(name: str, seed: int) -> Model:
    """Random weights at the puzzle's caps, LayerNorm everywhere and an MLP (GELU) where the caps allow one."""
    puzzle = load_puzzle(name)
    caps, rng = puzzle.caps, np.random.default_rng(seed)
    hidden = (caps.hidden or 16) if caps.mlp else 1
    params = random_params(rng, len(puzzle.vocab), puzzle.n_ctx, caps.n_embd, caps.n_layer, hidden,
                           layer_norm=True, mlp=bool(caps.mlp))
    for block in params["blocks"]:  # some patterns sharp, some spread
        block["attn"]["c_attn"]["w"] *= rng.choice([0.5, 2.0, 6.0])
    return model_of(params, list(puzzle.vocab), puzzle.n_ctx, caps.n_head)


def sampled(model: Model, strings: int, rng, puzzle=None) -> list[tuple[int, ...]]:
    """Every prefix of ``strings`` random strings of full length (from the puzzle's domain when it has one)."""
    if puzzle is not None and too_large(puzzle):  # drawn at random, never enumerated
        picks = np.concatenate(list(sample_contexts(puzzle.domain, strings, int(rng.integers(1000)))))
    elif puzzle is not None and puzzle.domain is not None:
        longest = max(puzzle.domain.contexts, key=lambda batch: batch.shape[1])
        picks = longest[rng.choice(len(longest), min(strings, len(longest)), replace=False)]
    else:
        picks = rng.integers(0, model.n_vocab, (strings, model.n_ctx))
    return sorted({tuple(int(t) for t in row[:length]) for row in picks for length in range(1, len(row) + 1)},
                  key=lambda c: (len(c), c))


def exact_models(rng):
    """(label, model, puzzle, strings): every reference, every record, a random model at each puzzle's caps."""
    for path in REFERENCES + RECORDS:
        if slow_to_prove(puzzle_of(path)):  # add10: its cases' bounds in 50 digits are test_cases'
            continue
        model = load(path)
        yield Path(path).name, model, puzzle_of(path), _strings(model)
    for seed, name in enumerate(PUZZLES * 2):
        model = random_answer(name, seed)
        yield f"random {name} ({seed})", model, None, max(3, _strings(model) // 2)


def _strings(model: Model) -> int:
    """Strings to sample: more for a cheap model, fewer for a wide one (the 50-digit pass costs ~ its weights)."""
    weights = sum(np.size(block["attn"]["c_attn"]["w"]) * 4 // 3 + sum(
        np.size(layer["w"]) for layer in block.get("mlp", {}).values()) for block in model.params["blocks"])
    return int(np.clip(500_000 // (weights + 20 * model.n_embd * model.n_vocab + 400) // model.n_ctx, 3, 300))


def walk_logits(visits) -> dict[tuple[int, ...], np.ndarray]:
    """A walk's logits, by judged context."""
    return {tuple(int(t) for t in row): logits for visit in visits
            if visit.logits is not None
            for row, logits in zip(visit.prefixes[visit.judged], visit.logits[visit.judged])}


def every_string(model, walk, chunk, parts=2):
    """Every string's walk as a check runs it: its wide batches cut by slot, in ``parts`` parts on threads."""
    shape = EveryString(model.n_vocab, model.n_ctx, by_slot=True)
    return side_by_side(lambda part: walk(model, part, chunk=chunk), shape, model.n_vocab, model.n_ctx, parts)


def test_the_bounds_hold_in_50_digit_arithmetic():
    """On >= 10,000 contexts across every reference, every record and random models at each puzzle's caps, the real
    logits lie within every bound: the whole-context pass's (the walk of the contexts given) and the walk's of the
    same contexts in batches of a few nodes to a few dozen."""
    rng = np.random.default_rng(23)
    checked = 0
    for label, model, puzzle, strings in exact_models(rng):
        contexts = sampled(model, strings, rng, puzzle)
        exact = ExactModel(model.params, model.n_head)
        by_length: dict[int, list] = {}
        for context in contexts:
            by_length.setdefault(len(context), []).append(context)
        walked = walk_logits(certify.certified_walk(model, Listed([np.array(g) for g in by_length.values()],
                                                                   model.n_vocab), chunk=int(rng.integers(1, 64))))
        for group in by_length.values():
            tokens = np.array(group)
            whole = certify.certified_logits(model, tokens)
            packed = np.array([walked[tuple(context)] for context in group])
            for mid, rad in (whole, (packed[:, :model.n_vocab], packed[:, model.n_vocab:])):
                lo, hi = certify.logit_bounds(mid, rad)
                for row, context in enumerate(group):
                    real = exact.logits(context)
                    for token, value in enumerate(real):
                        assert mp.mpf(float(lo[row, token])) <= value <= mp.mpf(float(hi[row, token])), (
                            label, context, token, float(value), lo[row, token], hi[row, token])
            checked += len(group)
    assert checked >= 10_000


def test_the_bounds_hold_through_every_strings_walk_and_layer_norm_extremes():
    """Every string's walk as a check runs it (batches cut by slot, each child writing into its parent's room; in
    parts, on threads) on small random models, in batches of 4 and 9 nodes; and a residual at ±2^53, where float64's
    mean of the residual is wrong by a whole unit, still has bounds around the real logits."""
    rng = np.random.default_rng(5)
    for chunk in (4, 9, 9):
        params = random_params(rng, n_vocab=3, n_ctx=4, n_embd=6, n_layer=2, n_hidden=8)
        model = model_of(params, ["a", "b", "c"], 4, 2)
        exact = ExactModel(model.params, model.n_head)
        walked = walk_logits(every_string(model, certify.certified_walk, chunk))
        assert len(walked) == 3 + 9 + 27 + 81
        for context, packed in walked.items():
            lo, hi = certify.logit_bounds(packed[:3], packed[3:])
            real = exact.logits(context)
            assert all(mp.mpf(float(lo[t])) <= real[t] <= mp.mpf(float(hi[t])) for t in range(3))
    crafted = load(str(ROOT / "tests" / "data" / "crafted" / "rounded.json"))
    mid, rad = certify.certified_logits(crafted, np.array([[0]]))
    lo, hi = certify.logit_bounds(mid, rad)
    real = ExactModel(crafted.params, 1).logits((0,))
    assert all(mp.mpf(float(lo[0, t])) <= real[t] <= mp.mpf(float(hi[0, t])) for t in range(2))
    assert real[0] > real[1] and mid[0, 1] > mid[0, 0]  # the real winner is a, float64's is b


@pytest.mark.parametrize("scale", [1.0, 30.0, 3e3, 1e5])
def test_attention_radius_holds_for_real_q_k_v_anywhere_within_their_radii(scale):
    """One query over masked and visible keys, its q, k and v drawn within their radii (the interval's corners and
    points inside): the real attention, in 50 digits, stays within the radius of forward's output, for diffuse
    attention, one key outweighing the rest, and scores so far apart that keys weigh nothing (beyond e^-800)."""
    rng = np.random.default_rng(int(scale))
    d, n = 4, 6
    for _ in range(6):
        q, k, v = rng.normal(0, 1, d) * scale, rng.normal(0, 1, (n, d)), rng.normal(0, 3, (n, d))
        q_r, k_r, v_r = (np.abs(rng.normal(0, 1, shape)) * 10.0 ** rng.integers(-15, -9) for shape in
                         ((d,), (n, d), (n, d)))
        mask = np.where(rng.random(n) < 0.3, -np.inf, 0.0)
        mask[rng.integers(0, n)] = 0.0  # at least one key seen
        bounds = np.concatenate([interval.head_norms(v, d), interval.head_norms(v_r, d)], -1)  # [n, 2]
        pattern = softmax(q @ k.T / np.sqrt(d) + mask)  # [n]: float64's, as the steps compute it
        z = pattern @ v  # [d]
        mixed = np.array([pattern @ bounds[:, 0], pattern @ bounds[:, 1], pattern * (1 - pattern) @ bounds[:, 0]])
        seen = mask == 0
        norms = [interval.head_norms(a, d) for a in (k, k_r, v, v_r)]  # [n, 1] each
        radius = interval.attention_radius(interval.head_norms(q, d), interval.head_norms(q_r, d),
                                           *(a[seen].max() for a in norms), mixed, d, n)
        for trial in range(12):
            pick = (lambda c, r: c + r * rng.choice([-1.0, 1.0], c.shape)) if trial < 6 else (
                lambda c, r: c + r * rng.uniform(-1, 1, c.shape))
            real_q, real_k, real_v = pick(q, q_r), pick(k, k_r), pick(v, v_r)
            scores = [mp.fdot([mp.mpf(float(a)) for a in real_q], [mp.mpf(float(b)) for b in real_k[j]]) / mp.sqrt(d)
                      for j in range(n) if seen[j]]
            top = max(scores)
            weights = [mp.exp(s_ - top) for s_ in scores]
            total = mp.fsum(weights)
            values = real_v[seen]
            for j in range(d):
                real = mp.fsum(w * mp.mpf(float(values[i, j])) for i, w in enumerate(weights)) / total
                assert abs(real - mp.mpf(float(z[j]))) <= mp.mpf(float(radius[0])), (scale, trial, j)


def adversarial_model(kind: str, seed: int) -> Model:
    """A small random model (3 tokens, n_ctx 4, two heads, LayerNorm, GELU) pushed where bounds are tested hardest."""
    rng = np.random.default_rng(seed)
    params = random_params(rng, n_vocab=3, n_ctx=4, n_embd=4, n_layer=2, n_hidden=6)
    blocks = params["blocks"]
    if kind == "huge scores":  # scores of 1e6..1e9: keys far beyond the reach where they weigh anything, and not
        for block in blocks:
            block["attn"]["c_attn"]["w"][:, :4] *= 3e3 * rng.choice([1, 30], 4)
            block["attn"]["c_attn"]["w"][:, 4:8] *= 1e3
    elif kind == "near-constant rows":  # LayerNorm of rows equal to within 1e-9 of their size: eps dominates
        params["wte"] = 1e6 + rng.normal(0, 1e-3, (3, 4))
        params["wpe"] = rng.normal(0, 1e-3, (4, 4)) + 1e6
    elif kind == "gelu minimum":  # pre-activations straddling GELU's minimum at -0.75246…
        for block in blocks:
            block["mlp"]["c_fc"]["w"] *= 1e-3
            block["mlp"]["c_fc"]["b"] = -0.75246 + rng.normal(0, 1e-4, 6)
    elif kind == "cancellation":  # embeddings of ±1e8 that cancel to a few units, wide residuals
        big = rng.choice([-1e8, 1e8], (3, 4))
        params["wte"] = big + rng.normal(0, 1, (3, 4))
        params["wpe"] = rng.normal(0, 1, (4, 4))
        params["wpe"][1:] -= big[rng.integers(0, 3, 3)]
    return model_of(params, ["a", "b", "c"], 4, 2)


@pytest.mark.parametrize("kind", ["huge scores", "near-constant rows", "gelu minimum", "cancellation"])
def test_the_bounds_hold_in_50_digit_arithmetic_on_adversarial_models(kind):
    """Every pass (whole contexts, a walk of listed contexts in batches of 5, every string's walk cut by slot and in
    parts) bounds the real logits on models built to strain the bounds: huge attention scores, LayerNorm of
    near-constant rows, GELU near its minimum, cancelling residuals."""
    for seed in range(2):
        model = adversarial_model(kind, seed)
        exact = ExactModel(model.params, model.n_head)
        contexts = [tuple(int(t) for t in row) for length in range(1, 5)
                    for row in np.random.default_rng(seed).integers(0, 3, (8, length))]
        groups = {length: np.array(sorted({c for c in contexts if len(c) == length})) for length in range(1, 5)}
        walked = walk_logits(certify.certified_walk(model, Listed(list(groups.values()), 3), chunk=5))
        strings = walk_logits(every_string(model, certify.certified_walk, 4))
        for tokens in groups.values():
            whole = certify.certified_logits(model, tokens)
            for row, context in enumerate(map(tuple, tokens)):
                real = exact.logits(context)
                for mid, rad in ((whole[0][row], whole[1][row]), (walked[context][:3], walked[context][3:]),
                                 (strings[context][:3], strings[context][3:])):
                    lo, hi = certify.logit_bounds(mid, rad)
                    assert all(mp.mpf(float(lo[t])) <= real[t] <= mp.mpf(float(hi[t])) for t in range(3)), (
                        kind, seed, context, [float(v) for v in real], lo, hi)


@pytest.mark.parametrize("path", [path for path in REFERENCES + RECORDS if not too_large_to_walk(Path(path).stem)],
                         ids=lambda p: f"{Path(p).parent.name}/{Path(p).stem}")
def test_every_reference_and_record_is_proved_on_its_whole_domain(path):
    """(add10's, by cases: test_adder, test_records and test_by_cases, whole in CI.)"""
    submission = submit(puzzle_of(path), load(path))
    report = submission.report
    assert report.proof and report.failed == 0 and report.unproved == 0
    assert report.proved == report.passed == report.decided > 0
    assert submission.solved


def test_the_certified_mids_are_the_float_passes_bits():
    """The certified walk computes the float walk's logits exactly, beside their radii, when both walk the same
    nodes in the same batches: every string's walk (cut by slot, in parts), the walk of listed contexts (in batches
    of 1, 5 and the default) and the whole-context pass, the walk of the contexts given (whose logits are the float
    walk's of them, and within 1e-12 of forward.py's, which adds in another order)."""
    rng = np.random.default_rng(1)
    params = random_params(rng, n_vocab=3, n_ctx=4, n_embd=6, n_layer=2, n_hidden=8)
    model = model_of(params, ["a", "b", "c"], 4, 2)
    plain, proved = (walk_logits(every_string(model, walk, 9)) for walk in (float_walk, certify.certified_walk))
    assert plain.keys() == proved.keys() and len(plain) == 3 + 9 + 27 + 81
    assert all(np.array_equal(logits, proved[context][:3]) for context, logits in plain.items())
    tokens = rng.integers(0, 3, (50, 4))
    mid, rad = certify.certified_logits(model, tokens)
    walked = walk_logits(float_walk(model, Listed([tokens], 3)))
    assert np.array_equal(mid, np.array([walked[tuple(int(t) for t in row)] for row in tokens]))
    whole = forward(model.params, tokens, model.n_head, last_only=True)
    np.testing.assert_allclose(mid, whole, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(whole))))
    assert (rad > 0).all() and (rad < 1e-4).all()  # worst-case growth through each |w|, yet far below a logit
    shape = Listed([tokens, tokens[:, :2]], 3)
    given = {tuple(int(t) for t in row[:length]) for row in tokens for length in (2, 4)}
    for chunk in (1, 5, None):
        plain_walk, certified = (walk_logits(walk(model, shape, chunk=chunk))
                                 for walk in (float_walk, certify.certified_walk))
        assert plain_walk.keys() == certified.keys() == given
        for context, logits in plain_walk.items():
            assert np.array_equal(logits, certified[context][:3]) and (certified[context][3:] > 0).all()


def test_numpy_exp_is_within_the_stated_ulps():
    """The one function the bounds trust: numpy's exp on this platform, against 50 digits, over the whole range
    softmax and GELU use (including where it underflows to subnormals)."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-745, 709, 20_000), rng.uniform(-1, 1, 5_000), rng.uniform(-745, -700, 2_000),
                        -np.logspace(-300, 2.8, 2_000)])
    got = np.exp(x)
    for value, result in zip(x, got):
        real = mp.exp(mp.mpf(float(value)))
        ulp = mp.mpf(float(np.spacing(result))) if result > 0 else mp.mpf(2) ** -1074
        assert abs(mp.mpf(float(result)) - real) <= interval.EXP_ULPS * ulp, value


def test_the_gelu_constants_bound_the_real_function():
    """GELU's slope never exceeds GELU_SLOPE in size; forward's float GELU is within GELU_ROUNDING·u·|x| of the real
    one wherever it is evaluated (near its minimum, where exp overflows, tiny and huge arguments, both signs); and
    the bound of an interval straddling the minimum near -0.75 holds."""
    k, a = mp.sqrt(2 / mp.pi), mp.mpf("0.044715")

    def real(x):
        return x / 2 * (1 + mp.tanh(k * (x + a * x**3)))

    slopes = [abs(mp.diff(real, mp.mpf(x) / 50)) for x in range(-500, 501)]
    assert max(slopes) < interval.GELU_SLOPE
    assert max(t / (1 + mp.exp(t)) for t in (mp.mpf(i) / 1000 for i in range(0, 5000))) < mp.mpf("0.2785")
    rng = np.random.default_rng(3)
    xs = np.concatenate([rng.uniform(-40, 40, 3000), rng.uniform(-1, 0, 2000), -np.logspace(-300, 2.5, 500),
                         np.logspace(-300, 3, 500), [-0.75246, -0.7524, -27.0, -26.5, -1e-310, 0.0, 1e100, -1e100]])
    for x, got in zip(xs, gelu(xs.copy())):
        error = abs(mp.mpf(float(got)) - real(mp.mpf(float(x))))
        assert error <= interval.GELU_ROUNDING * interval.U * abs(float(x)) + interval.TINY, x
    points = [-0.75, -0.7, 3.0, -30.0, 1e-300]
    widths = [0.2, 0.01, 1e-9, 1.0, 1e-300]
    mid, rad = interval.gelu_bounds((np.array(points), np.array(widths)))
    assert np.array_equal(mid, gelu(np.array(points)))
    for m, r, c, w in zip(mid, rad, points, widths):
        for t in np.linspace(c - w, c + w, 41):
            assert abs(real(mp.mpf(float(t))) - mp.mpf(float(m))) <= r


def test_a_gelu_far_below_its_minimum_is_bounded_by_its_tiny_value_in_50_digit_arithmetic():
    """An interval whose upper end is at most -1 is bounded by [gelu(upper end), 0], not by its width: a shut unit
    (a wide input far below its threshold) adds a tiny radius; every real gelu in it lies inside, checked in 50-digit
    arithmetic at the ends, the middle and random points, and the radius is the slope bound's where that is tighter."""
    k, a = mp.sqrt(2 / mp.pi), mp.mpf("0.044715")

    def real(x):
        return x / 2 * (1 + mp.tanh(k * (x + a * x**3)))

    rng = np.random.default_rng(5)
    mids = np.concatenate([[-3.0, -1.5, -40.0, -8950.0, -1.05, -1e6], rng.uniform(-60, -2, 40)])
    widths = np.concatenate([[1.0, 0.5, 30.0, 3400.0, 0.05, 1e5], rng.uniform(0, 1, 40) * np.abs(mids[6:])])
    mid, rad = interval.gelu_bounds((mids.copy(), widths.copy()))
    slope = interval.up(interval.GELU_SLOPE * widths + np.abs(mids) * interval.GELU_ROUNDING * interval.U, 3)
    assert (rad <= slope + interval.TINY).all() and rad[3] < 1e-300 and rad[2] < 1e-3 < slope[2]
    for m, r, c, w in zip(mid, rad, mids, widths):
        upper = c + w
        for t in [c - w, c, upper, *np.linspace(c - w, upper, 25)]:
            if t <= upper:
                assert abs(real(mp.mpf(float(t))) - mp.mpf(float(m))) <= r, (c, w, t)


def test_a_model_whose_lead_is_below_the_rounding_is_not_proved(tmp_path):
    """float64 and real arithmetic agree on the winner, but the lead is smaller than what rounding could move."""
    from typer.testing import CliRunner

    from handwired.cli import app

    path = ROOT / "tests" / "data" / "crafted" / "thin_lead.json"
    model = load(str(path))
    mid, _ = certify.certified_logits(model, np.array([[0]]))
    real = ExactModel(model.params, 1).logits((0,))
    assert real[1] > real[0] and mid[0, 1] > mid[0, 0]  # both say b
    result = CliRunner().invoke(app, ["check", str(path), "--exhaustive", "--json"])
    assert result.exit_code == 1
    verdict = json.loads(result.stdout)
    assert verdict["failed"] == 0 and verdict["passed"] == 1
    assert verdict["proved"] == 0 and verdict["unproved"] == 1 and verdict["first_unproved"]["context"] == "a"
    assert verdict["widest_bound"] > 0


def test_check_names_the_first_unproved_context_in_one_line_and_exits_1(monkeypatch):
    from test_cli import invoke

    monkeypatch.setenv("COLUMNS", "300")
    path = str(ROOT / "tests" / "data" / "crafted" / "rounded.json")
    result = invoke("check", path, "--exhaustive")
    assert result.exit_code == 1
    lines = [line for line in result.stdout.splitlines() if "proved" in line and "Not proved" in line]
    assert len(lines) == 1
    assert re.match(r"Not proved: 'a' passes in float64, but the bounds overlap by \d\.\d+ logits \(a's upper bound "
                    r"over b's lower bound\); 1 context not proved$", lines[0].strip())
    assert "Proved on every context" not in result.stdout
    skipped = invoke("check", path, "--exhaustive", "--no-proof", "--json")
    verdict = json.loads(skipped.stdout)
    assert skipped.exit_code == 0 and verdict["proof"] is False and verdict["proved"] == 0
    assert "proved" not in invoke("check", path, "--exhaustive", "--no-proof").stdout.replace("not proved", "")


def test_a_puzzle_is_solved_and_recorded_only_when_proved(monkeypatch, handwired_home):
    """The reference of aab: proved, solved, recorded. Without the proof, or with bounds that do not separate
    the logits, it passes in float64 yet is not solved, and nothing reaches the progress file."""
    from test_cli import invoke

    from handwired.judge.checking import report as reporting

    reference = str(ROOT / "puzzles" / "solutions" / "aab.json")
    skipped = invoke("puzzles", "check", "aab", reference, "--no-proof")
    assert skipped.exit_code == 1 and "Passed in float64, not proved" in skipped.stdout
    assert "a puzzle is solved only when every one is proved (this check skipped the proof)" in " ".join(
        skipped.stdout.split())
    assert "Solved" not in skipped.stdout and not (handwired_home / "progress.json").exists()
    real = reporting._bounds_apart
    monkeypatch.setattr(reporting, "_bounds_apart", lambda mid, rad, judgement: real(mid, rad + 1e6, judgement))
    wide = invoke("puzzles", "check", "aab", reference, "--json")
    verdict = json.loads(wide.stdout)
    assert wide.exit_code == 1 and not verdict["solved"] and verdict["score"] is None
    assert verdict["proved"] == 0 and verdict["unproved"] == verdict["passed"] > 0
    assert verdict["first_unproved"]["overlap"] > 1e6 and not (handwired_home / "progress.json").exists()
    monkeypatch.setattr(reporting, "_bounds_apart", real)
    proved = invoke("puzzles", "check", "aab", reference)
    assert proved.exit_code == 0 and "Proved on every context" in proved.stdout and "Solved" in proved.stdout
    assert (handwired_home / "progress.json").exists()


def test_watch_says_proved_only_when_proved():
    from rich.console import Console

    from handwired.views.watch import judge, verdict_view

    def shown(verdict) -> str:
        console = Console(width=300, record=True, color_system=None)
        console.print(verdict_view(verdict))
        return console.export_text()

    reference = load(str(ROOT / "puzzles" / "solutions" / "aab.json"))
    text = shown(judge(load_puzzle("aab"))(reference))
    assert text.startswith("PASS") and "Proved on every context" in text
    rounded = load(str(ROOT / "tests" / "data" / "crafted" / "rounded.json"))
    text = shown(judge()(rounded))
    assert text.startswith("FAIL") and "Not proved: 'a' passes in float64" in text and "Proved on" not in text


def test_the_estimate_before_a_certified_check_counts_the_proofs_cost():
    """A check the float estimate would allow is refused when the proof's cost takes it over the limit."""
    from handwired.engine.cost import exhaustive_seconds
    from handwired.errors import HandwiredError
    from handwired.judge.checking.contexts import count_contexts
    from handwired.judge.checking.plans import exhaustive_plan, pattern_rule

    model = load(str(ROOT / "weights" / "aab.json"))
    unproved, proved = (exhaustive_seconds(model, count_contexts(model), proof) for proof in (False, True))
    assert proved > unproved
    limit = (unproved + proved) / 2  # between the float estimate and the certified one
    exhaustive_plan(model, pattern_rule(model, "aab"), max_seconds=limit, proof=False)
    with pytest.raises(HandwiredError, match="of checking for this model"):
        exhaustive_plan(model, pattern_rule(model, "aab"), max_seconds=limit, proof=True)


def test_the_walks_estimates_count_the_proofs_cost(monkeypatch):
    """A domain, and every string over a wide vocabulary, walked: the float check within the limit and the certified
    one over it are told apart before anything is walked (the walk patched to fail if called for the latter)."""
    from handwired.engine import walk as walking
    from handwired.errors import HandwiredError
    from handwired.judge.checking import contexts
    from handwired.judge.checking.plans import domain_plan, every_string_plan
    from handwired.judge.kinds.rules import PatternRule

    add = load(str(ROOT / "puzzles" / "solutions" / "add.json"))
    domain = load_puzzle("add").domain
    n_contexts, nodes = domain.bound()
    wide = model_of(random_params(np.random.default_rng(2), n_vocab=70, n_ctx=2, n_embd=4, n_layer=1, n_hidden=4),
                    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&*+-"), 2, 1)
    rule = PatternRule(np.array([0, 1]), 70, "ab")
    for model, make, (judged, walked, longest) in (
            (add, lambda proof: domain_plan(add, domain, load_puzzle("add").rule, proof),
             (n_contexts, nodes, domain.longest)),
            (wide, lambda proof: every_string_plan(wide, rule, proof), (70 + 70**2, 70 + 70**2, 2))):
        unproved, proved = (contexts.walk_seconds(model, walked, judged, longest, proof) for proof in (False, True))
        assert proved > unproved
        monkeypatch.setattr(contexts, "MAX_EXHAUSTIVE_SECONDS", (unproved + proved) / 2)
        make(False)
        monkeypatch.setattr(walking, "walk", lambda *args: pytest.fail("walked"))
        with pytest.raises(HandwiredError, match="to check for this model, more than"):
            next(make(True).batches())
        monkeypatch.undo()
