"""The command line, through typer's CliRunner: output content, exit codes, and every kind of bad input."""

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from handwired.cli import COMMANDS, app

runner = CliRunner()


def invoke(*args):
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    return result


def user_error(*args):
    """A command that must fail on bad input: exit code 2 and one line on stderr."""
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# ---------------------------------------------------------------- predict


def test_predict_shows_next_token_and_probabilities():
    result = invoke("predict", "aabaa")
    assert result.exit_code == 0
    assert "aabaa → b" in result.stdout
    # p(b) = 1 / (1 + e^-1023) is exactly 1.0 in float64, p(a) exactly 0
    # gap: each logit minus the best other one's (b leads a by 1023)
    assert re.search(r"│ a\s+│\s+1 │\s+-1023 │\s+0 │", result.stdout)
    assert re.search(r"│ b\s+│\s+1024 │\s+\+1023 │\s+1 │ █+", result.stdout)
    assert "gap: its logit minus the best other token's" in result.stdout


def test_predict_all_positions():
    result = invoke("predict", "aabaa", "--every-position")
    rows = [line for line in result.stdout.splitlines() if line.startswith("│")]
    predicted = [row.split("│")[4].strip() for row in rows[:5]]
    assert predicted == ["b", "b", "a", "a", "b"]
    from reference import reference_forward

    from handwired.weightfile import load

    logits, _ = reference_forward(load("aab").params, [0, 0, 1, 0, 0], 1)
    leads = [f"{abs(row[1] - row[0]):+g}" for row in logits]  # two tokens: the lead is the difference
    assert [row.split("│")[6].strip() for row in rows[:5]] == leads == ["+1023"] * 3 + ["+1025", "+1023"]
    assert "lead: the predicted token's logit minus the best other token's" in result.stdout


def test_predict_json_is_machine_readable():
    data = json.loads(invoke("predict", "aabaa", "--json", "--every-position").stdout)
    assert data["prediction"] == "b"
    assert data["window"] == "aabaa" and data["truncated"] is False
    assert data["tokens"] == [0, 0, 1, 0, 0]
    assert data["logits"] == [1.0, 1024.0]
    assert [p["prediction"] for p in data["positions"]] == ["b", "b", "a", "a", "b"]


def test_long_context_is_cut_to_n_ctx_and_says_so():
    result = invoke("predict", "aabaabaab")
    assert "the model sees only the last n_ctx = 5: 'abaab'" in result.stdout
    data = json.loads(invoke("predict", "aabaabaab", "--json").stdout)
    assert data["window"] == "abaab" and data["truncated"] is True and data["prediction"] == "a"


def test_tie_is_flagged(tmp_path):
    path = tmp_path / "zero.json"
    invoke("weights", "new", "-o", str(path))
    result = invoke("predict", "ab", "--weights", str(path))
    assert "tied with b" in result.stdout
    assert json.loads(invoke("predict", "ab", "-w", str(path), "--json").stdout)["tied"] is True


# ---------------------------------------------------------------- explain


def test_explain_shows_every_step_with_formula_shape_and_hook():
    out = invoke("explain").stdout
    for text in ("[embed]", "[qkv]", "[scores]", "[mask]", "[pattern]", "[z]", "[proj]", "[logits]", "[probs]",
                 "x = wte[tokens] + wpe[positions]", "softmax(Q · Kᵀ / √d_head + M)", "z = pattern · V",
                 "blocks.0.attn.hook_pattern", "blocks.0.attn.hook_q", "query (destination) position",
                 "key (source) position", "362.039", "−∞", "Predicted: b b a a b.", "p0", "out"):
        assert text in out, text
    assert "context aabaa" in out


def test_explain_attention_step_is_qkv_to_z_then_the_prediction_at_each_position():
    out = invoke("explain", "aab", "--step", "attention").stdout
    shown = re.findall(r"─ \[(\w+)\]", out)
    assert shown == ["qkv", "scores", "mask", "pattern", "z", "prediction"]
    assert "context aab " in out
    # aab at positions 0, 1, 2 predicts b, b, a, each with probability exactly 1 (a margin of 1023 logits)
    rows = re.findall(r"│ (\d:\w)\s+│ (\w)\s+│\s+(\S+) │", out)
    assert rows == [("0:a", "b", "1"), ("1:a", "b", "1"), ("2:b", "a", "1")]


