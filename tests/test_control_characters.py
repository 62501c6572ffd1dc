"""Tokens and labels holding control characters (a newline, a tab) print escaped, so every message stays one line."""

import json

from test_cli import invoke, user_error


def model_file(tmp_path, vocab, name):
    path = tmp_path / name
    assert invoke("weights", "new", "-o", str(path), "--vocab", vocab).exit_code == 0
    return path


def test_a_newline_token_is_escaped_in_every_error(tmp_path):
    newline, tab = model_file(tmp_path, "a\n", "newline.json"), model_file(tmp_path, "a\t", "tab.json")
    assert user_error("predict", "ab", "-w", str(newline)) == (
        "error: input 'ab': 'b' (position 1) is not in the vocabulary a, '\\n'")
    assert user_error("diff", str(newline), str(tab)) == (
        f"error: {tab}: vocab a '\\t' differs from {newline}'s a '\\n'; diff compares two versions of one model")
    assert user_error("check", "--puzzle", "aab", "-w", str(newline)) == (
        f"error: {newline}: does not fit puzzle 'aab': it expects vocab a, b, the file has a, '\\n'")


def test_weights_validate_lists_problems_one_line_each(tmp_path):
    doc = json.loads(model_file(tmp_path, "a\n", "m.json").read_text())
    doc["dims"] = ["x\ny"] + [f"d{i}" for i in range(1, 8)]
    doc["wte"] = {"\n": {"nowhere\nat all": 1}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    result = invoke("weights", "validate", str(path))
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and lines[-1] == "1 problem" and len(lines) == 2
    assert lines[0].startswith(f"{path}: wte.\\n.nowhere\\nat all: ") and "'x\\ny'" in lines[0]


def test_views_show_control_characters_escaped(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    path = model_file(tmp_path, "a\n", "m.json")
    out = invoke("explain", "\n\n", "-w", str(path)).stdout
    assert "vocab a '\\n'" in out and "context '\\n\\n'  (2 tokens)" in out
    out = invoke("predict", "a\n", "-w", str(path), "--every-position").stdout
    assert "'a\\n' → a  (tied with '\\n'; argmax takes the first)" in out
    assert "│ '\\n'  │ 'a\\n' │ a (tie)" in out and "│ '\\n'  │     0 │   0 │      0.5000 │" in out
    assert all(line.strip() for line in out.splitlines())  # no line broken by a raw newline
