"""handwired watch --page in a real browser: headless Chromium loads the page, a save redraws it, a broken save
shows the command line's error and keeps the last view, and Ctrl-C stops the server with exit code 130.

The browser is driven over the DevTools protocol (tests/chromium.py); each step waits for what the page's DOM
shows, never for a time. Skipped without Chromium, unless HANDWIRED_REQUIRE_CHROMIUM=1 (as .ci/run sets).
"""

import json
import signal
import subprocess
import sys

import pytest
from chromium import Browser, executable
from test_cli import invoke
from test_page import read_line, save
from waiting import DEADLINE, wait_until

Q = "document.querySelector('figure[data-hook=\"blocks.0.attn.hook_q\"] td[data-row=\"0\"][data-col=\"0\"]')"


def cell() -> str:
    """Q at position 0, q0: the value, its text and its hover text, once the page has drawn it."""
    return f"(() => {{ const td = {Q}; return td && [td.dataset.value, td.textContent, td.title]; }})()"


@pytest.fixture
def page(tmp_path, aab_doc):
    """The aab file, watched with --page by the real command in a process of its own: (path, url, process)."""
    executable()  # skips (or fails under CI) before anything starts, when there is no browser
    path = save(tmp_path / "aab.json", aab_doc)
    process = subprocess.Popen([sys.executable, "-m", "handwired", "watch", str(path), "--page"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = read_line(process)
        assert "the page is at http://127.0.0.1:" in first, first
        yield path, first.split("the page is at ")[1].split()[0], process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=DEADLINE)


def test_the_page_redraws_a_save_keeps_the_last_view_of_a_broken_one_and_stops_on_ctrl_c(page, tmp_path, aab_doc):
    path, url, process = page
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(url)
        value, text, hover = wait_until(lambda: browser.evaluate(cell()), "the page drawing Q")
        # Q[0, q0] = x[0] · c_attn.w[:, q0] = wpe[0][p0] · Lg = Lg: the file's constant
        assert (value, text) == ("1024", "1024") and "Q[0:a, q0] = 1024" in hover
        assert browser.evaluate("document.querySelector('.badge').textContent") == "PASS"
        steps = browser.evaluate("[...document.querySelectorAll('section.step')].map(s => s.dataset.key)")
        assert steps == ["embed", "qkv", "scores", "mask", "pattern", "z", "proj", "logits", "probs", "prediction",
                         "why"]

        aab_doc["constants"]["Lg"] = 777  # a save: the page redraws through its event stream
        save(path, aab_doc)
        value, text, hover = wait_until(lambda: (found := browser.evaluate(cell())) and found[0] == "777" and found,
                                        "the page redrawing the saved value")
        assert text == "• 777" and "changed since the previous version" in hover  # marked as changed
        edits = browser.evaluate("[...document.querySelectorAll('#edits .edit')].map(e => e.textContent)")
        assert "blocks[0].attn.c_attn.w.p0.q0 1024 → 777" in edits and len(edits) == 12  # each entry written with Lg

        path.write_text('{"format": "handwired/1", ', encoding="utf-8")  # a broken save
        expected = invoke("check", str(path)).stderr.strip().removeprefix("error: ")  # the command line's one line
        shown = wait_until(lambda: browser.evaluate(
            "(() => { const e = document.getElementById('error'); return !e.hidden && e.textContent; })()"),
            "the page showing the error")
        assert expected and expected in shown
        assert browser.evaluate(cell())[0] == "777"  # the last good view stays
    finally:
        browser.close()
    process.send_signal(signal.SIGINT)  # Ctrl-C
    assert process.wait(timeout=DEADLINE) == 130
    assert "Traceback" not in process.stderr.read()


def test_a_failure_clicked_in_the_page_draws_its_context(page, tmp_path, aab_doc):
    path, url, process = page
    aab_doc["blocks"][0]["attn"]["c_proj"]["w"][7] = [0] * 8  # the head writes nothing: aab now fails
    save(path, aab_doc)
    failures = json.loads(invoke("check", str(path), "--json").stdout)["failures"]
    assert failures
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(url)
        first = wait_until(lambda: browser.evaluate(
            "(() => { const b = document.querySelector('button.failure'); return b && b.textContent; })()"),
            "the page listing the failures")
        assert first.startswith(failures[0]["context"] + " → ")
        browser.evaluate("document.querySelector('button.failure').click()")
        wait_until(lambda: browser.evaluate("document.getElementById('text').value") == failures[0]["context"][-5:],
                   "the page drawing the failing context")
    finally:
        browser.close()
