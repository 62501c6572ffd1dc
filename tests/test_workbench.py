"""sweep, ablate and the spread of derived quantities, each checked against a brute force: the file edited as a
person would edit it, loaded, and checked the ordinary way, value by value and part by part."""

import copy
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from reference import reference_forward
from test_cli import invoke, user_error
from test_every_string import random_model

from handwired.engine.arithmetic.floats import float_walk
from handwired.engine.resume import resumed, shared_stages, variant_walk
from handwired.engine.walk import EveryString
from handwired.judge.checking.plans import exhaustive_plan, pattern_rule
from handwired.judge.checking.report import run
from handwired.judge.game.catalogue import load_puzzle
from handwired.judge.game.verdict import submit
from handwired.weightfile import load, parse
from handwired.weightfile.checker import locate

ADD = str(Path(__file__).resolve().parent.parent / "puzzles" / "solutions" / "add.json")



def bundled_document(name="aab"):
    return copy.deepcopy(load(name).written.document)


def loaded(document, path):
    path.write_text(json.dumps(document), encoding="utf-8")
    return load(str(path))


def check_ok(model) -> tuple[bool, int]:
    """The ordinary check of every context by the file's target: passes, and how many contexts fail."""
    report = run(model, exhaustive_plan(model, pattern_rule(model, model.target)))
    return report.ok, report.failed


# ---------------------------------------------------------------- sweep


