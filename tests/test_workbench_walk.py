"""sweep and ablate on the bounded walk: each variant's verdict against the ordinary check of the file edited, on
every bundled puzzle; memory that does not grow with the domain; the estimate counting bisection."""

import copy
import json
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from reference import params_to_document, random_params
from test_cli import user_error
from walkable import walkable

from handwired.engine.cost import walk_bytes
from handwired.engine.resume import VARIANT_MEMORY
from handwired.errors import HandwiredError
from handwired.judge.game.catalogue import bundled_puzzles, load_puzzle, solution_path
from handwired.judge.game.puzzle import read_statement
from handwired.judge.game.verdict import submit
from handwired.judge.workbench import variants as workbench
from handwired.judge.workbench.ablate import ablate
from handwired.judge.workbench.spread import puzzle_source, target_source
from handwired.judge.workbench.sweep import halvings, parse_range, refuse_long, sweep, with_constants
from handwired.judge.workbench.variants import Bench
from handwired.weightfile import load, parse

ROOT = Path(__file__).resolve().parent.parent


def checked(puzzle, model, shortest=False):
    """The ordinary check of the file, in float64: passes, how many fail, and its margin (None: none passes); with
    ``shortest``, also its shortest failure (None: none fails)."""
    report = submit(puzzle, model, proof=False).report
    out = report.ok, report.failed, None if report.margin is None else report.margin.value
    return (*out, report.failures[0].context if report.failures else None) if shortest else out


@pytest.mark.parametrize("name", walkable(sorted(bundled_puzzles())))
def test_ablating_each_reference_agrees_with_removing_each_part_and_checking(name):
    puzzle, model = load_puzzle(name), load(str(solution_path(name)))
    result = ablate(model, puzzle_source(puzzle, model))
    assert result.base.ok and result.judged == result.base.passed
    for row in result.rows:  # each part removed, the file checked the ordinary way
        ok, failed, margin, shortest = checked(puzzle, row.part.variant, shortest=True)
        assert (row.verdict.ok, row.verdict.failed) == (ok, failed), row.part.name
        assert row.needed == (failed > 0), row.part.name  # the file itself passes: what fails is broken
        assert (row.verdict.broken, row.verdict.first_broken) == (failed, shortest), row.part.name
        if ok:  # the smallest lead is the check's margin, to rounding
            assert row.verdict.worst == pytest.approx(margin, rel=1e-12, abs=1e-12), row.part.name


@pytest.mark.parametrize("name", walkable(sorted(bundled_puzzles())))
def test_sweeping_each_references_last_constant_agrees_with_checking_each_value(name):
    """The last constant a reference names (often its latest stage: what the values share is the most)."""
    puzzle, model = load_puzzle(name), load(str(solution_path(name)))
    constant, value = [(key, value) for key, value in model.written.constants.items()
                       if isinstance(value, (int, float))][-1]
    swept = parse_range(model, f"{constant}=0..{2 * value}", 3, False)
    result = sweep(model, puzzle_source(puzzle, model), [swept], precision=value / 4)
    for point in result.points:
        ok, failed, margin = checked(puzzle, with_constants(model, {constant: point.values[0]}))
        assert (point.verdict.ok, point.verdict.failed) == (ok, failed), point
        if ok:
            assert point.verdict.worst == pytest.approx(margin, rel=1e-12, abs=1e-12)
    for interval in result.intervals:  # each edge's values, tried by bisection, as the check judges them
        for edge in (interval.below, interval.above):
            if edge is not None:
                assert checked(puzzle, with_constants(model, {constant: edge.passes}))[0] is True
                assert checked(puzzle, with_constants(model, {constant: edge.fails}))[0] is False


def wide_add(folder: Path, template: str) -> tuple:
    """The add statement with wider operands (``###+##``: 400,000 contexts), and a random 2-block model with a
    constant K in its final LayerNorm's bias."""
    document = json.loads((ROOT / "puzzles" / "add.json").read_text(encoding="utf-8"))
    n_ctx = len(template) + 5
    document |= {"name": "wide", "n_ctx": n_ctx, "rule": document["rule"] | {"width": 4},
                 "domain": document["domain"] | {"template": template}, "examples": [template.replace("#", "0") + "="]}
    for key in ("par", "record"):
        document.pop(key)
    path = folder / f"wide{len(template)}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    params = random_params(np.random.default_rng(1), n_vocab=12, n_ctx=n_ctx, n_embd=8, n_layer=2, n_hidden=8)
    weights = params_to_document(params, 1, "0123456789+=", n_ctx)
    weights["constants"] = {"K": 1}
    weights["ln_f"]["b"] = ["K", *weights["ln_f"]["b"][1:]]
    model, problems = parse(weights)
    assert problems == []
    return read_statement(path), model


