"""handwired watch in a real terminal (tmux): it redraws on each save, shows errors in place, and Ctrl-C exits 0.

Needs tmux. Without it the test is skipped, unless HANDWIRED_REQUIRE_TMUX=1 (as .ci/run sets once
it has installed tmux), when a missing tmux is a failure.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import DEADLINE, wait_until

REQUIRED = os.environ.get("HANDWIRED_REQUIRE_TMUX") == "1"
if shutil.which("tmux") is None:
    if REQUIRED:
        raise RuntimeError("HANDWIRED_REQUIRE_TMUX=1 but tmux is not installed")
    pytest.skip("tmux is not installed: the real-terminal test of `handwired watch` needs it "
                "(apt-get install tmux)", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent


class Terminal:
    """A detached tmux session of 100 × 40 on its own server, running one command."""

    def __init__(self, tmp_path: Path, command: str) -> None:
        self.socket = f"handwired-test-{os.getpid()}-{tmp_path.name}"
        self.tmux("new-session", "-d", "-s", "watch", "-x", "100", "-y", "40", command)

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True,
                              timeout=DEADLINE).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "watch")

    def wait_for(self, condition, what: str, settled: bool = True) -> str:
        """The screen once it shows ``condition`` and (``settled``) has stopped changing, not caught mid-draw."""
        previous = [None]

        def showing() -> str | None:
            screen = self.screen()
            seen = condition(screen) and (not settled or screen == previous[0])
            previous[0] = screen
            return screen if seen else None

        try:
            return wait_until(showing, f"the terminal showing {what}", every=0.02 if not settled else 0.05)
        except AssertionError as error:
            raise AssertionError(f"{error}; it shows:\n{self.screen()}") from None

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=DEADLINE)


@pytest.fixture
def terminal(tmp_path):
    made = []

    def start(command: str) -> Terminal:
        made.append(Terminal(tmp_path, command))
        return made[-1]

    yield start
    for term in made:
        term.close()


def test_watch_redraws_on_save_shows_errors_in_place_and_exits_cleanly(tmp_path, terminal, aab_doc):
    path = tmp_path / "my.json"
    exit_file, err_file = tmp_path / "exit", tmp_path / "stderr"
    good = json.dumps(aab_doc, indent=1)
    path.write_text(good, encoding="utf-8")
    # COLUMNS and LINES, if the test runner set them, would override the terminal's own size;
    # NO_COLOR: the marks must show without colour.
    command = (f"cd {ROOT} && env -u COLUMNS -u LINES NO_COLOR=1 {sys.executable} -m handwired watch {path} "
               "--step proj --step probs "
               f"2> {err_file}; echo $? > {exit_file}")
    term = terminal(command)

    first = term.wait_for(lambda s: "PASS check, every context" in s, "the first verdict")
    assert "[proj] Output projection" in first and "1024" in first
    assert len(first.splitlines()) <= 40 and "… below: [probs] · narrow the view" in first  # cropped, saying so

    # An edit: the changed cells are marked, the edit is named.
    aab_doc["blocks"][0]["attn"]["c_proj"]["b"][5] = 1000
    path.write_text(json.dumps(aab_doc, indent=1), encoding="utf-8")
    edited = term.wait_for(lambda s: "•1000" in s, "the marked cells of the edit")
    assert "blocks[0].attn.c_proj.b.a 1024 → 1000" in edited and "•-24" in edited

    # A partial write, as an editor flushing half the file: the error shows, the last good view stays.
    text = json.dumps(aab_doc, indent=1).replace("1000", "999")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text[: len(text) // 2])
        handle.flush()
        half = term.wait_for(lambda s: "does not load" in s, "the error of the half-written file")
        assert "not valid JSON" in half and "Still watching" in half and "•1000" in half
        handle.write(text[len(text) // 2 :])
    whole = term.wait_for(lambda s: "•999" in s and "does not load" not in s, "the view of the completed write")
    assert "blocks[0].attn.c_proj.b.a 1000 → 999" in whole

    # An editor's save by rename: the file is briefly missing, then replaced.
    path.unlink()
    term.wait_for(lambda s: "cannot read" in s, "the missing file")
    spare = tmp_path / ".my.json.tmp"
    spare.write_text(good, encoding="utf-8")
    os.replace(spare, path)
    back = term.wait_for(lambda s: "•1024" in s and "cannot read" not in s, "the view after the rename")
    assert "PASS check, every context" in back

    # A file that parses but is not a valid model: every problem, in place.
    path.write_text(good.replace('"n_ctx": 5', '"n_ctx": "five"'), encoding="utf-8")
    term.wait_for(lambda s: "n_ctx" in s and "does not load" in s, "the validation error")

    term.tmux("send-keys", "-t", "watch", "C-c")
    status = wait_until(lambda: exit_file.exists() and exit_file.read_text().strip(), "watch's exit after Ctrl-C")
    assert status == "0"
    assert "Traceback" not in err_file.read_text()


def test_watch_of_a_huge_valid_model_shows_it_is_working_and_loads_the_newest_save(tmp_path, terminal):
    """A 4 KB model of n_embd 1024 with a 4,096-token example: the view is refused with its estimate; a save
    shows that it is loading while it loads, and a second save made meanwhile wins. (How soon the sign shows is
    measured by benchmarks/bench_watch.py.)"""
    doc = {"format": "handwired/1", "vocab": ["a", "b"], "n_ctx": 4096, "n_embd": 1024, "target": "ab",
           "example": "ab" * 2048, "wte": {"a": {"0": 1}}, "wpe": {"0": {"1": 1}},
           "blocks": [{"attn": {"c_attn": {"w": {"0": {"q0": 1}}}, "c_proj": {"w": {"z0": {"0": 1}}}}}]}
    path = tmp_path / "giant.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    command = f"cd {ROOT} && env -u COLUMNS -u LINES NO_COLOR=1 {sys.executable} -m handwired watch {path}"
    term = terminal(command)
    flat = lambda screen: " ".join(screen.split())  # noqa: E731  the header wraps at the window's width
    term.wait_for(lambda s: "4,096 tokens at n_embd 1024: about" in flat(s) and "loaded in" in flat(s),
                  "the estimate's refusal")
    path.write_text(json.dumps({**doc, "example": "abababab"}), encoding="utf-8")
    term.wait_for(lambda s: "loading the save of" in flat(s), "a sign of work after the save", settled=False)
    path.write_text(json.dumps({**doc, "example": "bababa"}), encoding="utf-8")  # saved again while loading
    newest = term.wait_for(lambda s: "(6 tokens)" in flat(s) and "loading" not in flat(s), "the newest save")
    assert "bababa" in newest and "abababab" not in newest
