"""The depth-first walk of a domain's trie: the same verdicts as the batched forward pass on every context, memory
bounded by a batch, and a domain too large refused by its estimate before anything is evaluated."""

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from reference import params_to_document, random_params
from test_cli import invoke, user_error
from walkable import walkable

from handwired.engine import walk as walking
from handwired.engine.arithmetic import floats as stepping
from handwired.engine.arithmetic.floats import float_walk
from handwired.engine.batch import next_logits
from handwired.engine.walk import EveryString
from handwired.errors import HandwiredError
from handwired.judge.game.catalogue import catalogue, load_puzzle, reference_solution
from handwired.judge.game.puzzle import starter
from handwired.judge.game.verdict import submit
from handwired.judge.kinds import domains
from handwired.judge.kinds.rules import DECIDED
from handwired.weightfile import parse

ROOT = Path(__file__).resolve().parent.parent
PUZZLES = {puzzle.name: puzzle for puzzle in catalogue()}


def brute_force(model, rule, contexts):
    """Every context through the batched forward pass (engine/batch, no prefix shared): the counts, the smallest
    passing margin and the contexts within 1e-9 of it, and every failing context, shortest first."""
    passed = failed = 0
    margins, failing = [], []
    for batch in contexts:
        judgement = rule.judge(batch)
        logits = next_logits(model, batch.astype(np.intp))
        right = np.where(judgement.acceptable, logits, -np.inf).max(axis=1)
        wrong = np.where(judgement.acceptable, -np.inf, logits).max(axis=1)
        decided = judgement.status == DECIDED
        margin = right - wrong
        passed += int((decided & (margin > 0)).sum())
        failed += int((decided & ~(margin > 0)).sum())
        margins += [(float(m), model.decode(row)) for m, row, ok in zip(margin, batch, decided & (margin > 0))
                    if ok and np.isfinite(m)]
        failing += [model.decode(row) for row in batch[decided & ~(margin > 0)]]
    smallest = min((m for m, _ in margins), default=None)
    closest = {c for m, c in margins if smallest is not None and m <= smallest + 1e-9}
    failing.sort(key=lambda c: (len(c), [model.vocab.index(t) for t in c]))
    return passed, failed, smallest, closest, failing


def at_caps(puzzle, seed):
    """A random model at the puzzle's caps: every block, its widest MLP, LayerNorm."""
    return at_caps_document(puzzle, seed)[0]


def at_caps_document(puzzle, seed):
    caps = puzzle.caps
    hidden = (caps.hidden or 4 * caps.n_embd) if caps.mlp else 0
    rng = np.random.default_rng(seed)
    params = random_params(rng, n_vocab=len(puzzle.vocab), n_ctx=puzzle.n_ctx, n_embd=caps.n_embd,
                           n_layer=caps.n_layer, n_hidden=max(hidden, 1), mlp=bool(caps.mlp))
    doc = params_to_document(params, caps.n_head, "".join(puzzle.vocab), puzzle.n_ctx)
    model, problems = parse(doc)
    assert problems == []
    return model, doc


def every_context(puzzle):
    if puzzle.domain is not None:
        return puzzle.domain.contexts
    n = len(puzzle.vocab)
    return [np.array(np.unravel_index(np.arange(n**length), (n,) * length)).T for length in range(1, puzzle.n_ctx + 1)]


def models(puzzle):
    yield "reference", reference_solution(puzzle)
    if puzzle.n_contexts < 20_000:  # all zeros: every logit 0, every context a tie (the large ones cost seconds)
        yield "starter", parse(starter(puzzle))[0]
    yield "random at caps", at_caps(puzzle, 7)


@pytest.mark.parametrize("name", walkable(sorted(PUZZLES)))
def test_the_verdict_is_the_brute_force_one_on_every_bundled_puzzle(name):
    """Counts, margin and shortest failures of the check (the walk of a domain, or of every string cut by slot and
    in parts) and, for every string, of the plain walk too (in vocab order, its siblings copying their parent's keys),
    against every context run on its own through the batched forward pass."""
    puzzle = PUZZLES[name]
    for label, model in models(puzzle):
        passed, failed, smallest, closest, failing = brute_force(model, puzzle.rule, every_context(puzzle))
        reports = [submit(puzzle, model).report]
        if puzzle.domain is None:
            reports.append(_walked(model, puzzle, EveryString(model.n_vocab, model.n_ctx)))
        for report in reports:
            assert (report.passed, report.failed) == (passed, failed), (name, label)
            assert [f.context for f in report.failures] == failing[:len(report.failures)], (name, label)
            assert len(report.failures) == min(len(failing), 10)
            if smallest is None:
                assert report.margin is None
            else:
                assert report.margin.value == pytest.approx(smallest, rel=1e-9, abs=1e-9), (name, label)
                assert report.margin.context in closest, (name, label)


