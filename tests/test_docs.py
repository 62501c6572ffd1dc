"""Every command the README and the docs show is run here, so the docs cannot drift from what handwired does.

In a fenced block, a line ``handwired …`` is a command to run; ``$ handwired …`` is a transcript,
whose following lines (up to the next ``$``) must appear in what the command prints; a line
``(exit code N)`` among them is the exit code it must end with (2 when it prints an error). A block
``json file=NAME`` is a file the page shows: it is written before the page's commands run, in a
folder of the page's own, where the commands then run in order. ``watch`` needs a terminal and runs
in tmux (``watch --page`` in a process of its own, its page fetched); benchmark commands run in CI
(``.ci/run``), which the last tests hold to.
"""

import re
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_cli import invoke

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md",
         ROOT / "puzzles" / "README.md"]
BLOCK = re.compile(r"^```([^\n]*)\n(.*?)^```", re.M | re.S)
CHECKS = ("check", "puzzles check")  # commands whose exit code 1 is a verdict, not a mistake


@dataclass
class Command:
    line: str
    expected: list[str] = field(default_factory=list)  # a transcript's output lines

    @property
    def args(self) -> list[str]:
        return shlex.split(self.line, comments=True)[1:]

    @property
    def is_watch(self) -> bool:
        return self.args[:1] == ["watch"]


@dataclass
class Page:
    path: Path
    files: dict[str, str]
    commands: list[Command]
    benchmarks: list[str]
    shell: list[str]  # other command lines: set-up and installs


def read_page(path: Path) -> Page:
    page = Page(path, {}, [], [], [])
    for info, body in BLOCK.findall(path.read_text(encoding="utf-8")):
        named = re.fullmatch(r"\w+ file=(\S+)", info.strip())
        if named:
            page.files[named.group(1)] = body
            continue
        if info.strip() not in ("", "console"):
            continue
        for line in body.splitlines():
            if line.startswith("$ handwired "):
                page.commands.append(Command(line[2:]))
            elif line.startswith("handwired "):
                page.commands.append(Command(line))
            elif line.startswith(".venv/bin/python benchmarks/"):
                page.benchmarks.append(line.split("#")[0].strip())
            elif line.startswith(("python3 -m venv", ".venv/bin/pip")):
                page.shell.append(line)
            elif page.commands and page.commands[-1].line and line.strip() and body.lstrip().startswith("$"):
                page.commands[-1].expected.append(line)
    return page


READ = {path.relative_to(ROOT).as_posix(): read_page(path) for path in PAGES}


def flat(text: str) -> str:
    return " ".join(text.split())