def test_explain_multi_head_model_shows_each_head(tmp_path):
    path = tmp_path / "two.json"
    invoke("weights", "new", "-o", str(path), "--n-embd", "4", "--n-head", "2")
    out = invoke("explain", "abab", "-w", str(path), "--step", "pattern").stdout
    assert "head 0 of 2" in out and "head 1 of 2" in out
    out = invoke("explain", "abab", "-w", str(path), "--step", "pattern", "--head", "1").stdout
    assert "head 0 of 2" not in out and "head 1 of 2" in out
    assert "--head 2: the model has heads 0…1" in user_error("explain", "ab", "-w", str(path), "--head", "2")
    assert "--block 1: the model has blocks 0…0" in user_error("explain", "ab", "-w", str(path), "--block", "1")


def test_explain_saves_svg_and_html_and_never_overwrites(tmp_path):
    svg, html = tmp_path / "view.svg", tmp_path / "view.html"
    result = invoke("explain", "--step", "pattern", "--svg", str(svg), "--html", str(html))
    assert result.exit_code == 0
    assert svg.read_text().startswith("<svg") and "hook_pattern" in html.read_text()
    assert "already exists; use --force" in user_error("explain", "--svg", str(svg))
    assert invoke("explain", "--step", "probs", "--svg", str(svg), "--force").exit_code == 0
    weights = tmp_path / "w.json"
    invoke("weights", "new", "-o", str(weights))
    before = weights.read_text()
    assert "that is the weight file being read" in user_error("explain", "-w", str(weights), "--html", str(weights),
                                                              "--force")
    assert weights.read_text() == before


def test_explain_unknown_step():
    assert "--step 'sores': expected one of embed" in user_error("explain", "--step", "sores")


# ---------------------------------------------------------------- complete, check


def test_complete_generates_greedily_with_a_sliding_window():
    result = invoke("complete", "aab", "-n", "12")
    assert result.stdout.strip() == "aab" * 5


def test_check_passes_the_bundled_model():
    result = invoke("check")
    assert result.exit_code == 0
    assert "27 / 27" in result.stdout and "100.00 %" in result.stdout
    assert "margin 1023 logits" in result.stdout