def _walked(model, puzzle, shape):
    from handwired.judge.checking.plans import Batch, Plan
    from handwired.judge.checking.report import run

    def batches():
        for visit in float_walk(model, shape):
            contexts = visit.prefixes[visit.judged]
            if len(contexts):
                yield Batch(contexts, puzzle.rule.judge(contexts), visit.logits[visit.judged])

    return run(model, Plan("walk", "", 0, batches))


@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_any_batch_size_gives_the_same_logits(chunk):
    """Batches of one node, of a few (a parent's children split between batches, an only child writing into its
    parent's room) and of many walk the same nodes in the same order with the same logits."""
    puzzle = PUZZLES["copy"]
    model = at_caps(puzzle, 3)
    whole = [(v.prefixes, v.judged, v.logits) for v in float_walk(model, puzzle.domain)]
    parts = [(v.prefixes, v.judged, v.logits) for v in float_walk(model, puzzle.domain, chunk)]
    assert max(len(p) for p, _, _ in parts) <= chunk
    for length in range(1, puzzle.domain.longest + 1):
        mine = [(p, j, lg) for p, j, lg in parts if p.shape[1] == length]
        theirs = [(p, j, lg) for p, j, lg in whole if p.shape[1] == length]
        assert np.concatenate([p for p, _, _ in mine]).tolist() == np.concatenate([p for p, _, _ in theirs]).tolist()
        if any(j.any() for _, j, _ in mine):
            np.testing.assert_allclose(np.concatenate([lg[j] for _, j, lg in mine if j.any()]),
                                       np.concatenate([lg[j] for _, j, lg in theirs if j.any()]), rtol=1e-12,
                                       atol=1e-12)


def test_each_batch_comes_in_vocab_order_and_nothing_is_sorted(monkeypatch):
    """The walk never sorts: np.sort, np.unique and argsort are not called; every length's nodes come in order."""
    puzzle = PUZZLES["sort"]
    for forbidden in ("sort", "unique", "argsort", "lexsort"):
        monkeypatch.setattr(walking.np, forbidden, _refuse, raising=False)
    seen: dict[int, list] = {}
    for visit in float_walk(reference_solution(puzzle), EveryString(5, 4)):
        seen.setdefault(visit.prefixes.shape[1], []).extend(map(tuple, visit.prefixes.tolist()))
    for length, rows in seen.items():
        assert rows == sorted(rows) and len(rows) == 5**length


def _refuse(*args, **kwargs):
    raise AssertionError("called")


def test_memory_is_bounded_by_a_batch_not_by_the_domain():
    """tracemalloc's peak over a walk of 4,096 contexts and of 65,536 (16 times as many) with the same model:
    within a few batches' worth of each other, far below what keeping every node's keys would take."""
    model = at_caps(PUZZLES["induction"], 1)
    peaks = []
    for n_ctx in (6, 8):
        tracemalloc.start()
        count = sum(int(v.judged.sum()) for v in float_walk(model, EveryString(4, n_ctx, n_ctx), chunk=256))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert count == 4**n_ctx
    every_key = 4**8 * 8 * 2 * model.n_layer * model.n_embd * 8  # bytes to keep every context's keys and values
    assert peaks[1] < 1.5 * peaks[0] + 4 * 2**20 and peaks[1] < every_key / 4, peaks


WIDER = {"n_embd": 192, "n_head": 2, "n_layer": 2, "mlp": 768}


def wide_add(tmp_path, template="###+###", width=4, caps=None, random=True):
    """The add statement rewritten with wider operands (4,000,000 contexts for ###+###), and a random model at its
    caps (add's unless given), or its starter (all zeros: the same widths, a small file)."""
    doc = json.loads((ROOT / "puzzles" / "add.json").read_text(encoding="utf-8"))
    n_ctx = len(template) + 1 + width
    doc |= {"name": "wide", "n_ctx": n_ctx, "rule": doc["rule"] | {"width": width},
            "domain": doc["domain"] | {"template": template}, "examples": [template.replace("#", "0") + "="]}
    for key in ("par", "record"):
        doc.pop(key)
    doc["caps"] = caps or doc["caps"]
    (tmp_path / "wide.json").write_text(json.dumps(doc))
    puzzle = load_puzzle(str(tmp_path / "wide.json"))
    model, doc = at_caps_document(puzzle, 2) if random else (parse(starter(puzzle))[0], starter(puzzle))
    (tmp_path / "model.json").write_text(json.dumps(doc))
    return puzzle, model


