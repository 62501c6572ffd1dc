"""Limits before allocation: a small file that declares a huge model is refused before any weight is read,
in little memory."""

import importlib
import json
import tracemalloc

import pytest
from forbidden import forbid
from typer.testing import CliRunner

from handwired.cli import app
from handwired.weightfile import parse, read_json
from handwired.weightfile.sizing import parameter_count

parsing = importlib.import_module("handwired.weightfile.parse")  # the module, which the package's parse() hides

runner = CliRunner()
EMPTY_LINEAR = {"w": {}}


def tiny_huge_file(tmp_path):
    """The 316-byte file: an empty vocab, n_embd 4096 and four blocks of empty sparse matrices."""
    doc = {"format": "handwired/1", "vocab": [], "n_ctx": 1, "n_embd": 4096, "wte": {}, "wpe": {},
           "blocks": [{"attn": {"c_attn": EMPTY_LINEAR, "c_proj": EMPTY_LINEAR}}] * 4}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert path.stat().st_size == 316
    return path


def many_wide_mlps_file(tmp_path):
    """n_embd 1 and 20,000 blocks, each with an MLP of 4,096 hidden units (2.6 MB)."""
    block = {"attn": {"c_attn": {"w": [[0, 0, 0]]}, "c_proj": {"w": [[0]]}},
             "mlp": {"hidden": 4096, "c_fc": EMPTY_LINEAR, "c_proj": EMPTY_LINEAR}}
    doc = {"format": "handwired/1", "vocab": ["a"], "n_ctx": 1, "n_embd": 1, "wte": [[0]], "wpe": [[0]],
           "blocks": [block] * 20_000}
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "make,expected",
    [(tiny_huge_file, "268,505,088 weights"), (many_wide_mlps_file, "20,000 blocks")],
)
def test_a_small_file_declaring_a_huge_model_is_refused_before_its_weights_are_read_in_200_mb(
        tmp_path, monkeypatch, make, expected):
    path = make(tmp_path)
    forbid(monkeypatch, parsing._axes, parsing._params)  # no axis labelled, no matrix read or made
    tracemalloc.start()
    try:
        model, problems = parse(read_json(path), str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert model is None and len(problems) == 1
    assert expected in problems[0] and "more than handwired supports" in problems[0]
    assert peak < 200 * 2**20, f"{peak / 2**20:.0f} MB"


def test_the_figures_count_every_block_and_every_mlp_width_by_hand():
    # n_vocab 0, n_ctx 1, n_embd 4096: wpe 1×4096; each block c_attn 4096×12288 + 12288, c_proj 4096×4096 + 4096.
    assert parameter_count(0, 1, 4096, 4) == 4096 + 4 * (4096 * 12288 + 12288 + 4096 * 4096 + 4096)
    # n_embd 1: wte and wpe 1 each; c_attn 1×3 + 3, c_proj 1 + 1; an MLP of 4096: c_fc 4096 + 4096, c_proj 4096 + 1.
    assert parameter_count(1, 1, 1, 20_000, [4096] * 20_000) == 2 + 20_000 * (8 + 3 * 4096 + 1)


def test_the_cli_refuses_the_316_byte_file_in_one_line_with_the_figure(tmp_path):
    path = tiny_huge_file(tmp_path)
    result = runner.invoke(app, ["predict", "a", "-w", str(path)])
    assert result.exit_code == 2
    assert result.stderr.strip() == (f"error: {path}: 268,505,088 weights (vocab 0, n_ctx 1, n_embd 4,096, 4 blocks): "
                                     "more than handwired supports (10,000,000)")


def test_mlp_widths_declared_by_labels_or_dense_rows_are_counted(aab_doc):
    dense_row = {"c_fc": {"w": [[0] * 4096] * 8}, "c_proj": {"w": {}}}
    labelled = {"hidden": [f"h{i}" for i in range(4096)], "c_fc": EMPTY_LINEAR, "c_proj": EMPTY_LINEAR}
    for mlp in (dense_row, labelled):
        aab_doc["blocks"] = [{**aab_doc["blocks"][0], "mlp": mlp}] * 200
        _, problems = parse(aab_doc)
        assert len(problems) == 1 and "200 blocks, MLPs of 819,200 hidden units in all" in problems[0], problems


class Counted(str):
    """A label that counts how often it is compared for equality with another."""

    comparisons = 0
    __hash__ = str.__hash__

    def __eq__(self, other):
        Counted.comparisons += 1
        return str.__eq__(self, other)


@pytest.mark.parametrize("labels", [[f"h{i}" for i in range(3000)] + ["h0"], [chr(0x4E00 + i) for i in range(3000)]
                                    + [chr(0x4E00)]], ids=["hidden units", "vocab"])
def test_labels_are_checked_for_repeats_without_comparing_each_with_all_before_it(aab_doc, monkeypatch, labels):
    """A list of hidden-unit labels or vocab tokens is checked for repeats with a set, not by rescanning: a
    million labels take a second, not hours. Rescanning would compare 3,000 labels about 4.5 million times."""
    labels = [Counted(label) for label in labels]
    if labels[0] == "h0":
        aab_doc["blocks"][0]["mlp"] = {"hidden": labels, "c_fc": EMPTY_LINEAR, "c_proj": EMPTY_LINEAR}
        aab_doc["n_embd"] = 1  # keeps the declared size small, so the labels are what is checked
    else:
        aab_doc["vocab"] = labels
    monkeypatch.setattr(Counted, "comparisons", 0)
    _, problems = parse(aab_doc)
    assert Counted.comparisons <= len(labels), Counted.comparisons  # hash collisions aside, only the repeat
    path = "blocks[0].mlp.hidden" if labels[0] == "h0" else "vocab"
    assert f"{path}[3000]: {str(labels[0])!r} appears twice" in problems, problems


def test_twenty_thousand_narrow_mlps_are_counted_too(tmp_path):
    """Under the block limit, the MLP widths alone can break the weight limit: 4,000 blocks of 4,096 units."""
    path = many_wide_mlps_file(tmp_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["blocks"] = doc["blocks"][:4000]
    _, problems = parse(doc)
    expected = parameter_count(1, 1, 1, 4000, [4096] * 4000)
    assert expected == 2 + 4000 * (8 + 3 * 4096 + 1)  # by hand: see test_the_figures_count_every_block…
    assert problems == [f"{expected:,} weights (vocab 1, n_ctx 1, n_embd 1, 4,000 blocks, MLPs of 16,384,000 hidden "
                        "units in all): more than handwired supports (10,000,000)"]