def test_check_fails_a_blank_model_and_shows_why(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # the fold lines below, unwrapped
    path = tmp_path / "blank.json"
    invoke("weights", "new", "-o", str(path))
    result = invoke("check", "-w", str(path), "--target", "aab")
    assert result.exit_code == 1
    assert "0 / 27" in result.stdout
    why = result.stdout[result.stdout.index("Why the shortest failing context 'aa' fails"):]
    # a blank model: every logit 0, so the wrong token a ties the right one b, a gap of 0
    assert "the right token is b, but a ties with it: logit 0 against 0, a gap of 0 logits (p(a) = 0.5000)." in why
    assert re.findall(r"─ \[(\w+)\]", why) == ["why", "qkv", "scores", "mask", "pattern", "z", "proj", "prediction"]
    # all-zero Q, K, V, z, attn_out and x + attn_out are one line each, naming the command that shows them
    assert why.count(f"all 16 entries are 0 (2 × 8); handwired explain aa -w {path} --all to show it") == 6
    assert re.search(r"│ 1:a\s+│ a \(tie\)\s+│\s+0.5000 │\s+0 │", why)
    assert why.rstrip().endswith(f"Every step of this context, nothing folded: handwired explain aa -w {path} --all")


def test_check_json_and_exhaustive():
    data = json.loads(invoke("check", "--exhaustive", "--json").stdout)
    assert (data["contexts"], data["passed"], data["failed"], data["ambiguous"],
            data["out_of_domain"]) == (62, 13, 0, 1, 48)
    assert data["ok"] is True and data["margin"]["logits"] == 1023
    data = json.loads(invoke("check", "--exhaustive", "--min-length", "2", "--json").stdout)
    assert data["contexts"] == 60 and data["ambiguous"] == 0


def test_check_sample_and_long_stream():
    data = json.loads(invoke("check", "--sample", "1000", "--seed", "1", "--json").stdout)
    assert data["contexts"] == 1000 and data["failed"] == 0
    data = json.loads(invoke("check", "--length", "100000", "--json").stdout)
    assert data["contexts"] == 99_998 and data["passed"] == 99_998


def test_check_option_errors():
    assert "choose one" in user_error("check", "--exhaustive", "--sample", "5")
    assert "--sample 0: expected at least 1" in user_error("check", "--sample", "0")
    assert "--length 1: expected at least 2" in user_error("check", "--length", "1")


# ---------------------------------------------------------------- weights


def test_weights_show_labels_every_matrix():
    out = invoke("weights", "show").stdout
    for text in ("wte", "wpe", "blocks[0].attn.c_attn.w", "blocks[0].attn.c_proj.b", "constants: Lg = 1024",
                 "q0", "k7", "v7", "-1024"):
        assert text in out, text


def test_weights_validate_ok_and_every_problem(tmp_path, aab_doc, write_json):
    assert "OK" in invoke("weights", "validate", "aab").stdout
    aab_doc["wte"][0].pop()
    aab_doc["wpe"][2][1] = "Lq"
    result = invoke("weights", "validate", str(write_json(aab_doc)))
    assert result.exit_code == 2
    assert "wte[0]: 7 numbers, expected 8" in result.stderr
    assert "wpe[2][1]: 'Lq': unknown constant 'Lq'" in result.stderr
    assert "2 problems" in result.stderr


def test_weights_new_writes_a_valid_file_and_refuses_to_overwrite(tmp_path):
    path = tmp_path / "my.json"
    result = invoke("weights", "new", "--vocab", "abc", "--n-ctx", "4", "--n-embd", "6", "--n-head", "2", "-o",
                    str(path))
    assert result.exit_code == 0
    assert "OK" in invoke("weights", "validate", str(path)).stdout
    path.write_text(path.read_text().replace('"d0"', '"mine"'))
    edited = path.read_text()
    assert "already exists; use --force" in user_error("weights", "new", "-o", str(path))
    assert path.read_text() == edited
    assert invoke("weights", "new", "-o", str(path), "--force").exit_code == 0
    assert "--n-embd 6 is not divisible by --n-head 4" in user_error("weights", "new", "-o", str(tmp_path / "x.json"),
                                                                  "--n-embd", "6", "--n-head", "4")
    assert "--vocab 'aa'" in user_error("weights", "new", "-o", str(tmp_path / "x.json"), "--vocab", "aa")
    assert not (tmp_path / "x.json").exists()


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda d: d["blocks"][0]["attn"]["c_attn"]["w"][3].pop(),
         "model.json: blocks[0].attn.c_attn.w[3]: 23 numbers, expected 24"),
        (lambda d: d["wte"][1].append(0), "model.json: wte[1]: 9 numbers, expected 8"),
        (lambda d: d["wpe"][0].__setitem__(1, "one"),
         "model.json: wpe[0][1]: 'one': unknown constant 'one' (constants: Lg)"),
        (lambda d: d["wpe"][0].__setitem__(1, [1]), "model.json: wpe[0][1]: expected a number or an expression"),
        (lambda d: d["blocks"][0]["attn"].update(c_atn={}),
         "model.json: blocks[0].attn.c_atn: unknown key 'c_atn' (did you mean 'c_attn'?"),
        (lambda d: d.update(n_head=3), "model.json: n_head: n_embd 8 is not divisible by n_head 3"),
    ],
)
def test_bad_weight_files_give_one_line_and_exit_2(aab_doc, write_json, edit, message):
    edit(aab_doc)
    path = write_json(aab_doc)
    for command in (["predict", "aab"], ["explain"], ["check"], ["weights", "show"]):
        line = user_error(*command, "--weights", str(path))
        assert message in line, line
        assert line.startswith("error: ")


def test_nan_and_infinity_are_refused(tmp_path, aab_doc):
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(aab_doc).replace('"wpe": [[1, 0', '"wpe": [[NaN, 0', 1))
    assert "wpe[0][0]: expected a finite number; found nan" in user_error("predict", "a", "-w", str(path))
    path.write_text(json.dumps(aab_doc).replace('"wpe": [[1, 0', '"wpe": [[Infinity, 0', 1))
    assert "wpe[0][0]: expected a finite number; found inf" in user_error("predict", "a", "-w", str(path))


