"""One budget: every refusal by estimate says how to allow the work, and allowing it lets the work go on."""

import re

import pytest
from forbidden import forbid
from test_cli import invoke, user_error

import handwired
from handwired import budget
from handwired.errors import HandwiredError


def test_the_allowance_offered_is_twice_the_estimate_rounded_up_to_two_digits():
    assert budget.more_time(61) == " (or allow it: {max_seconds} 130)"  # 122 -> 130
    assert budget.more_time(7.3) == " (or allow it: {max_seconds} 15)"  # 14.6 -> 15
    assert budget.more_time(float("inf")) == ""  # nothing to offer for work that cannot finish
    assert budget.more_memory(3.58 * 2**30) == " (or allow it: {max_memory} 4.5G)"  # 4.475 -> 4.5
    assert budget.more_memory(100 * 2**20) == " (or allow it: {max_memory} 130M)"  # 125 -> 130


@pytest.mark.parametrize("text, size", [("8G", 8 * 2**30), ("512M", 512 * 2**20), ("1.5GB", 1.5 * 2**30),
                                        ("2GiB", 2 * 2**30), ("1000", 1000), (" 3k ", 3 * 2**10)])
def test_sizes_read_as_people_write_them(text, size):
    assert budget.parse_size(text) == size


def test_a_check_refused_by_its_estimate_runs_with_the_allowance_it_names(monkeypatch):
    from handwired.judge.checking import report

    calls = forbid(monkeypatch, report.run)  # what runs a check's plan
    line = user_error("check", "--exhaustive", "--max-seconds", "1e-6")  # aab's 62 contexts take longer than that
    assert calls == []  # refused before the work
    found = re.search(r"\(or allow it: --max-seconds (\d+)\)$", line)
    assert found and "more than the 1 second handwired will spend on one" in line, line
    monkeypatch.undo()
    result = invoke("check", "--exhaustive", "--max-seconds", found[1])
    assert result.exit_code == 0, result.output
    assert "62 contexts checked" in " ".join(result.stdout.split())  # aab: 2 + 4 + … + 32, every one run
    assert invoke("check", "--exhaustive").exit_code == 0  # the allowance was that command's: the default is back


def test_memory_is_allowed_the_same_way(monkeypatch):
    monkeypatch.setattr(budget, "MEMORY", 1000)  # a trace of aabaa takes more than a thousand bytes
    line = user_error("predict", "aabaa")
    assert "more than the 0 MB handwired will use" in line and line.endswith("(or allow it: --max-memory 1M)"), line
    result = invoke("predict", "aabaa", "--max-memory", "1M")
    assert result.exit_code == 0 and "→ b" in result.stdout


@pytest.mark.parametrize("option, value", [("--max-seconds", "-3"), ("--max-seconds", "nan"),
                                           ("--max-memory", "lots"), ("--max-memory", "0G")])
def test_a_bad_allowance_is_a_usage_error(option, value):
    result = invoke("check", option, value)
    assert result.exit_code == 2 and "Invalid value for" in result.output and "internal error" not in result.output


def test_python_allows_around_its_calls_and_restores_what_was_allowed():
    model = handwired.load("aab")
    with handwired.allow(max_seconds=1e-6):
        with pytest.raises(HandwiredError, match=r"\(or allow it: max_seconds=\d+\)$"):
            handwired.check(model, exhaustive=True)
        with handwired.allow(max_seconds=60):
            assert handwired.check(model, exhaustive=True).report.checked == 62
        with pytest.raises(HandwiredError):  # as the outer block allows
            handwired.check(model, exhaustive=True)
    assert handwired.check(model, exhaustive=True).report.checked == 62  # the defaults, after the blocks
    with pytest.raises(HandwiredError, match=r"^max_memory 'lots': expected a number of bytes or a size"):
        with handwired.allow(max_memory="lots"):
            pass


def test_a_sweeps_copies_of_a_wide_model_are_counted_before_any_is_made(tmp_path, monkeypatch):
    # aab widened to n_embd 1000 (a few hundred bytes of file): each value's copy holds 4,011,000 parameters as
    # float64 and as written, about 90 MB at 24 bytes each; a thousand values were accepted and grew past 1.3 GB
    import json

    from handwired.judge.workbench import sweep
    from handwired.weightfile.files import resolve

    aab_doc = json.loads(resolve("aab").read_text(encoding="utf-8"))  # the sparse form: no matrix to widen
    aab_doc["n_embd"] = 1000
    aab_doc["dims"] = aab_doc["dims"] + [f"x{i}" for i in range(1000 - len(aab_doc["dims"]))]
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(aab_doc))
    calls = forbid(monkeypatch, sweep.with_constants)
    line = user_error("sweep", str(path), "Lg=0..4", "--steps", "1000")
    assert calls == []
    assert "1,000 copies of the model's arrays held at once: about 89.7 GB of the walk's arrays" in line
    assert line.endswith("(or allow it: --max-memory 120G)"), line  # 89.7 GB and a quarter more


def test_ablating_every_entry_counts_the_arrays_each_entry_copies(tmp_path, monkeypatch):
    # a dense n_embd 150 block: 67,500 c_attn entries, each part a copy of c_attn (540 KB): 36 GB held at once
    import json

    import numpy as np

    from handwired.judge.workbench import ablate

    rng = np.random.default_rng(0)
    doc = {"format": "handwired/1", "vocab": ["a", "b"], "n_ctx": 3, "n_embd": 150, "target": "ab",
           "wte": rng.normal(size=(2, 150)).round(2).tolist(), "wpe": np.zeros((3, 150)).tolist(),
           "blocks": [{"attn": {"c_attn": {"w": rng.normal(size=(150, 450)).round(2).tolist()}, "c_proj": {"w": {}}}}]}
    path = tmp_path / "dense.json"
    path.write_text(json.dumps(doc))
    calls = forbid(monkeypatch, ablate.entry_parts)
    line = user_error("ablate", str(path), "--entries")
    assert calls == []
    assert "copies of the model's arrays held at once" in line and "leave out --entries" in line, line
