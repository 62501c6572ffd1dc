"""Heavy work estimated first: a check, a view or a completion that would take far too long is refused in
one line with the estimate and what narrows it; numbers too large to read are one line with their path."""

import json
import re

import pytest
from forbidden import forbid
from test_cli import invoke, user_error

from handwired.engine.cost import forward_seconds, stream_seconds
from handwired.engine.forward import forward
from handwired.engine.trace import trace
from handwired.judge.checking.contexts import duration, how_many
from handwired.judge.checking.report import run
from handwired.views import watch as watching
from handwired.weightfile import load

ALLOW_TIME = r" \(or allow it: --max-seconds \d+\)$"  # twice the estimate: how to let the work go on

BIG_INTEGER = "9" * 5000  # Python refuses to read an integer of more than 4,300 digits


@pytest.fixture
def sparse_giant(tmp_path):
    """A valid 4.3 KB sparse model: n_ctx 4096, n_embd 1024 and a 4,096-token example."""
    doc = {"format": "handwired/1", "vocab": ["a", "b"], "n_ctx": 4096, "n_embd": 1024, "target": "ab",
           "example": "ab" * 2048, "wte": {"a": {"0": 1}}, "wpe": {"0": {"1": 1}},
           "blocks": [{"attn": {"c_attn": {"w": {"0": {"q0": 1}}}, "c_proj": {"w": {"z0": {"0": 1}}}}}]}
    path = tmp_path / "giant.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture
def long_context(tmp_path, aab_doc):
    """The aab model with n_ctx 1024: 2^1 + … + 2^1024 contexts, a 309-digit count."""
    aab_doc["n_ctx"] = 1024
    aab_doc["wpe"] += [[0] * 8] * (1024 - len(aab_doc["wpe"]))
    path = tmp_path / "long.json"
    path.write_text(json.dumps(aab_doc), encoding="utf-8")
    return path


def test_counts_and_durations_beyond_float_range_are_printed_short():
    assert how_many(999_999) == "999,999"
    assert how_many(2**1025 - 2) == "about 3.6e+308"  # 2^1025 = 3.59e308, worked out by hand
    # 10000·log10(3) = 4771.2125 and 10^0.2125 = 1.63: more digits (4,772) than Python will print
    assert how_many(3**10000) == "about 1.6e+4771"
    assert duration(float("inf")) == "a billion hours or more"
    assert duration(7200) == "2 hours" and duration(89) == "89 seconds"


def test_an_exhaustive_check_of_a_309_digit_count_is_refused_not_overflowed(long_context):
    assert user_error("check", str(long_context), "--exhaustive") == (
        "error: every context: 2^1 + … + 2^1024 = about 3.6e+308 contexts, about a billion hours or more of checking "
        "for this model, more than the 100,000,000 handwired will enumerate; check a random sample instead, "
        "e.g. --sample 1000000 --seed 0")


@pytest.mark.parametrize(
    "args,message",
    [(["--sample", str(10**20)], "error: --sample 100,000,000,000,000,000,000: about a billion hours or more of "
                                 "checking for this model, more than the 10 minutes handwired will spend on one; "
                                 "ask for fewer contexts"),
     (["--sample", str(10**12)], "error: --sample 1,000,000,000,000: about "),
     (["--length", str(10**9)], "error: --length 1,000,000,000: about ")],
)
def test_a_sample_or_stream_that_would_take_hours_is_refused_with_its_estimate(args, message, monkeypatch):
    forbid(monkeypatch, run, forward)  # refused while planning: no batch is drawn or run
    line = user_error("check", *args)
    assert line.startswith(message), line


def test_the_estimates_grow_as_the_work_does():
    """Independent of the constants: twice the contexts is twice the time; a longer window costs more."""
    model = load("aab")
    assert forward_seconds(model, 2000, 5) == pytest.approx(2 * forward_seconds(model, 1000, 5))
    assert forward_seconds(model, 1, 5, last_only=False) > forward_seconds(model, 1, 5)
    assert stream_seconds(model, 2 * 10**8, 3, False, 65536) > 1.9 * stream_seconds(model, 10**8, 3, False, 65536)