def test_sweep_finds_the_interval_a_brute_force_scan_of_the_check_finds(tmp_path):
    result = invoke("sweep", "aab", "Lg=0..4", "--steps", "9", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    document = bundled_document()

    def brute(value):
        document["constants"]["Lg"] = value
        return check_ok(loaded(document, tmp_path / "scan.json"))

    for point in data["points"]:  # every grid value: the same verdict and count of failures as check
        assert brute(point["values"]["Lg"]) == (point["passes"], point["failed"])
    (interval,) = data["intervals"]
    assert interval["high"] == 4 and interval["above"] is None
    edge = interval["below"]
    assert brute(edge["fails"])[0] is False and brute(edge["passes"])[0] is True
    assert 0 < edge["passes"] - edge["fails"] <= 0.5 / 1024 * 1.0001  # 1/1024 of the grid step (0.5)
    scan = np.linspace(0, 4, 161)  # a finer scan than the sweep's: it passes exactly above the edge
    for value in scan:
        if not edge["fails"] < value < edge["passes"]:
            assert brute(float(value))[0] == (value >= edge["passes"]), value


def test_sweep_prints_the_table_the_plot_and_the_interval():
    result = invoke("sweep", "aab", "Lg=0..4", "--steps", "9")
    assert result.exit_code == 0
    out = result.stdout
    assert "PASS" in out and "FAIL" in out and "float64" in out
    assert "Passes for Lg in [2.7495, 4]" in " ".join(out.split())
    assert "● " not in out.splitlines()[0]
    assert "└ Lg from 0 to 4" in out


def test_the_interval_says_how_many_of_its_values_were_on_the_grid_and_how_many_bisection_tried():
    data = json.loads(invoke("sweep", "aab", "Lg=0..4", "--steps", "9", "--json").stdout)
    (interval,) = data["intervals"]
    grid = [v for v in np.linspace(0, 4, 9) if interval["low"] <= v <= interval["high"]]  # 3, 3.5 and 4
    bisected = interval["tried"] - len(grid)
    assert len(grid) == 3 and bisected > 0
    text = " ".join(invoke("sweep", "aab", "Lg=0..4", "--steps", "9").stdout.split())
    assert (f"at every one of the {interval['tried']} values tried there ({len(grid)} on the grid, {bisected} by "
            "bisection)") in text


@pytest.mark.parametrize("args", [("Lg=0..4", "--steps", "9"), ("Lg=0.01..10000", "--log"),
                                  ("Lg=0..4", "--precision", "1e-9"), ("Lg=3..9", "--steps", "4")])
def test_the_interval_names_exactly_the_values_tried_never_a_rounding_of_them(args):
    """A rounded end could be a value never tried, below the last one that passed: each number the interval's line
    prints is, exactly, a value the sweep tried, with that value's verdict."""
    import re

    data = json.loads(invoke("sweep", "aab", *args, "--json").stdout)
    text = " ".join(invoke("sweep", "aab", *args).stdout.split())
    (interval,) = data["intervals"]
    line = re.search(r"Passes for Lg in \[(\S+), (\S+)\]: .*?\.(?: Edges|$)", text).group(0)
    low, high = (float(x) for x in re.search(r"\[(\S+), (\S+)\]", line).groups())
    assert (low, high) == (interval["low"], interval["high"])
    for edge, side in ((interval["below"], "below"), (interval["above"], "above")):
        if edge is not None:
            fails, passes = re.search(rf"fails at (\S+) {side} \((\S+) passes\)", line).groups()
            assert (float(fails), float(passes)) == (edge["fails"], edge["passes"])
    assert len(line) < 200  # and short: the bisection tries values with few digits


def test_a_precision_float64_cannot_reach_is_not_claimed():
    data = json.loads(invoke("sweep", "aab", "Lg=0..4", "--precision", "1e-30", "--json").stdout)
    edge = data["intervals"][0]["below"]
    assert edge["reached_precision"] is False and np.nextafter(edge["fails"], 5) == edge["passes"]  # adjacent
    text = " ".join(invoke("sweep", "aab", "Lg=0..4", "--precision", "1e-30").stdout.split())
    assert "to within 1e-30 (1 edge stopped 4.44089e-16 wide or less: float64 has nothing between its ends" in text
    reached = json.loads(invoke("sweep", "aab", "Lg=0..4", "--precision", "0.001", "--json").stdout)
    edge = reached["intervals"][0]["below"]
    assert edge["reached_precision"] is True and 0 < edge["passes"] - edge["fails"] <= 0.001
    assert "stopped" not in invoke("sweep", "aab", "Lg=0..4", "--precision", "0.001").stdout


@pytest.mark.parametrize("args", [("Lg=0..4", "--steps", "100"), ("Lg=1..4", "B=0..4", "--steps", "30")])
def test_a_plot_wider_than_the_terminal_goes_on_pages_not_wrapped(args, tmp_path, monkeypatch):
    path = tmp_path / "two.json"
    path.write_text(json.dumps(two_constant_document()), encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "60")
    data = json.loads(invoke("sweep", str(path), *args, "--json").stdout)
    out = invoke("sweep", str(path), *args).stdout
    lines = out.splitlines()
    plot = [line for line in lines if "│" in line and ("●" in line or "×" in line or "┈" in line)]
    assert plot and all(len(line) <= 60 for line in plot)  # every row of the plot fits: nothing wraps
    marks = sum(line.count("●") + line.count("×") for line in plot)
    assert marks == len(data["points"])  # every value is drawn once, on one page or the next
    assert sum(line.count("●") for line in plot) == sum(point["passes"] for point in data["points"])
    n = len(data["constants"][0]["values"])
    pages = [line for line in lines if f" of {n})" in line]
    assert len(pages) >= 2 and "(values 1–" in pages[0] and f"–{n} of {n})" in pages[-1]


def test_a_sweep_that_passes_everywhere_claims_no_bisection():
    text = " ".join(invoke("sweep", "aab", "Lg=3..9", "--steps", "4").stdout.split())
    assert "Passes for Lg in [3, 9]: at every one of the 4 grid values tried there." in text
    assert "bisection" not in text and "no edge to refine" in text


def test_a_sweep_where_nothing_passes_exits_1():
    result = invoke("sweep", "aab", "Lg=0..1", "--steps", "3")
    assert result.exit_code == 1
    assert "Every context passes at 0 of the 3 values tried" in " ".join(result.stdout.split())


def test_sweep_of_an_mlp_constant_of_add_agrees_with_puzzles_check():
    add, puzzle = load(ADD), load_puzzle("add")
    result = invoke("sweep", ADD, "K=1..3", "--puzzle", "add", "--steps", "3",
                    "--precision", "0.25", "--json")
    data = json.loads(result.stdout)
    for point in data["points"]:
        document = copy.deepcopy(add.written.document)
        document["constants"]["K"] = point["values"]["K"]
        model, problems = parse(document, add.source)
        report = submit(puzzle, model).report
        assert (report.ok, report.failed) == (point["passes"], point["failed"])
        if report.ok:  # the lead the sweep computed from the shared attention is the check's margin, exactly
            assert point["smallest_lead"] == report.margin.value


@pytest.mark.parametrize("change", ["blocks[1].attn.c_attn.w", "blocks[1].mlp.c_fc.w", "blocks[0].mlp.c_proj.w",
                                    "ln_f.g", "blocks[0].attn.c_proj.b", "blocks[1].attn.c_proj.w",
                                    "blocks[0].ln_1.g", "wpe"])
def test_a_variant_resumed_where_it_differs_gives_the_logits_of_a_whole_evaluation(change):
    base = random_model(5, 3, 5, 2, 2, True, True, 8)
    params = copy.deepcopy(base.params)
    array = locate(params, change)
    array += np.random.default_rng(1).normal(size=array.shape)
    variant = replace(base, params=params)
    stage = shared_stages(base.params, variant.params)
    assert stage == {"blocks[1].attn.c_attn.w": 4, "blocks[1].mlp.c_fc.w": 6, "blocks[0].mlp.c_proj.w": 3,
                     "ln_f.g": 7, "blocks[0].attn.c_proj.b": 2, "blocks[1].attn.c_proj.w": 5, "blocks[0].ln_1.g": 1,
                     "wpe": 0}[change]
    plan = resumed(base, variant)
    assert plan.stage == (0 if stage < 2 else stage)  # every block has an MLP: each stage has its entry recorded
    shape = EveryString(3, 5)
    for chunk in (None, 7):  # the walk's own batches, and small ones: several per level, siblings split
        walked = list(variant_walk(base, [plan, plan], shape, chunk))
        replayed = list(variant_walk(base, [plan], shape, chunk, replay=[entries for _, _, entries in walked]))
        whole = list(float_walk(variant, shape, chunk))
        own = list(float_walk(base, shape, chunk))
        assert len(walked) == len(replayed) == len(whole) == len(own)
        for (visit, logits, _), (again, replay, _), alone, mine in zip(walked, replayed, whole, own):
            np.testing.assert_array_equal(visit.prefixes, alone.prefixes)
            np.testing.assert_array_equal(visit.logits, mine.logits)  # the base model's, as its own walk's
            assert again.logits is None  # replayed: the base model did not run
            for got in (*logits, *replay):  # the variant's own walk's, to rounding (sums may be ordered otherwise)
                if stage < 2:  # walked on its own, from its embeddings: its own walk's, bit for bit
                    np.testing.assert_array_equal(got, alone.logits)
                np.testing.assert_allclose(got, alone.logits, rtol=1e-12, atol=1e-12)
            for row in (0, len(visit.prefixes) - 1):  # and the independent forward pass agrees
                tokens = visit.prefixes[row].tolist()
                expected = reference_forward(variant.params, tokens, variant.n_head)[0][-1]
                np.testing.assert_allclose(logits[0][row], expected, rtol=1e-9, atol=1e-9)


def two_constant_document():
    document = bundled_document()
    document["constants"]["B"] = 1024
    document["blocks"][0]["attn"]["c_proj"]["b"] = {"a": "B"}
    return document


def test_two_constants_draw_a_heatmap_and_count_what_passes(tmp_path):
    path = tmp_path / "two.json"
    path.write_text(json.dumps(two_constant_document()), encoding="utf-8")
    result = invoke("sweep", str(path), "Lg=1..4", "B=0..4", "--steps", "4", "--json")
    data = json.loads(result.stdout)
    assert len(data["points"]) == 16 and data["intervals"] == []
    document = two_constant_document()
    for point in data["points"]:
        document["constants"].update(point["values"])
        assert check_ok(loaded(document, tmp_path / "scan.json"))[0] == point["passes"]
    shown = invoke("sweep", str(path), "Lg=1..4", "B=0..4", "--steps", "4")
    passing = sum(point["passes"] for point in data["points"])
    assert f"Every context passes at {passing} of the 16 values tried" in " ".join(shown.stdout.split())
    assert shown.stdout.count("●") == passing + 1 and shown.stdout.count("×") == 16 - passing + 1  # + the legend


@pytest.mark.parametrize("steps", [2, 4, 7, 15, 30])
def test_the_heatmaps_value_axis_is_aligned_under_its_cells(steps, tmp_path, monkeypatch):
    """Under the heatmap, a tick under each column whose value is labelled, the first and the last always, and each
    label centred on its tick: the value of the column above it, as --json lists the values."""
    path = tmp_path / "two.json"
    path.write_text(json.dumps(two_constant_document()), encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "200")
    args = ("sweep", str(path), "Lg=1..4", "B=0..4", "--steps", str(steps))
    across = json.loads(invoke(*args, "--json").stdout)["constants"][0]["values"]
    lines = invoke(*args).stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "└" in line)
    row, ticks, labels = lines[at - 1], lines[at], lines[at + 1]
    cells = [column for column, char in enumerate(row) if char in "●×"]
    marked = [column for column, char in enumerate(ticks) if char == "┬"]
    assert len(cells) == steps and set(marked) <= set(cells) and marked[0] == cells[0] and marked[-1] == cells[-1]
    assert labels.split()[0] == "Lg" and len(labels.split()) == len(marked) + 1  # the name, then one per tick
    for column in marked:
        begin, end = labels.rfind(" ", 0, column) + 1, labels.find(" ", column)
        assert labels[begin:end if end >= 0 else None] == f"{across[cells.index(column)]:.6g}", (column, labels)
    if len(marked) < steps:
        assert f"┬ marks the {len(marked)} of these {steps} values labelled" in " ".join(lines[at + 2:at + 4])


