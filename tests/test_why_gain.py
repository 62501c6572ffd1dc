"""why names the final LayerNorm's gain when it flips a part's push or decides the answer."""

import re

import numpy as np
import pytest
from reference import reference_forward
from test_cli import invoke

from handwired.weightfile import load


@pytest.fixture
def with_ln_f(aab_doc, write_json, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")

    def make(gain):
        aab_doc["ln_f"] = {"g": [gain] * 8, "b": [0] * 8}
        return write_json(aab_doc, f"gain{gain}.json")

    return make


def unwrapped(out: str) -> str:
    """A panel's lines joined into one, its borders dropped: the note reads as one sentence."""
    return re.sub(r"\s+", " ", " ".join(line.strip().strip("│") for line in out.splitlines()))


def test_a_negative_gain_that_flips_the_answer_is_named(with_ln_f):
    path = with_ln_f(-1024)
    model = load(str(path))
    ids = [0, 0, 1, 0, 0]  # aabaa
    flipped_logits, _ = reference_forward(model.params, ids, 1)
    unit = {**model.params, "ln_f": {"g": np.ones(8), "b": np.zeros(8)}}
    unit_logits, _ = reference_forward(unit, ids, 1)
    assert np.argmax(flipped_logits[-1]) == 0 and np.argmax(unit_logits[-1]) == 1  # a with the gain, b at g = 1
    out = unwrapped(invoke("explain", "aabaa", "-w", str(path), "--step", "why").stdout)
    assert "Position 4 (4:a) predicts a;" in out
    assert ("The final LayerNorm's gain ln_f.g (g = -1024) decides the answer: with g = 1 the top token would be b; "
            "the gain makes it a.") in out
    # a uniform negative gain reverses every part that favours one token over the other: all but wpe, whose share
    # is the same for a and b (it writes to p4 only, which neither token's embedding reads)
    assert ("ln_f.g turns around the push of token embedding wte, block 0 head 0, block 0 attn bias c_proj.b: "
            "before the gain they favour b over a, after it a over b.") in out


def test_a_positive_gain_changes_nothing_and_is_not_mentioned(with_ln_f):
    out = unwrapped(invoke("explain", "aabaa", "-w", str(with_ln_f(2)), "--step", "why").stdout)
    assert "Position 4 (4:a) predicts b;" in out and "ln_f.g" not in out


def test_the_failure_view_names_the_gain_too(with_ln_f):
    result = invoke("check", "-w", str(with_ln_f(-1024)))
    assert result.exit_code == 1
    assert "decides the answer: with g = 1 the top token would be" in unwrapped(result.stdout)


def test_the_failures_headline_says_the_gain_decides(with_ln_f):
    # the headline, before any panel: the part that pushed most is named with its push turned around by the gain
    out = unwrapped(invoke("check", "-w", str(with_ln_f(-1024))).stdout)
    headline = out[out.index("Why the shortest failing context"):out.index("[why]")]
    assert "ln_f.g turns its push around: before the gain it favours b" in headline
    assert ("The final LayerNorm's gain ln_f.g decides: with g = 1 the top token would be b, the gain makes it "
            "a.") in headline
    out = unwrapped(invoke("check", "-w", str(with_ln_f(2))).stdout)  # a positive gain decides nothing: not named
    assert "ln_f.g" not in out
