"""Writing files: the umask's mode for new files, the old mode kept, links written through, only regular files
replaced, ``-`` for stdout, and an export that replaces only its own files."""

import json
import os
import stat
from pathlib import Path

import pytest
from test_cli import invoke, user_error

from handwired.interop import FILES
from handwired.weightfile import load


@pytest.fixture
def umask():
    """Run a test under a chosen umask; the old one is put back."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_every_file_handwired_creates_gets_the_mode_the_umask_gives(tmp_path, umask, mask):
    umask(mask)
    expected = 0o666 & ~mask
    assert invoke("puzzles", "start", "aab", "-o", str(tmp_path / "start.json")).exit_code == 0
    assert invoke("puzzles", "new", "-o", str(tmp_path / "statement.json")).exit_code == 0
    assert invoke("weights", "new", "-o", str(tmp_path / "new.json")).exit_code == 0
    assert invoke("weights", "convert", "aab", "--to", "dense", "-o", str(tmp_path / "dense.json")).exit_code == 0
    pictures = ["--svg", str(tmp_path / "p.svg"), "--html", str(tmp_path / "p.html")]
    assert invoke("predict", "aab", *pictures).exit_code == 0
    assert invoke("export", "aab", "-o", str(tmp_path / "tl")).exit_code == 0
    assert invoke("import", str(tmp_path / "tl"), "-o", str(tmp_path / "back.json")).exit_code == 0
    files = ["start.json", "statement.json", "new.json", "dense.json", "p.svg", "p.html", "back.json"]
    files += [f"tl/{name}" for name in FILES]
    assert {name: oct(mode(tmp_path / name)) for name in files} == {name: oct(expected) for name in files}
    assert mode(tmp_path / "tl") == 0o777 & ~mask  # the folder too


def test_a_replaced_file_keeps_its_own_mode(tmp_path, umask):
    umask(0o022)
    path = tmp_path / "mine.json"
    assert invoke("weights", "new", "-o", str(path)).exit_code == 0
    path.chmod(0o600)
    assert invoke("weights", "new", "-o", str(path), "--vocab", "abc", "--force").exit_code == 0
    assert mode(path) == 0o600 and list(load(str(path)).vocab) == ["a", "b", "c"]


def test_a_link_is_written_through_to_its_file_and_stays_a_link(tmp_path):
    target, link = tmp_path / "target.json", tmp_path / "link.json"
    link.symlink_to(target.name)
    assert invoke("weights", "new", "-o", str(link)).exit_code == 0  # a link to nothing yet: its file is made
    assert link.is_symlink() and list(load(str(target)).vocab) == ["a", "b"]
    assert user_error("weights", "new", "-o", str(link), "--vocab", "abc") == (
        f"error: {link} (a link to {target}): already exists; use --force to replace it")
    assert invoke("weights", "new", "-o", str(link), "--vocab", "abc", "--force").exit_code == 0
    assert link.is_symlink() and list(load(str(target)).vocab) == ["a", "b", "c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "target.json"]  # no temporary left


@pytest.mark.parametrize("make,kind", [("fifo", "a FIFO (named pipe)"), ("device", "a device")])
def test_a_device_or_fifo_is_never_replaced_even_with_force(tmp_path, make, kind):
    if make == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    else:
        path = Path("/dev/null")
    for args in (["weights", "new", "-o", str(path)], ["predict", "aab", "--svg", str(path)],
                 ["puzzles", "start", "aab", "-o", str(path)]):
        assert user_error(*args, "--force") == (
            f"error: {path}: is {kind}; handwired writes only regular files, never replacing anything else")
    assert stat.S_ISFIFO(path.stat().st_mode) if make == "fifo" else stat.S_ISCHR(path.stat().st_mode)


def test_a_link_to_a_device_is_refused_naming_both(tmp_path):
    link = tmp_path / "out.svg"
    link.symlink_to("/dev/null")
    assert user_error("predict", "aab", "--svg", str(link), "--force") == (
        f"error: {link} (a link to /dev/null): is a device; handwired writes only regular files, "
        "never replacing anything else")
    assert link.is_symlink()


def test_a_folder_is_refused_even_with_force(tmp_path):
    assert user_error("weights", "new", "-o", str(tmp_path), "--force") == (
        f"error: {tmp_path}: is a folder; give a file name")


def test_a_dash_writes_the_file_to_stdout_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("puzzles", "start", "aab", "-o", "-")
    assert result.exit_code == 0 and json.loads(result.stdout)["vocab"] == ["a", "b"]
    assert result.stderr == ""  # no "wrote …" line: the file is the whole output
    result = invoke("weights", "convert", "aab", "--to", "dense", "-o", "-")
    assert result.exit_code == 0 and json.loads(result.stdout)["wte"][1] == [0, 0, 0, 0, 0, 0, 1, 0]
    result = invoke("predict", "aab", "--svg", "-")
    assert result.exit_code == 0 and result.stdout.startswith("<svg") and result.stdout.rstrip().endswith("</svg>")
    result = invoke("predict", "aab", "--html", "-")
    assert result.exit_code == 0 and result.stdout.lstrip().startswith("<!DOCTYPE html>")
    assert user_error("predict", "aab", "--svg", "-", "--html", "-") == (
        "error: --svg and --html: both are -; choose two files")
    assert invoke("export", "aab", "-o", "tl").exit_code == 0
    result = invoke("import", "tl", "-o", "-")
    assert result.exit_code == 0 and json.loads(result.stdout)["vocab"] == ["a", "b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tl"]  # no file named "-"


def test_export_force_replaces_only_its_own_files_never_a_folder_of_that_name(tmp_path):
    out = tmp_path / "out"
    assert invoke("export", "aab", "-o", str(out)).exit_code == 0
    (out / "README.md").unlink()
    (out / "README.md").mkdir()
    (out / "README.md" / "my-notes.txt").write_text("mine")
    assert user_error("export", "aab", "-o", str(out), "--force") == (
        f"error: {out}: holds 'README.md', which is a folder, not the file an export writes; "
        "not replacing it, even with --force")
    assert (out / "README.md" / "my-notes.txt").read_text() == "mine"
    (out / "README.md" / "my-notes.txt").unlink()
    (out / "README.md").rmdir()
    (out / "README.md").symlink_to(tmp_path / "elsewhere.md")
    assert "holds 'README.md', which is a symbolic link" in user_error("export", "aab", "-o", str(out), "--force")
