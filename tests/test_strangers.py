"""A file from a stranger is safe: a statement or weight file cannot choose where files go, drive the terminal,
crash the judge, wipe progress or eat the machine. One test (or a few) for each way it was tried."""

import json
import re
from pathlib import Path

import pytest
from test_cli import invoke, user_error

from handwired.judge.game import progress as progressing
from handwired.judge.game.catalogue import bundled_puzzles
from handwired.judge.game.puzzle import TEMPLATE
from handwired.judge.game.statement import MAX_HINTS

# What a terminal obeys (C0 but the newline, DEL, C1), and what hides or reorders text: the bidi embeddings,
# overrides and isolates, zero-width spaces and joiners, the byte-order mark, the soft hyphen, a tag character
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b-\u200f\ufeff\xad\U000e0041]")
ESCAPES = ("\x1b]0;PWNED\x07\x1b[2J\x1b]8;;http://x/\x1b\\link\x1b]8;;\x1b\\\x9b31m\x7f\x00"
           "\u202egnp.exe\u202c\u2066\u200b\ufeff\xad\U000e0041")


def template_doc(**changes):
    doc = json.loads(TEMPLATE.read_text(encoding="utf-8"))
    doc["name"] = "mine"
    doc.update(changes)
    return doc


def write(path: Path, doc) -> Path:
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return path