def test_explain_of_a_huge_valid_model_is_refused_before_its_trace_with_the_flags_that_narrow_it(sparse_giant,
                                                                                                monkeypatch):
    forbid(monkeypatch, trace, forward)
    line = user_error("explain", "-w", str(sparse_giant))
    assert line.startswith("error: 4,096 tokens at n_embd 1024: about ")
    assert re.search(re.escape("to explain, more than the 30 seconds handwired spends on a view; narrow it with "
                               "--step, --block or --head, or give a shorter context") + ALLOW_TIME, line), line


def test_explain_narrowed_to_one_step_of_a_short_context_still_works(sparse_giant):
    result = invoke("explain", "abab", "-w", str(sparse_giant), "--step", "embed")
    assert result.exit_code == 0, result.output
    assert "(4 tokens)" in result.output


def test_watch_shows_the_refusal_instead_of_freezing(sparse_giant, monkeypatch):
    calls = forbid(monkeypatch, trace)  # the file's own check runs; the explain view is refused before its trace
    snapshot = watching.load_snapshot(sparse_giant)
    assert calls == []
    assert snapshot.model is None and len(snapshot.errors) == 1
    assert snapshot.errors[0].startswith("4,096 tokens at n_embd 1024: about ")


def test_complete_estimates_first(sparse_giant):
    line = user_error("complete", "ab", "-w", str(sparse_giant), "-n", "1000")
    assert line.startswith("error: -n 1,000: about ") and re.search(re.escape(
        "of generating for this model, more than the 30 seconds handwired will spend on it; ask for fewer tokens")
        + ALLOW_TIME, line), line


def test_attend_estimates_first(monkeypatch):
    from handwired.engine.attend import attend

    forbid(monkeypatch, attend)  # neither table is computed
    six_thousand = ",".join(str(i % 7) for i in range(6000))
    line = user_error("attend", "--x", six_thousand)
    assert line.startswith("error: 6,000 queries × 6,000 keys (width 1): about ")
    assert re.search(re.escape("to compute and show, more than the 30 seconds handwired spends on a view; give fewer "
                               "rows") + ALLOW_TIME, line), line
    x = ";".join([",".join(["1"] * 600)] * 600)
    assert user_error("attend", "--x", x, "--score", "gaussian", "--json") == (
        "error: 600 queries × 600 keys (width 600): 1.6 GB of differences for the gaussian score, more than the "
        "381 MB handwired will use; give fewer rows")  # 600³ float64 = 1.728e9 bytes = 1.6 GiB


# ---------------------------------------------------------------- numbers too large to read