def test_log_applies_to_one_constant_with_its_own_suffix(tmp_path, monkeypatch):
    """NAME=LO..HI:log spaces that constant's values on a log scale and leaves the other's even (--log spaces
    both, so a range from 0 is refused with it); the verdicts are the ordinary check's at each pair."""
    path = tmp_path / "two.json"
    path.write_text(json.dumps(two_constant_document()), encoding="utf-8")
    data = json.loads(invoke("sweep", str(path), "Lg=1..4096:log", "B=0..4", "--steps", "5", "--json").stdout)
    lg, b = data["constants"]
    assert (lg["name"], lg["log"], b["name"], b["log"]) == ("Lg", True, "B", False)
    np.testing.assert_allclose(lg["values"], [1, 8, 64, 512, 4096], rtol=1e-12)  # geometric
    np.testing.assert_allclose(b["values"], [0, 1, 2, 3, 4], rtol=1e-12)  # even
    document = two_constant_document()
    for point in data["points"]:
        document["constants"].update(point["values"])
        assert check_ok(loaded(document, tmp_path / "scan.json"))[0] == point["passes"], point
    monkeypatch.setenv("COLUMNS", "200")
    shown = invoke("sweep", str(path), "B=0..4", "Lg=1..4096:log", "--steps", "5").stdout
    assert "Lg ↑, log scale" in shown and "B from 0 to 4 →;" in shown  # the axis on a log scale says so, only it
    assert user_error("sweep", str(path), "Lg=1..4096", "B=0..4", "--log") == (
        "error: 'B=0..4': --log spaces the values on a log scale, which needs LO > 0")
    assert user_error("sweep", str(path), "Lg=1..4096", "B=0..4:log") == (
        "error: 'B=0..4:log': :log spaces the values on a log scale, which needs LO > 0")
    assert "Lg=1..4096:log, on a log scale" in user_error("sweep", str(path), "Lg=1..4096:lg")