def files_under(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*") if path.is_file()}


# ---------------------------------------------------------------- 1. paths from names


@pytest.mark.parametrize("name", ["/some/dir/x", "../../x", "a\nb", "x" * 300, "a.b", "", "mine/../../x", "C:x",
                                  "-h", "--force", "_x"])  # "-h-answer.json" is an option to the command it is given to
def test_a_statements_name_is_a_plain_name_never_a_path(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "s.json", template_doc(name=name))
    for command in (("puzzles", "show", "s.json"), ("puzzles", "start", "s.json"), ("puzzles", "hint", "s.json"),
                    ("puzzles", "check", "s.json", "a.json")):
        line = user_error(*command)
        assert line.startswith("error: s.json: name: expected a plain name of letters, digits, '-' and '_', at most "
                               "64 of them, the first a letter or digit")
    assert files_under(tmp_path) == {tmp_path / "s.json"}  # nothing was written


def test_puzzles_start_without_o_writes_in_the_current_folder_only(tmp_path, monkeypatch):
    for folder in ("here", "statements"):
        (tmp_path / folder).mkdir()
    write(tmp_path / "statements" / "s.json", template_doc())
    monkeypatch.chdir(tmp_path / "here")
    before = files_under(tmp_path)
    assert invoke("puzzles", "start", "../statements/s.json").exit_code == 0
    assert files_under(tmp_path) - before == {tmp_path / "here" / "mine-answer.json"}


# ---------------------------------------------------------------- 2. the terminal obeys the file


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    """A statement and weight files whose every string a view prints is full of escape sequences."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "evil.json", template_doc(
        name="evil", title="T" + ESCAPES, summary="S" + ESCAPES, story="Story" + ESCAPES + "\n\nmore" + ESCAPES,
        hints=["h1" + ESCAPES, "h2" + ESCAPES]))
    assert invoke("puzzles", "start", "evil.json", "-o", "answer.json").exit_code == 0
    assert invoke("weights", "new", "-o", "w.json", "--vocab", "a\x1b\x9b", "--n-embd", "4").exit_code == 0
    doc = json.loads((tmp_path / "w.json").read_text())
    doc.update(name="n" + ESCAPES, description="d" + ESCAPES, dims=["x\x1b[2J", "\x9b1", "d\x7f", "ok"],
               example="a\x1b\x9b", target="a\x1b")
    doc["constants"] = {"Lg": 2}
    doc["wte"] = {"\x1b": {"x\x1b[2J": 1}, "a": {"\x9b1": "Lg"}}
    write(tmp_path / "w.json", doc)
    doc["wte"]["a"] = {"\x9b1": 3}
    write(tmp_path / "w2.json", doc)
    folder = tmp_path / "puzzles"
    folder.mkdir()
    write(folder / "evil.json", template_doc(name="evil", title="T" + ESCAPES, summary="S" + ESCAPES))
    monkeypatch.setenv("HANDWIRED_PUZZLES", str(folder))
    return tmp_path


COMMANDS = [
    ("predict", "a\x1b", "-w", "w.json"), ("predict", "a\x1b", "-w", "w.json", "--every-position"),
    ("explain", "-w", "w.json"), ("explain", "-w", "w.json", "--step", "why"), ("explain", "-w", "w.json", "--all"),
    ("weights", "show", "w.json"), ("weights", "validate", "w.json"), ("check", "w.json"),
    ("check", "w.json", "--exhaustive"), ("complete", "a", "-w", "w.json"), ("diff", "w.json", "w2.json"),
    ("spread", "blocks.0.hook_attn_out:x\x1b[2J", "-w", "w.json"), ("puzzles",), ("puzzles", "list"),
    ("puzzles", "show", "evil.json"), ("puzzles", "show", "evil"), ("puzzles", "hint", "evil.json", "--every-hint"),
    ("puzzles", "start", "evil.json", "-o", "-"), ("puzzles", "check", "evil.json", "answer.json"),
    ("check", "answer.json"), ("check", "--puzzle", "evil.json", "-w", "answer.json"),
    ("weights", "show", "w.json", "--svg", "-"), ("puzzles", "check", "evil.json", "answer.json", "--html", "-"),
    ("sweep", "w.json", "Lg=0..4", "--steps", "3"), ("ablate", "w.json"), ("ablate", "w.json", "--entries"),
]
JSON_COMMANDS = [("predict", "a\x1b", "-w", "w.json", "--json"), ("explain", "-w", "w.json", "--json"),
                 ("check", "w.json", "--json"), ("diff", "w.json", "w2.json", "--json"), ("puzzles", "--json"),
                 ("spread", "blocks.0.hook_attn_out:x\x1b[2J", "-w", "w.json", "--json"),
                 ("sweep", "w.json", "Lg=0..4", "--steps", "3", "--json"), ("ablate", "w.json", "--entries", "--json")]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_text_from_a_file_is_shown_never_obeyed(hostile, command):
    result = invoke(*command)
    assert result.exit_code in (0, 1), (command, result.output)
    assert not RAW_CONTROL.search(result.stdout), (command, RAW_CONTROL.findall(result.stdout))
    assert not RAW_CONTROL.search(result.stderr), (command, result.stderr)


def test_the_escaped_text_is_still_there_to_read(hostile, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = invoke("puzzles", "show", "evil.json").stdout
    assert "T\\x1b]0;PWNED\\x07\\x1b[2J" in out and "\\x9b31m\\x7f\\x00" in out
    assert "hint 2 of 2: h2\\x1b]0;PWNED" in invoke("puzzles", "hint", "evil.json", "--every-hint").stdout
    assert "d\\x1b]0;PWNED" in " ".join(invoke("weights", "show", "w.json").stdout.split())


@pytest.mark.parametrize("command", JSON_COMMANDS, ids=" ".join)
def test_with_json_the_strings_are_data(hostile, command):
    result = invoke(*command)
    assert result.exit_code in (0, 1), (command, result.output)
    assert not RAW_CONTROL.search(result.stdout.replace("\n", " ")), command  # JSON escapes them: \u001b, \u009b
    data = json.loads(result.stdout)
    strings = set(_strings(data))
    assert any("\x1b" in text or "\x9b" in text for text in strings), command  # kept as they were, as data


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# ---------------------------------------------------------------- 3. progress wiped by a statement


def test_a_statement_with_too_many_hints_never_wipes_progress(tmp_path, monkeypatch, handwired_home):
    monkeypatch.chdir(tmp_path)
    assert invoke("puzzles", "solution", "ab", "--spoil", "-o", "ab.json").exit_code == 0
    assert invoke("puzzles", "check", "ab", "ab.json").exit_code == 0
    write(tmp_path / "many.json", template_doc(hints=[f"hint {i}" for i in range(1001)]))
    assert user_error("puzzles", "hint", "many.json", "--every-hint") == (
        f"error: many.json: hints: 1,001 hints, more than a puzzle may have (at most {MAX_HINTS})")
    listed = invoke("puzzles")
    solved = f"1 of {len(bundled_puzzles())} solved"
    assert listed.exit_code == 0 and listed.stderr == "" and solved in " ".join(listed.stdout.split())


def test_progress_an_older_version_wrote_with_too_many_hints_keeps_every_other_puzzle(tmp_path, monkeypatch,
                                                                                        handwired_home):
    monkeypatch.chdir(tmp_path)
    invoke("puzzles", "solution", "ab", "--spoil", "-o", "ab.json")
    invoke("puzzles", "check", "ab", "ab.json")
    path = handwired_home / "progress.json"
    doc = json.loads(path.read_text())
    doc["puzzles"]["many#0123456789ab"] = {"solved": False, "best": None, "hints": 1001}
    path.write_text(json.dumps(doc))
    listed = invoke("puzzles")
    assert listed.exit_code == 0 and f"1 of {len(bundled_puzzles())} solved" in " ".join(listed.stdout.split())
    assert listed.stderr.count("\n") == 1 and "puzzles.many#0123456789ab.hints: 1001 is more than" in listed.stderr
    assert invoke("puzzles").stderr == ""  # said once: the file is rewritten without it, its old self kept aside
    assert len(list(handwired_home.glob("progress.json.bad-*"))) == 1
    assert progressing.load().solved("ab")


# ---------------------------------------------------------------- 4. internal errors


@pytest.mark.parametrize("domain", [{"kind": "strings", "alphabet": "a", "length": [64, 64]},
                                    {"kind": "strings", "alphabet": "a", "template": "#" * 64}])
def test_a_domain_of_64_or_more_positions_is_judged_not_a_crash(tmp_path, monkeypatch, domain):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "300")
    write(tmp_path / "long.json", template_doc(n_ctx=80, vocab=["a", "b"], rule={"kind": "first"}, domain=domain,
                                               examples=["a" * 64]))
    shown = invoke("puzzles", "show", "long.json")
    assert shown.exit_code == 0 and "(1 contexts)" in " ".join(shown.stdout.split())
    assert invoke("puzzles", "start", "long.json", "-o", "a.json").exit_code == 0
    assert invoke("puzzles", "check", "long.json", "a.json").exit_code == 1  # all zeros: a tie is no proof
    assert invoke("check", "a.json").exit_code == 1


def test_a_template_longer_than_n_ctx_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "t.json", template_doc(domain={"kind": "strings", "alphabet": "a", "template": "#" * 300}))
    assert user_error("puzzles", "show", "t.json") == "error: t.json: domain.template: 300 tokens, longer than n_ctx 5"


LONG = "y" * 300


@pytest.mark.parametrize("command", [
    ("predict", "a", "-w", f"{LONG}.json"), ("puzzles", "show", f"{LONG}.json"), ("weights", "new", "-o", LONG),
    ("explain", "--svg", f"{LONG}.svg"), ("check", f"{LONG}.json"), ("puzzles", "start", "ab", "-o", LONG),
    ("puzzles", "check", "ab", LONG), ("diff", "aab", LONG), ("watch", LONG), ("export", "aab", "-o", LONG),
    ("import", LONG, "-o", "x.json"), ("weights", "validate", LONG), ("puzzles", "new", "-o", f"{LONG}/x.json"),
    ("check", "--puzzle", f"{LONG}.json"), ("weights", "convert", "aab", "--to", "dense", "-o", LONG),
])
def test_a_path_part_over_255_bytes_is_one_line_never_an_os_error(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    line = user_error(*command)
    assert line.startswith("error: yyyyyyyyyy") and "more than a file system allows (at most 255)" in line, line
    assert not any(path.name.startswith("yyy") for path in tmp_path.rglob("*"))


# ---------------------------------------------------------------- 5. sizes before the work


@pytest.mark.parametrize("changes, message", [
    ({"vocab": [chr(0x4e00 + i) for i in range(1000)]},
     "vocab: 1,000 tokens, more than a puzzle may have (at most 128)"),
    ({"vocab": [chr(0x4e00 + i) for i in range(9000)]}, "vocab: 9,000 tokens, more than a puzzle may have"),
    ({"caps": {"n_embd": 4095, "n_head": 1, "n_layer": 1, "mlp": False}}, "caps.n_embd: 4095 is more than handwired "
                                                                          "supports (at most 1,024)"),
    ({"caps": {"n_embd": 4, "n_head": 1, "n_layer": 4095, "mlp": False}}, "caps.n_layer: 4095 is more than"),
    ({"n_ctx": 4000}, "n_ctx: 4000 is more than handwired supports (at most 256)"),
    ({"examples": ["ab|"] * 1000}, "examples: 1,000 examples, more than a puzzle may show (at most 64)"),
    ({"story": "x" * 20_000}, "story: 20,000 characters, more than a statement's text may have (at most 10,000)"),
    ({"title": "x" * 1000}, "title: 1,000 characters, more than it may have (at most 100)"),
    ({"domain": {"kind": "answer_so_far", "alphabet": "ab", "template": "#" * 10_000_000}},
     "domain.template: 10,000,000 characters, more than a statement's text may have (at most 10,000)"),
    ({"domain": {"kind": "answer_so_far", "alphabet": "ab", "length": [1, 1]}, "x": list(range(20_000))},
     "more than 10,000 values: far more than a puzzle statement holds"),
    ({"n_ctx": 40, "domain": {"kind": "answer_so_far", "alphabet": "ab", "length": [18, 18]},
      "examples": ["a" * 18 + "|"]},  # read (a sample may check it), but never counted nor walked
     "domain of up to 134,479,872 tokens in its contexts, more than the 100,000,000 a check walks; check a random "
     "sample of its contexts instead"),
])
def test_a_statement_past_its_sizes_is_one_line_before_anything_is_built(tmp_path, monkeypatch, changes, message):
    from handwired.judge.kinds import domains

    monkeypatch.chdir(tmp_path)
    built = []
    walk_domain = domains.shape_walk
    monkeypatch.setattr(domains, "shape_walk", lambda shape, *args: built.append(shape) or walk_domain(shape, *args))
    write(tmp_path / "s.json", template_doc(**changes))
    line = user_error("puzzles", "show", "s.json")
    assert line.startswith("error: s.json: ") and message in line, line
    if "domain" in changes or "x" in changes or "story" in changes:
        assert built == []  # refused before the domain was made


def test_diff_refuses_to_draw_more_changed_weights_than_a_view_takes(tmp_path, monkeypatch):
    from handwired.judge.workbench import compare
    from handwired.views import diff as diffing

    monkeypatch.chdir(tmp_path)
    invoke("weights", "new", "-o", "big.json", "--vocab", "ab", "--n-ctx", "5", "--n-embd", "300")
    doc = json.loads((tmp_path / "big.json").read_text())
    doc["blocks"][0]["attn"]["c_attn"]["w"] = {f"d{r}": {str(c): 1 for c in range(900)} for r in range(300)}
    write(tmp_path / "big.json", doc)
    drawn = []
    monkeypatch.setattr(diffing, "diff_view", lambda *args: drawn.append(args))
    monkeypatch.setattr(compare, "weight_changes", lambda *args: drawn.append(args))
    line = user_error("diff", "aab", "big.json")
    assert re.fullmatch(r"error: up to 270,\d{3} changed weights to draw: about \d+ (seconds|minutes), more than the "
                        r"30 seconds handwired spends on a view; --json writes them without drawing, or compare two "
                        r"versions of one model, a few edits apart \(or allow it: --max-seconds \d+\)", line), line
    assert drawn == []  # refused before any weight was compared, counted as arrays


# ---------------------------------------------------------------- 6. only options the command has


def test_puzzles_check_refusing_a_long_check_suggests_no_option_it_lacks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    vocab = [chr(0x4e00 + i) for i in range(128)]
    write(tmp_path / "wide.json", template_doc(vocab=vocab, n_ctx=3, rule={"kind": "first"}, examples=[vocab[0]],
                                               caps={"n_embd": 1024, "n_head": 1, "n_layer": 1, "mlp": False}))
    del_domain = json.loads((tmp_path / "wide.json").read_text())
    del del_domain["domain"]
    write(tmp_path / "wide.json", del_domain)
    assert invoke("puzzles", "start", "wide.json", "-o", "a.json").exit_code == 0
    line = user_error("puzzles", "check", "wide.json", "a.json")
    assert "--sample" not in line and "--seed" not in line
    assert re.search(re.escape("a puzzle is judged on every one of its contexts, so only a statement with a smaller "
                               "vocab or n_ctx (or a domain) makes the check shorter") + r" \(or allow it: "
                     r"--max-seconds \d+\)$", line), line  # an option puzzles check has


@pytest.mark.parametrize("key, value, message", [
    ("name", "N" * 5_000_000, "name: 5,000,000 characters, more than handwired shows (at most 200)"),
    ("description", "D" * 20_000, "description: 20,000 characters, more than handwired shows (at most 10,000)"),
    ("dims", ["x" * 1000] + [f"d{i}" for i in range(1, 8)],
     "dims[0]: a label of 1,000 characters, more than a table shows (at most 100)"),
])
def test_a_weight_files_text_is_bounded_before_any_view_draws_it(tmp_path, monkeypatch, aab_doc, key, value,
                                                                  message):
    monkeypatch.chdir(tmp_path)
    aab_doc[key] = value
    write(tmp_path / "w.json", aab_doc)
    for command in (("predict", "aab", "-w", "w.json"), ("weights", "show", "w.json")):
        assert user_error(*command) == f"error: w.json: {message}"


def test_a_name_too_long_that_no_check_foresaw_is_still_the_inputs_fault(monkeypatch):
    import handwired.cli.predict

    def too_long(*args, **kwargs):
        raise OSError(36, "File name too long", "z" * 300)

    monkeypatch.setattr(handwired.cli.predict, "trace", too_long)
    line = user_error("predict", "aab")
    assert line.startswith("error: zzzzzzzzzz") and line.endswith("more than a file system allows (at most 255)")


def test_a_statements_keys_are_bounded_before_any_is_quoted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = template_doc()
    doc["rule"]["k" * 5000] = 1
    write(tmp_path / "s.json", doc)
    assert user_error("puzzles", "show", "s.json") == "error: s.json: rule: a key of 5,000 characters (at most 100)"


def test_watch_says_when_the_edits_are_too_many_to_compare_and_goes_on(tmp_path, aab_doc, monkeypatch):
    import io

    from rich.console import Console

    from handwired.errors import HandwiredError
    from handwired.views import watch as watching

    first = watching.load_snapshot(write(tmp_path / "m.json", aab_doc))
    aab_doc["wte"] = [[2, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0]]
    second = watching.load_snapshot(write(tmp_path / "m.json", aab_doc))

    def too_many(old, new):
        raise HandwiredError("m.json: 9,000,000 weights to compare one by one: about 2 minutes")

    monkeypatch.setattr(watching, "weight_changes", too_many)
    console = Console(file=io.StringIO(), width=200)
    console.print(watching.screen(watching.State().advance(first).advance(second)))
    out = " ".join(console.file.getvalue().split())
    assert "edited since the previous version: not compared (m.json: 9,000,000 weights to compare one by one" in out
    assert "context aabaa" in out  # and the rest of the screen is drawn


def test_puzzles_show_estimates_its_example_answers_before_making_them(monkeypatch):
    from handwired.engine import cost
    from handwired.views import puzzles as puzzle_views

    answered = []
    monkeypatch.setattr(puzzle_views, "answer", lambda *args: answered.append(args))
    monkeypatch.setattr(cost, "SECONDS_PER_STEP_DOWN", 10.0)  # as if each of add's 42 example tokens took 10 s
    line = user_error("puzzles", "show", "add")
    assert re.fullmatch(r"error: \S+add\.json: 6 examples, each followed down the domain token by token: about "
                        r"\d+ minutes, more than the 30 seconds handwired spends on a view; a statement with fewer "
                        r"or shorter examples narrows it \(or allow it: --max-seconds \d+\)", line), line
    assert answered == []


def test_an_exported_readme_shows_the_files_text_escaped(tmp_path, monkeypatch, aab_doc):
    pytest.importorskip("safetensors")
    monkeypatch.chdir(tmp_path)
    aab_doc.update(name="n\x1b[2J", description="d\x1b]0;PWNED\x07")
    write(tmp_path / "w.json", aab_doc)
    assert invoke("export", "w.json", "-o", "tl").exit_code == 0
    text = (tmp_path / "tl" / "README.md").read_text()
    assert not RAW_CONTROL.search(text.replace("\n", " ")) and "n\\x1b[2J" in text and "d\\x1b]0;PWNED\\x07" in text


def test_every_invisible_or_obeyed_character_is_escaped():
    # Independent of the product's list: every code point this Python's Unicode database calls a control (Cc, but the
    # newline), a format character (Cf) or a line or paragraph separator (Zl, Zp) is shown as its escape
    import sys
    import unicodedata

    from handwired.weightfile.axes import escaped

    unseen = [hex(code) for code in range(sys.maxunicode + 1) if code != 10
              and unicodedata.category(chr(code)) in ("Cc", "Cf", "Zl", "Zp") and escaped(chr(code)) == chr(code)]
    assert unseen == []
    assert escaped("a\u202eb\u200bc\nd") == "a\\u202eb\\u200bc\nd" and escaped("é ‘x’ 日本") == "é ‘x’ 日本"