def prepare(page: Page, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in page.files.items():
        (folder / name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("name", [name for name, page in READ.items() if page.commands])
def test_every_command_a_page_shows_runs_as_shown(name, tmp_path, monkeypatch):
    page = READ[name]
    prepare(page, tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "300")  # transcripts are compared line by line: no wrapping
    for command in page.commands:
        if command.is_watch:
            continue  # test_watch_in_the_docs_runs_in_a_terminal
        result = invoke(*command.args)
        out = flat(result.stdout + result.stderr)
        allowed = {0, 1} if " ".join(command.args[:2]).startswith(CHECKS) or command.args[:1] == ["check"] else {0}
        if any(line.startswith("error:") for line in command.expected):
            allowed = {2}
        stated = [int(code) for line in command.expected for code in re.findall(r"^\(exit code (\d+)\)$", line)]
        allowed = set(stated) or allowed
        assert result.exit_code in allowed, f"{name}: {command.line}\n{result.output}"
        for line in command.expected:
            if re.fullmatch(r"\(exit code \d+\)", line):
                continue
            assert flat(line) in out, f"{name}: {command.line} does not print {line!r}; it prints:\n{result.output}"


WATCHES = [(name, command.line) for name, page in READ.items() for command in page.commands
           if command.is_watch and "--page" not in command.args]
PAGES_SERVED = [(name, command.line) for name, page in READ.items() for command in page.commands
                if command.is_watch and "--page" in command.args]


@pytest.mark.parametrize("name,line", WATCHES)
def test_watch_in_the_docs_runs_in_a_terminal(name, line, tmp_path):
    from test_watch_terminal import Terminal  # skips the module when tmux is missing (and fails under CI)
    from waiting import wait_until

    prepare(READ[name], tmp_path)
    args = " ".join(shlex.quote(arg) for arg in Command(line).args)
    exit_file = tmp_path / "exit"
    term = Terminal(tmp_path, f"cd {shlex.quote(str(tmp_path))} && env -u COLUMNS -u LINES "
                              f"{shlex.quote(sys.executable)} -m handwired {args}; echo $? > {exit_file}")
    try:
        term.wait_for(lambda screen: "handwired watch" in screen and ("PASS" in screen or "FAIL" in screen),
                      f"{line} drawing its verdict")
        term.tmux("send-keys", "-t", "watch", "C-c")
        status = wait_until(lambda: exit_file.exists() and exit_file.read_text().strip(), f"{line} exiting on Ctrl-C")
        assert status == "0"
    finally:
        term.close()


@pytest.mark.parametrize("name,line", PAGES_SERVED)
def test_watch_page_in_the_docs_serves_its_page(name, line, tmp_path, monkeypatch):
    """``watch --page`` needs no terminal: it runs in a process of its own on the file the page's own commands made
    (the one before it that writes it with -o), serves the page, prints the first load's verdict, and Ctrl-C ends it
    with exit code 130."""
    import signal
    import subprocess
    import urllib.request

    from test_page import read_line
    from waiting import DEADLINE

    page = READ[name]
    prepare(page, tmp_path)
    monkeypatch.chdir(tmp_path)
    args = Command(line).args
    for command in page.commands[:[c.line for c in page.commands].index(line)]:
        if any(flag == "-o" and made in args for flag, made in zip(command.args, command.args[1:])):
            assert invoke(*command.args).exit_code == 0, command.line
    process = subprocess.Popen([sys.executable, "-m", "handwired", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        first = read_line(process)
        assert "the page is at http://127.0.0.1:" in first, first + process.stderr.read()
        assert re.match(r"\d\d:\d\d:\d\d \S", read_line(process))  # the first load's verdict, or why there is none
        address = first.split("the page is at ")[1].split()[0]
        with urllib.request.urlopen(address, timeout=DEADLINE) as response:
            assert response.status == 200 and b"handwired watch" in response.read()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=DEADLINE) == 130
    finally:
        if process.poll() is None:
            process.kill()


def test_every_page_shows_commands_and_links_that_exist():
    commands = sum(len(page.commands) for page in READ.values())
    assert commands > 40  # the probe is real: it finds the tour, the game, the transcripts
    for name, page in READ.items():
        for link in re.findall(r"\]\(([^)#]+)\)", page.path.read_text(encoding="utf-8")):
            if not link.startswith("http"):
                assert (page.path.parent / link).exists(), f"{name} links to {link}, which does not exist"


def test_the_readme_is_short_and_starts_with_the_two_commands_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    first_block = BLOCK.search(readme).group(2).splitlines()
    assert len(first_block) == 2 and first_block == READ["README.md"].shell[:2]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in first_block:
        assert command in ci, f"CI does not run the README's {command!r}"


def test_every_benchmark_the_docs_show_is_run_by_ci():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    shown = [line for page in READ.values() for line in page.benchmarks]
    assert len(shown) >= 5
    for line in shown:
        script = line.split()[1]
        assert f".venv/bin/python {script} --quick" in ci, f"CI does not run {script} (quick)"
        assert (ROOT / script).exists()


def test_tmux_is_what_watch_needs_here():
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed: the docs' watch commands are not run")
    assert WATCHES, "the docs show watch; its commands must be found"


PYCON = {name: [body for info, body in BLOCK.findall((ROOT / name).read_text(encoding="utf-8"))
                if info.strip() == "pycon"] for name in READ}


@pytest.mark.parametrize("name", [name for name, blocks in PYCON.items() if blocks])
def test_every_python_example_a_page_shows_prints_what_it_shows(name, tmp_path, monkeypatch):
    """A ``pycon`` block is a Python session: its ``>>>`` lines run in order, one namespace per page, and each
    must print what the page shows after it (doctest's rules, whitespace normalised)."""
    import doctest

    monkeypatch.chdir(tmp_path)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    namespace: dict = {}
    for number, body in enumerate(PYCON[name]):
        test = parser.get_doctest(body, namespace, f"{name} block {number + 1}", name, 0)
        runner.run(test, clear_globs=False)
        namespace = test.globs  # a DocTest runs on a copy: the next block goes on from this one's
    failed, tried = runner.summarize(verbose=False)
    assert tried > 0 and failed == 0, f"{name}: {failed} of {tried} examples print something else (above)"