def test_a_domain_too_large_is_refused_by_estimate_before_anything_is_evaluated(tmp_path, monkeypatch):
    """400,000 sums at six times add's width: refused in one line naming the figures and what narrows it; the
    evaluator is never called and almost nothing is allocated."""
    puzzle, model = wide_add(tmp_path, "###+##", caps=WIDER, random=False)
    monkeypatch.setattr(stepping, "block_step", _refuse)
    monkeypatch.setattr(walking, "walk", _refuse)
    tracemalloc.start()
    with pytest.raises(HandwiredError) as error:
        submit(puzzle, model)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    message = str(error.value)
    assert message.startswith("every context of the domain: 400,000 contexts (512,110 prefixes): about ")
    assert "to check for this model, more than the 30 seconds handwired will spend on one; give the statement a " \
           "smaller domain" in message and "\n" not in message
    assert peak < 2 * 2**20, peak


def test_the_refusal_is_one_line_and_exit_code_2_in_every_command(tmp_path, monkeypatch):
    wide_add(tmp_path, "###+##", caps=WIDER, random=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(stepping, "block_step", _refuse)
    for args in (["puzzles", "check", "wide.json", "model.json"],
                 ["check", "-w", "model.json", "--puzzle", "wide.json"],
                 ["spread", "logits:0", "-w", "model.json", "--puzzle", "wide.json"],
                 ["diff", "model.json", "model.json", "--puzzle", "wide.json"]):
        message = user_error(*args)
        assert message.startswith("error: every context of the domain: 400,000 contexts"), (args, message)
        assert "smaller domain" in message


def test_four_million_sums_are_read_and_estimated_not_refused_when_read(tmp_path, monkeypatch):
    """###+### (4,000,000 contexts of 8 to 11 tokens, 38 million in all): the statement is read, counted by its
    inputs, and at add's caps its float64 check is estimated at over half a minute (it took 78 s of CPU on a quiet
    machine), over the 30 seconds a check takes unless a user allows more: with a minute allowed it gets
    as far as the walk (patched here to stop at once; benchmarks/bench_domains.py runs it whole, in about 100 MB).
    The certified check costs about 2.7× as much: it is refused on its estimate, before the walk."""
    from handwired import budget

    puzzle, model = wide_add(tmp_path, "###+###")
    assert puzzle.domain.size == 4_000_000
    counted = puzzle.domain.inputs.tokens(len("###+###=") + 4)  # the bound the statement is read under ("up to")
    assert 10**6 * (8 + 9 + 10 + 11) <= counted <= domains.MAX_TOKENS and counted > 20_000_000  # the old bound
    monkeypatch.setattr(walking, "walk", _refuse)
    with pytest.raises(HandwiredError, match=r"4,000,000 contexts .*: about .* to check for this model, more than"):
        submit(puzzle, model, proof=False)
    with budget.allowing(max_seconds=60):
        with pytest.raises(AssertionError, match="called"):
            submit(puzzle, model, proof=False)
        with pytest.raises(HandwiredError, match=r"4,000,000 contexts .*: about .* to check for this model, more "):
            submit(puzzle, model)


def test_a_refused_proof_offers_the_float_check_in_each_command_that_has_it(tmp_path, monkeypatch):
    """When only the proof's cost puts a check over the limit, the refusal says so and names --no-proof with the
    float check's own estimate, in check, puzzles check and watch (whose verdict then walks in float64). ###+###'s
    float64 check is estimated at about half a minute: a minute is allowed."""
    from handwired import budget
    from handwired.views import watch as watching

    puzzle, model = wide_add(tmp_path, "###+###")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(walking, "walk", _refuse)
    for args in (["puzzles", "check", "wide.json", "model.json"],
                 ["check", "-w", "model.json", "--puzzle", "wide.json"]):
        message = user_error(*args, "--max-seconds", "60")
        assert "to check for this model, more than the 60 seconds" in message, (args, message)
        assert "or judge it in float64 without the proof (--no-proof: about " in message, (args, message)
        assert "\n" not in message.strip()
    with budget.allowing(max_seconds=60):
        with pytest.raises(HandwiredError, match=r"\(no_proof: about "):
            watching.judge(puzzle)(model)
        with pytest.raises(AssertionError, match="called"):  # --no-proof: the float walk starts
            watching.judge(puzzle, proof=False)(model)


def test_a_wider_sum_is_counted_and_checked(tmp_path):
    """##+## with a 4-digit answer at add's caps (40,000 contexts): counted over its inputs alone, bounded by the
    formula, every context judged, and the walk's logits those of the batched forward pass on every 97th context."""
    puzzle, model = wide_add(tmp_path, "##+##")
    assert puzzle.domain.size == 40_000 and puzzle.domain.bound() == (40_000, 11_210 + 40_000)
    report = submit(puzzle, model).report
    assert report.checked == report.passed + report.failed == 40_000
    sample = {tuple(row) for batch in puzzle.domain.contexts for row in batch[::97].tolist()}
    compared = 0
    for visit in float_walk(model, puzzle.domain):
        rows = [i for i, row in enumerate(visit.prefixes.tolist()) if tuple(row) in sample]
        if rows:
            want = next_logits(model, visit.prefixes[rows].astype(np.intp))
            np.testing.assert_allclose(visit.logits[rows], want, rtol=1e-10, atol=1e-10)
            compared += len(rows)
    assert compared == len(sample)


def test_statements_are_read_without_walking_their_domains(monkeypatch, tmp_path):
    """list, show, hint and start never enumerate a domain: a strings domain's count is a formula, and
    answer_so_far's is counted over its inputs alone, once."""
    walked = []
    real = walking.walk

    def spy(shape, *args, **kwargs):
        walked.append(type(shape).__name__)
        return real(shape, *args, **kwargs)

    monkeypatch.setattr(walking, "walk", spy)
    monkeypatch.chdir(tmp_path)
    for name in PUZZLES:
        for args in (["puzzles", "show", name], ["puzzles", "hint", name], ["puzzles", "start", name, "-o", "x.json",
                                                                              "--force"]):
            assert invoke(*args).exit_code == 0, args
    assert invoke("puzzles", "list").exit_code == 0
    assert set(walked) <= {"_InputsOnly"} and walked.count("_InputsOnly") == 4  # show of the 4 answer_so_far ones


def test_a_wide_vocabulary_is_walked_in_bounded_memory(tmp_path):
    """Every string over 128 tokens (the most a statement may have) up to n_ctx 2 (16,512 contexts): walked in
    batches sized by the vocabulary, within 64 MB."""
    doc = json.loads((ROOT / "puzzles" / "first.json").read_text(encoding="utf-8"))
    vocab = [chr(0x4E00 + i) for i in range(128)]
    doc |= {"name": "wide", "vocab": vocab, "n_ctx": 2, "examples": [vocab[0]]}
    for key in ("par", "record"):
        doc.pop(key)
    (tmp_path / "wide.json").write_text(json.dumps(doc))
    puzzle = load_puzzle(str(tmp_path / "wide.json"))
    model = parse(starter(puzzle))[0]
    tracemalloc.start()
    report = submit(puzzle, model).report
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert report.checked == report.failed == 128 + 128**2  # all zeros: every logit ties
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MB"


def test_listed_contexts_are_walked_and_found_in_any_order():
    """A list of contexts of several lengths, with repeats: the walk visits exactly their prefixes and judges exactly
    them, each length in vocab order; asked out of the walk's order (a prefix outside the list, lengths mixed), the
    shape answers as the brute-force set of prefixes does; ``index`` puts each given row at its context's place."""
    rng = np.random.default_rng(4)
    given = [rng.integers(0, 3, (40, length)) for length in (2, 5, 5, 3)]
    contexts = {tuple(int(t) for t in row) for batch in given for row in batch}
    prefixes = {context[:length] for context in contexts for length in range(len(context) + 1)}
    shape = walking.Listed(given, 3)
    visited, judged = [], {}
    for visit in walking.shape_walk(shape, chunk=7):
        rows = [tuple(row) for row in visit.prefixes.tolist()]
        visited += rows
        judged.setdefault(len(rows[0]), []).extend(row for row, j in zip(rows, visit.judged) if j)
    assert sorted(visited) == sorted(prefixes - {()}) and len(visited) == len(prefixes) - 1
    for length, rows in judged.items():
        assert rows == sorted(c for c in contexts if len(c) == length)
        for batch, index in zip(given, shape.index):
            if batch.shape[1] == length:
                assert [rows[i] for i in index] == [tuple(row) for row in batch.tolist()]
    asked = [rng.integers(0, 3, (9, length)) for length in (4, 0, 2, 6, 1, 5, 3)]
    for rows in asked + asked[::-1]:
        children, found = shape.children(rows), shape.judged(rows)
        for row, allowed, is_context in zip(map(tuple, rows.tolist()), children, found):
            assert is_context == (row in contexts)
            assert allowed.tolist() == [row + (t,) in prefixes for t in range(3)]