def test_missing_file_not_json_and_too_large(tmp_path, monkeypatch):
    assert "nope.json: no such file, and no bundled model of that name (bundled: aab, multihead)" in user_error(
        "predict", "a", "-w", str(tmp_path / "nope.json"))
    broken = tmp_path / "broken.json"
    broken.write_text('{"vocab": ["a", "b"],}')
    # the position, not the wording: Python 3.13's json words this error differently from 3.11's
    assert re.fullmatch(rf"error: {re.escape(str(broken))}: not valid JSON: [^\n]+ \(line 1, column 2[12]\)",
                        user_error("predict", "a", "-w", str(broken)))
    from handwired.weightfile import jsonfile

    monkeypatch.setattr(jsonfile, "MAX_FILE_BYTES", 10)
    assert "far too large" in user_error("predict", "a", "-w", str(broken))


def test_bad_context_input():
    assert "input 'abc': 'c' (position 2) is not in the vocabulary a, b" in user_error("predict", "abc")
    assert "input: empty" in user_error("predict", "")
    assert "not in the vocabulary" in user_error("explain", "xyz")
    assert "not in the vocabulary" in user_error("complete", "aac")
    assert "target 'abc'" in user_error("check", "--target", "abc")


def test_the_tool_never_writes_to_a_file_it_reads(tmp_path, aab_doc, write_json):
    path = write_json(aab_doc)
    before = path.read_bytes()
    for command in (["predict", "aab"], ["explain"], ["check", "--exhaustive"], ["weights", "show"]):
        invoke(*command, "-w", str(path))
    invoke("weights", "validate", str(path))
    assert path.read_bytes() == before


# `python -m handwired` that also writes, once, how many contexts it has checked when the check first reports
# its progress (after its first batch, with its Ctrl-C handler in place) to the file descriptor argv[1].
SAYS_WHEN_CHECKING = """
import contextlib, os, runpy, sys
from handwired.cli import checking

marker, said, stop_and_check = int(sys.argv[1]), [], checking.progress_and_stop

@contextlib.contextmanager
def progress_and_stop(show_progress):
    with stop_and_check(show_progress) as (progress, should_stop):
        def progress_and_say(done, total):
            progress(done, total)
            if done and not said:
                said.append(done)
                os.write(marker, str(done).encode())
                os.close(marker)
        yield progress_and_say, should_stop

checking.progress_and_stop = progress_and_stop
sys.argv = ["handwired", *sys.argv[2:]]
runpy.run_module("handwired", run_name="__main__")
"""


def test_ctrl_c_stops_a_long_check_cleanly_with_what_was_checked():
    import os
    import select
    import signal
    import subprocess
    import sys

    from waiting import DEADLINE

    read, write = os.pipe()
    command = [sys.executable, "-c", SAYS_WHEN_CHECKING, str(write), "check", "--length", "100000000", "--json"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=(write,))
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], DEADLINE)  # the deadline is a safety net against a hang
        checked = os.read(read, 100) if ready else b""
    finally:
        os.close(read)
    assert int(checked or 0) > 0, "the check never reported its progress"  # it is running: Ctrl-C now
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=DEADLINE)
    assert child.returncode == 130, stderr
    assert "Traceback" not in stderr
    data = json.loads(stdout)
    assert data["interrupted"] is True and data["ok"] is False
    assert 0 < data["contexts"] < data["total"] == 99_999_998
    assert data["passed"] == data["contexts"]


def test_near_miss_is_reported_where_the_margin_is_smallest(aab_doc, write_json):
    aab_doc["constants"]["Lg"] = 3  # still right everywhere, but only just
    path = write_json(aab_doc)
    result = invoke("check", "--exhaustive", "-w", str(path))
    assert result.exit_code == 0
    assert "Near miss" in result.stdout
    assert "at 'baa' (b over a)" in result.stdout
    data = json.loads(invoke("check", "--exhaustive", "-w", str(path), "--json").stdout)
    assert data["margin"]["near_miss"] is True and 0 < data["margin"]["logits"] < 1