def replace_once(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_5000_digit_integer_in_a_weight_file_is_one_line_with_its_path(tmp_path, write_json, aab_doc):
    path = write_json(aab_doc)
    replace_once(path, '"n_ctx": 5', f'"n_ctx": {BIG_INTEGER}')
    assert user_error("predict", "aab", "-w", str(path)) == (
        f"error: {path}: n_ctx: expected a whole number ≥ 1; found the number 999999…(5,000 digits)")
    path = write_json(aab_doc)
    replace_once(path, '"constants": {"Lg": 1024', f'"constants": {{"Lg": -{BIG_INTEGER}')
    line = user_error("predict", "aab", "-w", str(path))
    assert line.startswith(f"error: {path}: constants.Lg: expected a finite number; found ")


def test_a_5000_digit_integer_in_a_statement_an_import_or_attend_is_one_line(tmp_path):
    statement = tmp_path / "puzzle.json"
    from handwired.judge.game.catalogue import bundled_puzzles

    text = next(iter(bundled_puzzles().values())).read_text(encoding="utf-8")
    statement.write_text(text.replace('"n_ctx": ', f'"n_ctx": {BIG_INTEGER}0', 1), encoding="utf-8")
    assert BIG_INTEGER in statement.read_text(encoding="utf-8")
    line = user_error("puzzles", "show", str(statement))
    assert line.startswith(f"error: {statement}") and "n_ctx" in line and len(line) < 300
    folder = tmp_path / "export"
    assert invoke("export", "aab", "-o", str(folder)).exit_code == 0
    replace_once(folder / "config.json", '"d_model": 8', f'"d_model": {BIG_INTEGER}')
    line = user_error("import", str(folder), "-o", str(tmp_path / "back.json"))
    assert line.startswith("error: ") and "d_model" in line and len(line) < 300
    assert user_error("attend", "--q", f"[[{BIG_INTEGER}]]", "--k", "1", "--v", "1") == (
        "error: --q[0][0]: the number 999999…(5,000 digits) is not a finite number")


@pytest.mark.parametrize("expression", ["(" * 300 + "1" + ")" * 300, "-" * 999 + "1", "sqrt(" * 150 + "1" + ")" * 150])
def test_deeply_nested_expressions_are_one_line_naming_the_entry(tmp_path, write_json, aab_doc, expression):
    aab_doc["constants"]["Deep"] = expression
    path = write_json(aab_doc)
    line = user_error("predict", "aab", "-w", str(path))
    assert line.startswith(f"error: {path}: constants.Deep: '{expression[:30]}…': "), line
    assert "nested more than 100 deep" in line or "at most 1,000" in line


def test_drawn_cells_count_what_folding_leaves_by_hand():
    import numpy as np

    from handwired.views.cost import drawn_cells
    from handwired.views.figures import Matrix, Step

    values = np.zeros((4, 5))
    values[0, 1], values[2, 3], values[2, 4] = 1, 2, 3  # rows 0 and 2, columns 1, 3 and 4 are not all zero
    labels = tuple("abcde")
    plain = Matrix("m", "h", values, labels[:4], labels, "r", "c")
    square = Matrix("a", "h", values, labels[:4], labels, "r", "c", future=np.zeros((4, 5), dtype=bool))
    step = Step("k", "t", "f", "s", "n", (plain, square))
    assert drawn_cells([step], show_all=False) == 2 * 3 + 20  # attention tables never fold
    assert drawn_cells([step], show_all=True) == 20 + 20


def test_explain_with_everything_shown_is_refused_before_drawing(sparse_giant, monkeypatch):
    from handwired.views.matrices import step_panel

    forbid(monkeypatch, step_panel)  # the trace runs (256 tokens are cheap); no step is drawn
    line = user_error("explain", "ab" * 128, "-w", str(sparse_giant), "--all")
    assert re.fullmatch(r"error: \d+ steps and [\d,]+ numbers to draw: about \d+ minutes to explain, more than "
                        r"the 30 seconds handwired spends on a view; narrow it with --step, --block or --head, or give "
                        r"a shorter context" + ALLOW_TIME, line), line


def test_weights_show_all_of_a_huge_valid_model_is_refused_before_any_table_is_made(sparse_giant, monkeypatch):
    from handwired.views.weights import weights_view

    forbid(monkeypatch, weights_view)
    line = user_error("weights", "show", str(sparse_giant), "--all")
    cells = 2 * 1024 + 4096 * 1024 + 1024 * 3072 + 3072 + 1024 * 1024 + 1024  # wte, wpe, c_attn w b, c_proj w b
    assert line.startswith(f"error: {cells:,} numbers to draw: about ")
    assert re.search(re.escape("more than the 30 seconds handwired spends on a view; without --all the rows and "
                               "columns of zeros fold away, or --sparse prints only the non-zero entries")
                     + ALLOW_TIME, line), line


# ---------------------------------------------------------------- memory, estimated before any array exists


@pytest.fixture
def sparse_model(tmp_path):
    """A valid sparse model of a few hundred bytes with the shape asked for: n_head heads in each of `blocks` blocks."""
    def make(n_ctx: int, n_embd: int, n_head: int, blocks: int):
        block = {"attn": {"c_attn": {"w": {"0": {"q0": 1}}}, "c_proj": {"w": {"z0": {"0": 1}}}}}
        doc = {"format": "handwired/1", "vocab": ["a", "b"], "n_ctx": n_ctx, "n_embd": n_embd, "n_head": n_head,
               "target": "ab", "wte": {"a": {"0": 1}}, "wpe": {"0": {"1": 1}}, "blocks": [block] * blocks}
        path = tmp_path / f"sparse-{n_ctx}-{n_embd}-{n_head}-{blocks}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        return path

    return make


def test_predict_on_eight_heads_of_4096_tokens_is_refused_for_memory_before_any_array(sparse_model, monkeypatch):
    path = sparse_model(4096, 1024, 8, 1)
    forbid(monkeypatch, forward)
    # By hand, in MiB: scores, masked scores and pattern, 3 × 8 heads × 4096² × 8 bytes = 3,072; 14 [4096, 1024]
    # activations = 448; the causal mask, 4096² × (8 + 1) bytes = 144; logits and probabilities 0.125:
    # 3,664 MiB = 3.58 GiB.
    assert user_error("predict", "ab" * 2048, "-w", str(path)) == (
        "error: 4,096 tokens at n_embd 1024, 8 heads, 1 block: about 3.6 GB of attention scores and activations at "
        "the peak, more than the 2 GB handwired will use; give a shorter context (or allow it: --max-memory 4.5G)")
    # (3.58 GiB and a quarter more, rounded up to two digits)
    assert user_error("predict", "ab" * 2048, "-w", str(path), "--every-position", "--json").startswith(
        "error: 4,096 tokens at n_embd 1024, 8 heads, 1 block: about 3.6 GB")


def test_predict_of_a_shorter_text_on_the_same_model_is_not_refused(sparse_model):
    result = invoke("predict", "ab" * 512, "-w", str(sparse_model(4096, 1024, 8, 1)), "--every-position")
    assert result.exit_code == 0, result.output
    assert "prediction at every position" in result.output


def test_predict_estimates_its_time_first(sparse_giant, monkeypatch):
    """Under the limits on files, predict's pass takes seconds and memory binds first; the time estimate
    is shown by lowering the limit."""
    from handwired.views import cost

    monkeypatch.setattr(cost, "MAX_VIEW_SECONDS", 1.0)
    assert user_error("predict", "ab" * 2048, "-w", str(sparse_giant), "--every-position") == (
        "error: 4,096 tokens at n_embd 1024: about 7 seconds to predict, more than the 1 second handwired spends on "
        "a view; give a shorter context (or allow it: --max-seconds 15)")  # twice the estimate, rounded up
    assert invoke("predict", "abab", "-w", str(sparse_giant)).exit_code == 0


@pytest.mark.parametrize("command", [["diff", "{path}", "{path}"], ["check", "{path}", "--no-proof"]])
def test_a_sample_whose_batches_would_not_fit_in_memory_is_refused_with_the_figure(sparse_model, monkeypatch,
                                                                                    command):
    from handwired.engine import batch

    monkeypatch.setattr(batch, "WORKERS", 2)  # the figure counts the chunks run side by side
    path = str(sparse_model(4096, 512, 8, 2))
    forbid(monkeypatch, batch.next_logits, batch.next_logits_distinct, forward)  # refused as drawn, before a batch
    # Seed 0 draws 4 of the 10 contexts at 4,096 tokens: 2 chunks of 2 side by side. By hand, in MiB, a chunk:
    # scores 2 × 8 heads × 4096² × 8 bytes = 2,048, 6 activations of [2, 4096, 512] = 192, the mask 144: 2,384;
    # two of them and the [2, 4096, 4 × 512] lookup table (128): 4,896 MiB = 4.78 GiB.
    assert user_error(*[part.format(path=path) for part in command], "--sample", "10") == (
        "error: --sample 10 of up to 4,096 tokens at n_embd 512, 8 heads: about 4.8 GB of attention scores and "
        "activations at the peak, more than the 2 GB handwired will use; ask for fewer contexts (or allow it: "
        "--max-memory 6G)")


def test_a_proved_samples_memory_is_its_certified_walks_with_its_tables(sparse_model):
    """A proved sample is the certified walk of its contexts' trie, whose block 0 table of every token at every
    position is made from several arrays of the embeddings' size: the estimate the refusal names holds that making's
    peak (tracemalloc's), and is within 2x of the whole check's."""
    import tracemalloc

    from handwired.engine.arithmetic import certified

    path = str(sparse_model(512, 256, 4, 2))
    refused = user_error("check", path, "--sample", "4", "--max-memory", "1K")
    found = re.search(r"about ([\d.]+) MB of the certified walk's tables and arrays at the peak", refused)
    assert found, refused
    estimate = float(found.group(1)) * 2**20
    model = load(path)
    tracemalloc.start()
    try:
        certified.prepare(model)
        making = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        assert invoke("check", path, "--sample", "4", "--json").exit_code in (0, 1)
        whole = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert making <= estimate and whole / 2 <= estimate <= 2 * whole, (making, whole, estimate)


def test_a_sample_of_a_smaller_model_is_not_refused(sparse_model):
    path = str(sparse_model(512, 64, 8, 2))
    result = invoke("diff", path, path, "--sample", "10")
    assert result.exit_code == 0, result.output
    assert "no context's prediction or margin changed (10 compared)" in result.output


def test_the_memory_estimates_match_what_numpy_allocates(sparse_model):
    """Against tracemalloc, which counts numpy's buffers: the estimates are near the measured peak, above it."""
    import tracemalloc

    import numpy as np

    from handwired.engine.batch import next_logits
    from handwired.engine.cost import pass_bytes as peak_bytes
    from handwired.engine.cost import trace_bytes
    from handwired.engine.trace import trace

    model = load(str(sparse_model(1024, 64, 4, 2)))
    tracemalloc.start()
    try:
        trace(model, "ab" * 512)
        traced = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        next_logits(model, np.zeros((8, 1024), dtype=np.uint8))  # one chunk of 8 contexts, and the lookup table
        batched = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert traced <= trace_bytes(model, 1024) <= 1.3 * traced
    assert batched <= peak_bytes(model, 8, 1024) <= 1.3 * batched


def test_diff_of_two_huge_valid_models_compares_their_8_million_weights_as_arrays(sparse_giant, tmp_path,
                                                                                   monkeypatch):
    """Entry by entry, 8.4 million labels took 35 s and 5 GB before any context was compared."""
    doc = json.loads(sparse_giant.read_text(encoding="utf-8"))
    doc["wte"]["b"] = {"3": -1}
    doc["blocks"][0]["attn"]["c_proj"]["w"]["z0"]["0"] = 2
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc), encoding="utf-8")
    from handwired.judge.workbench import compare

    forbid(monkeypatch, compare._entries)  # the entry-by-entry walk, which labelled every one of them
    result = invoke("diff", str(sparse_giant), str(edited), "--sample", "1", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["weights"] == [
        {"label": "wte.b.d3", "old": 0.0, "new": -1.0},
        {"label": "blocks[0].attn.c_proj.w.z0.d0", "old": 1.0, "new": 2.0},
    ]


@pytest.mark.parametrize("layer_norm,mlp", [(True, True), (True, False), (False, True)])
def test_a_recorded_pass_with_layernorm_and_mlps_is_estimated_above_what_it_allocates(layer_norm, mlp):
    """A LayerNorm records two hooks (before and after its gain and bias): counted with the rest."""
    import tracemalloc

    import numpy as np
    from reference import params_to_document, random_params

    from handwired.engine.cost import trace_bytes
    from handwired.engine.trace import trace
    from handwired.weightfile import parse

    params = random_params(np.random.default_rng(1), n_vocab=3, n_ctx=64, n_embd=256, n_layer=2, n_hidden=64,
                           layer_norm=layer_norm, mlp=mlp)
    model, _ = parse(params_to_document(params, 4, "abc", 64), source="random")
    for length in (16, 64):
        tracemalloc.start()
        try:
            trace(model, "ab" * (length // 2))
            traced = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert traced <= trace_bytes(model, length) <= 1.5 * traced, (length, traced, trace_bytes(model, length))