def test_sweep_refuses_bad_ranges_in_one_line():
    assert "expected NAME=LO..HI" in user_error("sweep", "aab", "Lg=1-4")
    assert "no constant 'Q'" in user_error("sweep", "aab", "Q=1..4")
    assert "LO < HI" in user_error("sweep", "aab", "Lg=4..1")
    assert "--log" in user_error("sweep", "aab", "Lg=0..4", "--log")
    assert "--steps 1" in user_error("sweep", "aab", "Lg=0..4", "--steps", "1")
    assert "--steps 200" in user_error("sweep", "aab", "Lg=0..4", "Lg=1..2", "--steps", "200")
    assert "swept twice" in user_error("sweep", "aab", "Lg=0..4", "Lg=1..2")
    assert "3 ranges" in user_error("sweep", "aab", "Lg=0..4", "Lg=1..2", "Lg=1..3")


# ---------------------------------------------------------------- ablate


def test_ablate_entries_names_exactly_the_entries_that_can_go():
    model = load("aab")
    result = invoke("ablate", "aab", "--entries", "--json")
    assert result.exit_code == 0
    parts = {part["part"]: part for part in json.loads(result.stdout)["parts"] if part["kind"] == "entry"}
    brute = {}
    for path, axes in model.written.axes.items():  # remove each non-zero entry in turn and run the check
        values = locate(model.params, path)
        for index in zip(*np.nonzero(values)):
            params = copy.deepcopy(model.params)
            locate(params, path)[index] = 0
            label = ".".join([path, *(axis.labels[i] for axis, i in zip(axes, index))])
            brute[label] = check_ok(replace(model, params=params))[0]
    assert set(parts) == set(brute) and len(brute) == 26
    assert {name for name, ok in brute.items() if ok} == {name for name, part in parts.items() if not part["needed"]}
    assert any(brute.values()) and not all(brute.values())