def test_exhaustive_refuses_a_model_too_large_to_enumerate(tmp_path):
    path = tmp_path / "wide.json"
    invoke("weights", "new", "-o", str(path), "--vocab", "abc", "--n-ctx", "16", "--n-embd", "4")
    line = user_error("check", "--exhaustive", "-w", str(path), "--target", "abc")
    assert re.search(r"3\^1 \+ … \+ 3\^16 = 64,570,080 contexts, about \d+ (seconds|minutes|hours) of checking for "
                     r"this model, more than the 30 seconds handwired will spend on one", line), line
    assert "--sample 1000000 --seed 0" in line


def test_weights_new_refuses_a_model_too_large_to_load(tmp_path):
    line = user_error("weights", "new", "-o", str(tmp_path / "huge.json"), "--n-embd", "4096", "--n-layer", "64")
    # (2 + 5)·4096 embedding numbers + 64 blocks × (4·4096² + 4·4096)
    assert "4,296,044,544 weights: more than handwired supports (10,000,000); choose a smaller --n-embd, --n-ctx or " \
           "--n-layer" in line
    assert not (tmp_path / "huge.json").exists()


def test_layernorm_and_mlp_models_show_their_steps_and_weights(tmp_path):
    from reference import params_to_document, random_params

    rng = np.random.default_rng(12)
    doc = params_to_document(random_params(rng, n_vocab=3, n_ctx=4, n_embd=4, n_hidden=6), 2, "xyz", 4)
    path = tmp_path / "full.json"
    path.write_text(json.dumps(doc))
    out = invoke("explain", "xyzx", "-w", str(path)).stdout
    for text in ("[ln1]", "[mlp]", "blocks.1.ln1.hook_out", "blocks.1.mlp.hook_post", "ln_final.hook_out",
                 "LN_f(x) · wteᵀ", "head 1 of 2"):
        assert text in out, text
    out = invoke("weights", "show", str(path)).stdout
    for text in ("blocks[1].ln_2", "blocks[0].mlp.c_fc.w", "h5", "ln_f"):
        assert text in out, text
    assert invoke("complete", "xy", "-n", "3", "-w", str(path)).exit_code == 0


