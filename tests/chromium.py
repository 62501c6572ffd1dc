"""Headless Chromium driven from the standard library: the DevTools protocol over --remote-debugging-pipe.

Chromium reads the protocol's JSON commands on its file descriptor 3 and writes its answers and events on 4,
each message ending with a NUL byte. :class:`Browser` opens a page, runs JavaScript in it and reads the result,
which is all a test of a live page needs: the page's own redraws are waited for as events in its DOM
(tests/waiting.py), never by the clock.

Where no Chromium is installed the tests that use it are skipped, with the reason; CI installs Debian's and sets
HANDWIRED_REQUIRE_CHROMIUM=1, and then a missing browser fails them instead.
"""

import fcntl
import json
import os
import select
import shutil
import subprocess
from pathlib import Path

import pytest
from waiting import DEADLINE

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def executable(unseen: str = "the page is not loaded in a browser") -> str:
    """Chromium's path; without one the test is skipped, saying what goes ``unseen`` (fails where CI requires it)."""
    found = next(filter(None, map(shutil.which, BROWSERS)), None)
    if found is None:
        if os.environ.get("HANDWIRED_REQUIRE_CHROMIUM"):
            pytest.fail("HANDWIRED_REQUIRE_CHROMIUM is set and no Chromium is installed")
        pytest.skip(f"no Chromium installed (apt-get install chromium): {unseen}")
    return found


def _high(fd: int) -> int:
    """``fd`` moved above the descriptors the child is given (3 and 4), closed on exec until it is placed."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100)
    os.close(fd)
    return moved


class Browser:
    """One headless Chromium with a profile of its own, and one page in it (see :meth:`open`)."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 800) -> None:
        commands_read, self._commands = map(_high, os.pipe())
        self._answers, answers_write = map(_high, os.pipe())

        def place() -> None:  # in the child, before exec: the pipe ends where Chromium looks for them
            os.dup2(commands_read, 3)
            os.dup2(answers_write, 4)

        self.process = subprocess.Popen(
            [executable(), "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             f"--user-data-dir={profile}", "--no-first-run", "--no-default-browser-check",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=place)
        os.close(commands_read)
        os.close(answers_write)
        self._next = 0
        self._buffer = b""
        self.session: str | None = None

    def send(self, method: str, session: str | None = None, **params) -> dict:
        """One command; its result (an error from the browser fails the test)."""
        self._next += 1
        message: dict = {"id": self._next, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._next:
                assert "error" not in answer, f"{method}: {answer['error']}"
                return answer["result"]

    def _read(self) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._answers], [], [], DEADLINE)
            assert ready, f"Chromium said nothing for {DEADLINE:.0f} s"
            chunk = os.read(self._answers, 1 << 16)
            assert chunk, f"Chromium closed its pipe (exit code {self.process.poll()})"
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str) -> None:
        """Open ``url`` in a new page, which :meth:`evaluate` then runs in."""
        target = self.send("Target.createTarget", url=url)["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-like values only)."""
        result = self.send("Runtime.evaluate", self.session, expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                self.send("Browser.close")
        except (AssertionError, OSError):
            self.process.kill()
        finally:
            self.process.wait(timeout=DEADLINE)
            os.close(self._commands)
            os.close(self._answers)