def variants(model):
    """A constant of ln_f (no keys kept), block 1's attention output, and block 0's attention (every key again)."""
    out = [with_constants(model, {"K": 2})]
    for path in (("blocks", 1, "attn", "c_proj", "w"), ("blocks", 0, "attn", "c_attn", "w")):
        params = copy.deepcopy(model.params)
        params[path[0]][path[1]][path[2]][path[3]][path[4]] *= 0.5
        out.append(replace(model, params=params))
    return out


def peak(puzzle, model) -> tuple[int, list]:
    tracemalloc.start()
    try:
        verdicts = Bench(model, puzzle_source(puzzle, model)).verdicts(variants(model))
        return tracemalloc.get_traced_memory()[1], verdicts
    finally:
        tracemalloc.stop()


def test_the_memory_of_a_sweep_does_not_grow_with_the_domain(tmp_path, monkeypatch):
    """`##+##` (40,000 contexts) and `###+##` (400,000), both filling the walk's batches: the peak grows with the
    depth (one more level of full batches on the path), not with the contexts, when nothing is kept across walks;
    it stays within the estimate the sweep is refused by; and what is kept across walks stays within its bound."""
    small, large = wide_add(tmp_path, "##+##"), wide_add(tmp_path, "###+##")
    monkeypatch.setattr(workbench, "SHARED_MEMORY", 0)
    small_peak, small_verdicts = peak(*small)
    large_peak, verdicts = peak(*large)
    assert all(verdict.passed + verdict.failed == 400_000 for verdict in verdicts)
    nodes, small_nodes, model = large[0].domain.bound()[1], small[0].domain.bound()[1], large[1]
    per_node = model.n_embd * 8 * (4 * model.n_layer + 8)  # what the whole trie kept per node for the same work
    assert large_peak - small_peak < (nodes - small_nodes) * per_node / 8  # ten times the contexts, a level deeper
    assert large_peak < walk_bytes(model, model.n_ctx) + VARIANT_MEMORY  # the estimate's bound, whatever the domain
    assert large_peak < nodes * per_node / 4
    monkeypatch.setattr(workbench, "SHARED_MEMORY", 64 * 2**20)
    kept_peak, kept = peak(*small)
    assert kept == small_verdicts  # kept across walks or computed afresh, the same verdicts
    assert kept_peak < small_peak + 64 * 2**20


def by_the_walk(seconds: float):
    """workbench_seconds as if each walk of the file and each variant took ``seconds``."""
    return lambda model, nodes, contexts, longest, variants, walks=1: seconds * (variants + walks)


def test_the_estimate_of_a_sweep_counts_the_bisection_of_an_edge(monkeypatch):
    """A sweep whose grid alone is within ten minutes, but not with the bisection of an edge."""
    add = str(solution_path("add"))
    seconds = []
    monkeypatch.setattr(workbench, "workbench_seconds", by_the_walk(10.0))  # each value: 10 s
    monkeypatch.setattr(workbench, "variant_walk", lambda *args, **kwargs: seconds.append(1) or iter(()))
    line = user_error("sweep", add, "K=1..40", "--puzzle", "add", "--steps", "40")
    # 14 steps of 3/5 to 1/1024, three to a walk of 7 values: 31 values in 5 walks; and the grid's 40 in one
    assert "--steps 40 (and up to 31 values bisecting each edge the grid finds, one counted here)" in line
    assert "71 variants judged" in line and "--precision" in line and seconds == []
    line = user_error("sweep", add, "K=1..40", "--puzzle", "add", "--steps", "30", "--precision", "1e-300")
    assert "(and up to 140 values bisecting each edge" in line  # 60 steps at most, 20 walks of 7 values
    line = user_error("sweep", add, "K=1..2", "G=1..2", "--puzzle", "add", "--steps", "8")  # a heatmap: no bisection
    assert "--steps 8: 64 variants judged" in line and "bisect" not in line and "--precision" not in line
    model = load(add)  # a sweep that finds more edges is estimated again, with them, before it bisects
    monkeypatch.setattr(workbench, "workbench_seconds", by_the_walk(5.0))
    ranges = [parse_range(model, "K=1..40", 20, False)]
    refuse_long(model, puzzle_source(load_puzzle("add"), model), ranges)  # 20 + 31 values, 6 walks: 285 s
    refuse_long(model, puzzle_source(load_puzzle("add"), model), ranges, None, 2)  # 62 values, 5 walks: 335 s
    with pytest.raises(HandwiredError, match=r"steps 20: the grid's 5 edges, up to 155 values bisecting them: 155 "
                                             r"variants judged"):
        refuse_long(model, puzzle_source(load_puzzle("add"), model), ranges, None, 5)  # 800 s