def vestigial_document():
    """aab with a second head that writes only into a dim the unembedding never reads."""
    document = bundled_document()
    document.update(n_embd=16, n_head=2, dims=document["dims"] + [f"s{i}" for i in range(8)])
    attn = document["blocks"][0]["attn"]
    attn["c_attn"]["w"]["a"].update({"q8": 1, "k8": 2, "v8": 3})
    attn["c_proj"]["w"]["z8"] = {"s0": 5}
    return document


def test_ablate_says_a_vestigial_head_is_not_needed(tmp_path):
    path = tmp_path / "vestigial.json"
    path.write_text(json.dumps(vestigial_document()), encoding="utf-8")
    result = invoke("ablate", str(path), "--json")
    assert result.exit_code == 0, result.output
    parts = {part["part"]: part for part in json.loads(result.stdout)["parts"]}
    assert parts["blocks[0].attn.head 1"]["needed"] is False and parts["blocks[0].attn.head 1"]["parameters"] == 4
    assert parts["blocks[0].attn.head 0"]["needed"] is True
    text = " ".join(invoke("ablate", str(path)).stdout.split())
    assert "not needed" in text and "blocks[0].attn.head 1" in text


def test_the_parameters_not_needed_are_counted_once_when_a_head_and_its_entries_both_can_go(tmp_path):
    path = tmp_path / "vestigial.json"
    path.write_text(json.dumps(vestigial_document()), encoding="utf-8")
    data = json.loads(invoke("ablate", str(path), "--entries", "--json").stdout)
    spare = [part for part in data["parts"] if not part["needed"]]
    entries = {part["part"] for part in spare if part["kind"] == "entry"}
    head = "blocks[0].attn."
    assert {head + "c_attn.w.a.q8", head + "c_attn.w.a.k8", head + "c_attn.w.a.v8", head + "c_proj.w.z8.s0"} <= entries
    assert "blocks[0].attn.head 1" in {part["part"] for part in spare}  # its 4 parameters are 4 of those entries
    assert data["not_needed_parameters"] == len(entries) == 6 < sum(part["parameters"] for part in spare) == 10
    text = " ".join(invoke("ablate", str(path), "--entries").stdout.split())
    assert "7 parts not needed (6 distinct parameters in all;" in text