def test_predict_loads_only_what_it_needs():
    """The lazy command group: predict imports its own modules, nothing of checks, puzzles, exports
    or other commands."""
    import subprocess
    import sys

    program = ("import sys; sys.argv = ['handwired', 'predict', 'aabaa']\n"
               "from handwired.cli import main\n"
               "try:\n    main()\nexcept SystemExit:\n    pass\n"
               "print(' '.join(sorted(sys.modules)), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert "aabaa → b" in done.stdout
    loaded = set(done.stderr.split())
    assert {"handwired.cli.predict", "handwired.engine.trace", "handwired.views.model"} <= loaded  # the probe is real
    from handwired.cli import COMMANDS

    others = {spec.split(":")[0] for name, spec in COMMANDS.items() if name != "predict"}
    for module in (*others, "handwired.judge", "handwired.interop", "handwired.engine.batch", "handwired.engine.parts",
                   "handwired.views.steps", "handwired.engine.attribution",
                   "concurrent.futures", "rich.progress", "rich.syntax", "rich.live", "rich._emoji_codes"):
        assert module not in loaded, module


def test_a_file_that_cannot_be_written_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    import os

    def disk_full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    line = user_error("weights", "new", "-o", str(tmp_path / "new.json"))
    assert line == f"error: {tmp_path / 'new.json'}: cannot write: No space left on device"
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_output_paths_are_vetted_before_any_work(tmp_path):
    folder = tmp_path / "pictures"
    folder.mkdir()
    for args in (["--svg", str(folder)], ["--svg", str(folder), "--force"],
                 ["--html", str(tmp_path / "no" / "x.html")]):
        result = invoke("explain", *args)
        assert result.exit_code == 2 and result.stdout == "", result.output  # refused before printing the view
    assert "is a folder" in user_error("explain", "--svg", str(folder))
    assert "does not exist" in user_error("explain", "--html", str(tmp_path / "no" / "x.html"))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the CLI filters numpy's; pytest resets filters per test
def test_weights_too_large_for_float64_are_one_line_naming_where(tmp_path, aab_doc, write_json):
    aab_doc["wte"][0][5] = 1e308  # a's embedding: the attention output overflows, then the logits
    aab_doc["wte"][1][5] = -1e308
    path = str(write_json(aab_doc))
    line = user_error("predict", "aab", "-w", path)
    assert line.endswith("on 'aab', blocks.0.hook_attn_out is not a finite number: the weights are too large for "
                         "float64 (about 1.8e308); make the largest ones smaller")
    for command in (["check", "--json"], ["check", "--exhaustive"], ["complete", "a"], ["diff", path, "aab"]):
        args = command if command[0] == "diff" else [*command, "-w", path]
        assert "the logits are not finite numbers: the weights are too large for float64" in user_error(*args)
    assert "too large for float64" in user_error("attend", "--q", "1e200", "--k", "1e200", "--v", "1")


@pytest.mark.parametrize("args,expected", [
    (["--length", "0"], "--length 0: expected at least 2 tokens"),  # not the default length in disguise
    (["--target", ""], "target: empty"),  # not the file's target in disguise
    (["--near-miss", "nan"], "--near-miss nan: expected a number of logits, 0 or more"),
    (["--near-miss", "-1"], "--near-miss -1.0: expected a number of logits, 0 or more"),
])
def test_check_refuses_values_it_would_otherwise_replace_by_defaults(args, expected):
    assert expected in user_error("check", *args)


def test_attend_refuses_deeply_nested_input_in_one_short_line():
    line = user_error("attend", "--x", "[" * 5000)  # user_error: exit code 2, one line
    # Python 3.11's json overflows on this nesting, 3.13's reads to the end and finds no value: either way one short
    # line naming the option and what is wrong with it
    assert line.startswith("error: --x '[[[") and len(line) < 120
    assert "nested too deeply" in line or "not a valid JSON list" in line


@pytest.mark.parametrize("command", [[], *[[name] for name in COMMANDS], ["weights", "show"], ["puzzles", "check"]])
def test_no_command_offers_shell_completion(command):
    """handwired offers no shell completion, so no command, the top one or any sub-command, offers to install it."""
    result = invoke(*command, "--help")
    assert result.exit_code == 0 and "Usage" in result.stdout
    assert "completion" not in result.stdout
    assert invoke(*command, "--install-completion").exit_code == 2  # no such option


def test_a_command_that_computes_keeps_freed_memory_unless_the_user_tunes_malloc(monkeypatch, tmp_path):
    """Loading a command that loads numpy asks glibc's malloc (once) to keep TOP_PAD bytes atop its heap, so a walk's
    freed arrays are not handed back to the system and faulted in again; where MALLOC_TOP_PAD_ is set, malloc is
    left alone; and a command that computes nothing (puzzles list) does not load ctypes for it."""
    import ctypes
    import os
    import subprocess
    import sys

    import handwired.cli as cli

    calls = []

    class Libc:
        def mallopt(self, option, value):
            calls.append((option, value))
            return 1

    monkeypatch.setattr(ctypes, "CDLL", lambda name: Libc())
    monkeypatch.delenv("MALLOC_TOP_PAD_", raising=False)
    try:
        glibc = bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError, AttributeError):
        glibc = False
    cli.keep_freed_memory.cache_clear()
    assert cli.keep_freed_memory() is glibc and cli.keep_freed_memory() is glibc  # asked once
    assert calls == ([(-2, cli.TOP_PAD)] if glibc else [])  # -2: glibc's M_TOP_PAD
    cli.keep_freed_memory.cache_clear()
    monkeypatch.setenv("MALLOC_TOP_PAD_", "0")
    assert cli.keep_freed_memory() is False and len(calls) == glibc
    cli.keep_freed_memory.cache_clear()  # (asked again by the next command that loads numpy)

    asked = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: asked.append(True))
    group = cli.LazyGroup(name="handwired")
    group.get_command(None, "predict")  # (numpy is loaded in this process)
    assert asked == [True]
    listing = ("import sys\nfrom handwired.cli import main\nsys.argv = ['handwired', 'puzzles', 'list']\n"
               "try:\n    main()\nexcept SystemExit:\n    pass\nprint('ctypes' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True,
                          env={**os.environ, "HANDWIRED_HOME": str(tmp_path)})
    assert done.returncode == 0 and done.stderr.strip().endswith("False"), done.stderr