def test_bisecting_three_steps_per_walk_tries_the_values_one_step_at_a_time_tries(monkeypatch):
    """When the file's run is not kept across walks, each walk judges the next three steps of every edge, whichever
    way each goes: the same values tried, the same edges, in fewer walks."""
    puzzle, model = load_puzzle("add"), load(str(solution_path("add")))
    walks = []
    original = workbench.variant_walk
    monkeypatch.setattr(workbench, "variant_walk", lambda *args, **kwargs: walks.append(len(args[1])) or original(
        *args, **kwargs))

    def swept():
        walks.clear()
        return sweep(model, puzzle_source(puzzle, model), [parse_range(model, "K=1..40", 9, False)]), list(walks)

    (kept, kept_walks), (alone, alone_walks) = swept(), (monkeypatch.setattr(workbench, "SHARED_MEMORY", 0), swept())[1]
    assert (kept.points, kept.intervals) == (alone.points, alone.intervals) and kept.intervals[0].below.tried > 0
    assert kept_walks[0] == alone_walks[0] == 9  # the grid, in one walk
    assert set(kept_walks[1:]) == {1} and max(alone_walks[1:]) == 7  # a step per walk; three (7 values) per walk
    assert len(alone_walks) - 1 < (len(kept_walks) - 1) / 2
    assert len(kept_walks) - 1 <= halvings(kept.ranges[0], None)  # one edge: its steps within the estimate's count


@pytest.mark.parametrize("args", [("Lg=0..4", False, None), ("Lg=0.01..10000", True, None), ("Lg=0..4", False, 1e-6),
                                  ("Lg=0.5..40", True, 1e-3)])
def test_bisection_takes_no_more_steps_than_the_estimate_counts(args, monkeypatch):
    from handwired.judge.workbench import sweep as sweeping

    text, log, precision = args
    model = load("aab")
    swept = parse_range(model, text, 9, log)
    made = []
    original = sweeping.with_constants
    monkeypatch.setattr(sweeping, "with_constants", lambda *args: made.append(1) or original(*args))
    result = sweep(model, target_source(model, "aab"), [swept], precision)
    steps = len(made) - 9  # the values bisection tried, one step of an edge each (its run is kept: one per walk)
    edges = [edge for interval in result.intervals for edge in (interval.below, interval.above) if edge]
    assert edges and 0 < steps <= len(edges) * halvings(swept, precision)
    assert all(edge.reached for edge in edges)


def test_the_values_a_sweep_says_bisection_may_try_bound_those_three_steps_per_walk_try(monkeypatch):
    """When each walk judges three steps of an edge at once (7 values, whichever way each step goes), the estimate's
    "up to N values bisecting" bounds the values it tries, and its seconds count them all."""
    import re

    from handwired.judge.workbench import sweep as sweeping

    puzzle, model = load_puzzle("add"), load(str(solution_path("add")))
    source = puzzle_source(puzzle, model)
    monkeypatch.setattr(workbench, "SHARED_MEMORY", 0)  # the file's run is not kept: three steps per walk
    made = []
    original = sweeping.with_constants
    monkeypatch.setattr(sweeping, "with_constants", lambda *args: made.append(1) or original(*args))
    ranges = [parse_range(model, "K=1..40", 9, False)]
    result = sweep(model, source, ranges)
    tried = len(made) - 9
    edges = sum(1 for interval in result.intervals for edge in (interval.below, interval.above) if edge)
    monkeypatch.setattr(workbench, "workbench_seconds", by_the_walk(1e6))  # refused, so that the figure is printed
    with pytest.raises(HandwiredError) as refused:
        refuse_long(model, source, ranges, None, edges)
    said = int(re.search(r"up to ([\d,]+) values bisecting", str(refused.value))[1].replace(",", ""))
    assert edges >= 1 and 0 < tried <= said
    assert said <= edges * 7 * -(-halvings(ranges[0], None) // 3)  # and not more than whole walks of 7 each