@pytest.mark.parametrize("columns", [60, 80, 100])
def test_ablates_tables_are_paged_on_a_narrow_terminal_never_cut(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    parts = json.loads(invoke("ablate", "aab", "--entries", "--json").stdout)["parts"]
    lines = invoke("ablate", "aab", "--entries").stdout.splitlines()
    assert "…" not in "".join(lines) and all(len(line) <= columns for line in lines)
    for part in parts:  # each part's row, on every page, ends with its figures in full
        rows = [line.split("│")[1:-1] for line in lines if line.startswith(f"│ {part['part']} ")]
        cells = [cell.strip() for row in rows for cell in row[1:]]
        assert str(part["parameters"]) in cells and str(part["failed"]) in cells
    headers = " ".join(line for line in lines if line.startswith("┃"))
    assert headers.count("cost") == 2 and headers.count("smallest lead") == 2  # the needed and the spare table
    for line in lines:  # a smallest lead is never parted from the context it was at, in a pipe or a terminal
        if line.startswith("┃"):
            cells = [cell.strip() for cell in line.split("┃")[1:-1]]
            assert ("smallest lead" in cells) == ("at" in cells), line
            if "at" in cells:
                assert cells.index("at") == cells.index("smallest lead") + 1, line


def test_a_reference_written_out_is_pointed_to_its_puzzle(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("puzzles", "solution", "add", "--spoil", "-o", "add.json").exit_code == 0
    for command in (("check", "add.json"), ("sweep", "add.json", "K=1..2"), ("ablate", "add.json")):
        assert user_error(*command).endswith("--puzzle add")
    assert invoke("check", "add.json", "--puzzle", "add").exit_code == 0  # and that is the way


def test_ablate_sorts_by_harm_and_mean_ablation_runs():
    result = invoke("ablate", ADD, "--puzzle", "add", "--json")
    parts = json.loads(result.stdout)["parts"]
    needed = [part for part in parts if part["needed"]]
    assert [part["broken"] for part in needed] == sorted((part["broken"] for part in needed), reverse=True)
    assert all(part["broken"] == 0 for part in parts if not part["needed"])
    mean = json.loads(invoke("ablate", ADD, "--puzzle", "add", "--mean", "--json").stdout)
    assert mean["mean"] is True and len(mean["parts"]) == len(parts)


def test_ablate_exits_1_when_the_model_itself_fails(tmp_path):
    document = bundled_document()
    document["blocks"][0]["attn"]["c_proj"].pop("b")
    path = tmp_path / "nobias.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert invoke("ablate", str(path)).exit_code == 1


# ---------------------------------------------------------------- spread of derived quantities


def test_spread_lead_on_add_has_the_checks_margin_as_its_minimum():
    model, puzzle = load(ADD), load_puzzle("add")
    margin = submit(puzzle, model).report.margin.value
    data = json.loads(invoke("spread", "lead", "-w", ADD, "--puzzle", "add",
                             "--json").stdout)
    assert data["grouped"] == 30000 and len(data["groups"]) == 10
    assert all(group["min"] >= margin for group in data["groups"])
    assert min(group["min"] for group in data["groups"]) == margin


def test_spread_of_a_logit_difference_is_the_difference_of_the_logits():
    model = load("aab")
    data = json.loads(invoke("spread", "logits:a-b", "--by", "length", "--json").stdout)
    for group in data["groups"]:
        length = int(group["group"])
        values = [np.subtract(*reference_forward(model.params, [int(t) for t in f"{i:0{length}b}"], 1)[0][-1])
                  for i in range(2**length)]
        assert group["count"] == 2**length
        assert group["min"] == pytest.approx(min(values)) and group["max"] == pytest.approx(max(values))
    ratio = json.loads(invoke("spread", "blocks.0.hook_resid_post:tok/pos", "-w", "multihead", "--every",
                              "--json").stdout)
    assert ratio["value"] == "blocks.0.hook_resid_post:tok/pos"


def test_spread_prints_its_axis_and_its_overlap_in_the_format_of_its_cells():
    sort = str(Path(ADD).with_name("sort.json"))
    data = json.loads(invoke("spread", "lead", "-w", sort, "--puzzle", "sort", "--json").stdout)
    low, high = data["bins"][0], data["bins"][-1]
    assert low != round(low) and high == 2  # the leads are 2 up to rounding: one end is whole, the other not
    text = " ".join(invoke("spread", "lead", "-w", sort, "--puzzle", "sort").stdout.split())
    assert "2.000 … 2.000" in text and "bins from 2.000 to 2.000" in text  # never 2.000 beside 2
    assert "Every lead is above 0: the right token leads in every judged context (the smallest, 2.000, where" in text


def test_a_ratio_says_its_missing_contexts_are_where_the_divisor_is_0():
    from itertools import product

    model = load("aab")
    zero = sum(1 for n in range(1, 6) for letters in product([0, 1], repeat=n)  # the logit of b is 0: no ratio
               if reference_forward(model.params, list(letters), 1)[0][-1][1] == 0)
    data = json.loads(invoke("spread", "logits:a/b", "--every", "--json").stdout)
    assert data["without_position"] == zero > 0 and data["grouped"] == 62 - zero
    text = " ".join(invoke("spread", "logits:a/b", "--every").stdout.split())
    assert f"{zero} contexts without the last position or that key, or where b is 0 (no ratio)" in text
    judged = json.loads(invoke("spread", "logits:a/b", "--json").stdout)  # by the target: each context counted once
    assert judged["grouped"] + judged["not_judged"] + judged["without_position"] == judged["total"] == 62


def test_spread_lead_needs_answers_and_the_last_position():
    assert "lead needs the right answers" in user_error("spread", "lead", "--every")
    assert "--position 2" in user_error("spread", "lead", "--position", "2")
    assert "--head" in user_error("spread", "lead", "--head", "0")


def test_mean_ablation_adds_the_mean_output_over_every_prefix_of_the_judged_contexts(tmp_path):
    from itertools import product

    from handwired.engine.trace import trace
    from handwired.judge.kinds.rules import DECIDED

    model = load("aab")
    rule = pattern_rule(model, "aab")
    judged = [text for n in range(1, 6) for text in map("".join, product("ab", repeat=n))
              if rule.judge(np.array([[model.vocab.index(c) for c in text]])).status[0] == DECIDED]
    prefixes = sorted({text[:n] for text in judged for n in range(1, len(text) + 1)})  # each distinct prefix once
    assert 0 < len(judged) < 62 and len(prefixes) < 62  # the contexts the rule does not judge are left out
    mean = np.mean([trace(model, text).record["blocks.0.hook_attn_out"][-1] for text in prefixes], axis=0)
    params = copy.deepcopy(model.params)
    params["blocks"][0]["attn"]["c_proj"]["w"][:] = 0
    params["blocks"][0]["attn"]["c_proj"]["b"] = mean
    ablated = replace(model, params=params)
    expected = check_ok(ablated)
    parts = {part["part"]: part for part in json.loads(invoke("ablate", "aab", "--mean", "--json").stdout)["parts"]}
    got = parts["blocks[0].attn"]
    assert (got["failed"] == 0, got["failed"]) == expected
    leads = []  # and its smallest lead is that of the model with this mean, context by context
    for text in judged:
        logits = reference_forward(ablated.params, [model.vocab.index(c) for c in text], 1)[0][-1]
        right = rule.judge(np.array([[model.vocab.index(c) for c in text]])).acceptable[0]
        leads.append(max(logits[right]) - max(logits[~right]))
    assert got["smallest_lead"] == pytest.approx(min(leads), rel=1e-9)
    zeroed = {part["part"]: part for part in json.loads(invoke("ablate", "aab", "--json").stdout)["parts"]}
    assert zeroed["blocks[0].attn"]["smallest_lead"] != got["smallest_lead"]  # the mean is not zero here


def counted_walks(monkeypatch) -> list[int]:
    """The batches each walk of variants yields, one entry per walk, as the workbench walks them."""
    from handwired.judge.workbench import variants as workbench

    walks: list[int] = []
    original = workbench.variant_walk

    def walk(*args, **kwargs):
        walks.append(0)
        for batch in original(*args, **kwargs):
            walks[-1] += 1
            yield batch

    monkeypatch.setattr(workbench, "variant_walk", walk)
    return walks


def test_ctrl_c_stops_a_sweep_between_two_batches_of_its_walk(monkeypatch):
    from contextlib import contextmanager

    import handwired.cli.sweep as sweep_cli

    asked, setup = [], [9]

    @contextmanager
    def interrupted(show):  # as if Ctrl-C came once the values were set up, during the walk's first batch
        yield (lambda done, total: None), (lambda: asked.append(1) or len(asked) > setup[0])

    monkeypatch.setattr(sweep_cli, "progress_and_stop", interrupted)
    walks = counted_walks(monkeypatch)
    result = invoke("sweep", "aab", "Lg=0..4", "--steps", "9")
    assert result.exit_code == 130
    assert walks == [1]  # the walk stopped after its first batch: the rest was never evaluated
    assert result.stderr.strip() == "stopped by Ctrl-C with 0 of the 9 values judged; nothing is shown"
    asked[:], setup[0], walks[:] = [], 1, []  # aab's one block: its attention and its head, set up at once
    assert invoke("ablate", "aab").stderr.strip() == "stopped by Ctrl-C with 0 of the 2 parts judged; nothing is shown"
    assert walks == [1]


def test_ctrl_c_while_a_sweep_sets_up_its_values_stops_it_there(monkeypatch):
    """A real SIGINT, sent while the first value is set up: the sweep stops before the second, with nothing
    walked."""
    import os
    import signal

    from handwired.judge.workbench import sweep as sweeping

    made = []
    original = sweeping.with_constants

    def with_constants(model, values):
        made.append(values)
        if len(made) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, caught by the sweep's handler
        return original(model, values)

    monkeypatch.setattr(sweeping, "with_constants", with_constants)
    walks = counted_walks(monkeypatch)
    result = invoke("sweep", "aab", "Lg=0..4", "--steps", "9")
    assert result.exit_code == 130 and "Traceback" not in result.output
    assert len(made) == 1 and walks == []
    assert result.stderr.strip() == "stopped by Ctrl-C with 0 of the 9 values judged; nothing is shown"


def test_ctrl_c_during_a_mean_ablations_first_walk_stops_it_there(monkeypatch):
    import os
    import signal

    from handwired.judge.workbench import ablate as ablating

    batches = []
    original = ablating.recorded_walk

    def recorded_walk(*args):
        for batch in original(*args):
            batches.append(1)
            os.kill(os.getpid(), signal.SIGINT)
            yield batch

    monkeypatch.setattr(ablating, "recorded_walk", recorded_walk)
    walks = counted_walks(monkeypatch)
    result = invoke("ablate", ADD, "--puzzle", "add", "--mean")
    assert result.exit_code == 130 and "Traceback" not in result.output
    assert batches == [1] and walks == []  # stopped after the means' first batch; no part was judged
    assert result.stderr.strip() == "stopped by Ctrl-C with 0 of the 16 parts judged; nothing is shown"


def test_too_many_contexts_are_refused_before_any_work(tmp_path, monkeypatch):
    from handwired.judge.workbench import variants as workbench

    document = bundled_document()
    document.update(n_ctx=40, wpe={})
    path = tmp_path / "long.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    monkeypatch.setattr(workbench, "variant_walk", lambda *args: pytest.fail("evaluated"))
    for command in (("sweep", str(path), "Lg=1..2"), ("ablate", str(path))):
        line = user_error(*command)
        assert "2,199,023,255,550 contexts" in line and "with --puzzle" in line


def test_a_sweep_estimated_too_long_is_refused_with_the_estimate(monkeypatch):
    from handwired.judge.workbench import variants as workbench

    monkeypatch.setattr(workbench, "variant_walk", lambda *args: pytest.fail("evaluated"))
    # 10,000 values, the most a heatmap has: minutes, within the default ten, so the test allows one
    line = user_error("sweep", ADD, "K=1..2", "G=1..2", "--steps", "100", "--puzzle", "add", "--max-seconds", "60")
    assert "--steps 100: 10,000 variants judged on 30,000 contexts" in line and "minutes" in line
    assert "ask for fewer" in line and "more than the 60 seconds" in line


def test_ablating_ln_f_takes_it_out(tmp_path):
    document = bundled_document()
    document["ln_f"] = {"g": [1, 1, 1, 1, 1, 1, 2, 1], "b": [0, 0, 0, 0, 0, 0.5, 0, 0]}
    path = tmp_path / "lnf.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    parts = {part["part"]: part for part in json.loads(invoke("ablate", str(path), "--json").stdout)["parts"]}
    without = dict(document)
    del without["ln_f"]
    ok, failed = check_ok(loaded(without, tmp_path / "without.json"))
    assert parts["ln_f"]["parameters"] == 9 and parts["ln_f"]["failed"] == failed
    assert parts["ln_f"]["needed"] is (not ok and check_ok(loaded(document, tmp_path / "with.json"))[0])


@pytest.mark.parametrize("args", [("Lg=0..5e-324", "--steps", "2"), ("Lg=0..4", "--precision", "5e-324"),
                                  ("Lg=1e-300..4:log", "--precision", "5e-324"), ("Lg=-1e308..1e308",)])
def test_a_sweep_at_float64s_edges_is_judged_not_an_internal_error(args):
    # a grid step or precision below the spacing of floats bisects down to that spacing and stops; a range whose
    # span, or whose leads, are beyond float64 is laid out and plotted from its ends
    result = invoke("sweep", "aab", *args, "--json")
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.stdout)
    values = [point["values"]["Lg"] for point in data["points"]]
    assert values[0] == float(args[0].split("=")[1].split("..")[0]) and all(np.isfinite(values))
    assert values == sorted(values)
    shown = invoke("sweep", "aab", *args)  # and drawn
    assert shown.exit_code in (0, 1) and "internal error" not in shown.output


def test_a_precision_of_zero_is_refused_before_the_sweep():
    assert user_error("sweep", "aab", "Lg=0..4", "--precision", "0") == (
        "error: --precision 0.0: expected a positive number")
