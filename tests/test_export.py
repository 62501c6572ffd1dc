"""--svg / --html on every command that renders: the saved picture holds the numbers and a fixed width."""

import html
import re
from pathlib import Path

import pytest
from test_cli import invoke, runner, user_error

from handwired.cli import app
from handwired.views.display import EXPORT_MAX_WIDTH, EXPORT_WIDTH

SOLUTIONS = Path(__file__).resolve().parent.parent / "puzzles" / "solutions"


def html_lines(path) -> list[str]:
    """The text of a saved HTML page, line by line, as a reader sees it."""
    pre = re.search(r"<pre[^>]*>(.*)</pre>", path.read_text(encoding="utf-8"), re.S).group(1)
    return html.unescape(re.sub(r"<[^>]+>", "", pre)).splitlines()


def svg_text(path) -> str:
    """The characters an SVG picture draws, in order."""
    return html.unescape("".join(re.findall(r"<text[^>]*>(.*?)</text>", path.read_text(encoding="utf-8"), re.S)))


COMMANDS = {
    "predict": (["predict", "aabaa"], ["aabaa → b", "1024"]),
    "check": (["check", "--exhaustive"], ["62", "contexts checked", "margin"]),
    "explain": (["explain", "--step", "pattern"], ["hook_pattern", "≈0"]),
    "weights show": (["weights", "show"], ["blocks[0].attn.c_proj.b", "1024"]),
    "attend": (["attend", "--q", "62", "--k", "60,64,68", "--v", "110,115,126", "--score", "gaussian"],
               ["112.500", "5.6e-8"]),
    "diff": (["diff", "aab", "aab", "--sample", "50"], ["no weight differs", "50 random contexts"]),
    "puzzles check": (["puzzles", "check", "ab", str(SOLUTIONS / "ab.json")], ["puzzle ab", "contexts checked"]),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_rendering_command_saves_svg_and_html(tmp_path, name):
    args, expected = COMMANDS[name]
    svg, page = tmp_path / "out.svg", tmp_path / "out.html"
    result = invoke(*args, "--svg", str(svg), "--html", str(page))
    assert result.exit_code == 0, result.output
    assert f"saved {svg}" in result.stderr and f"saved {page}" in result.stderr
    text = "\n".join(html_lines(page))
    for number in expected:
        assert number in text
        assert number in svg_text(svg).replace("\xa0", " ")
    assert svg.read_text(encoding="utf-8").startswith("<svg")
    # the terminal output is the same view
    assert expected[0] in result.stdout


@pytest.mark.parametrize("name", COMMANDS)
def test_saved_picture_does_not_depend_on_the_terminal_width(tmp_path, name):
    args, _ = COMMANDS[name]
    pictures = []
    for columns in ("50", "250"):
        page, svg = tmp_path / f"{columns}.html", tmp_path / f"{columns}.svg"
        home = tmp_path / f"home{columns}"  # a fresh progress file each time: puzzles check says "new best" once
        result = runner.invoke(app, [*args, "--html", str(page), "--svg", str(svg)],
                               env={"COLUMNS": columns, "HANDWIRED_HOME": str(home)})
        assert result.exit_code == 0, result.output
        pictures.append((page.read_text(encoding="utf-8"), svg.read_text(encoding="utf-8")))
        assert max(len(line) for line in html_lines(page)) <= EXPORT_MAX_WIDTH
    assert pictures[0] == pictures[1]


def test_a_wide_view_is_drawn_at_the_export_width_not_the_terminal_width(tmp_path):
    # the pattern panel's caption is wider than 120 columns: on a 60-column terminal it wraps, in the picture not
    page = tmp_path / "pattern.html"
    result = runner.invoke(app, ["explain", "--step", "pattern", "--html", str(page)], env={"COLUMNS": "60"})
    assert result.exit_code == 0
    assert max(len(line) for line in html_lines(page)) >= EXPORT_WIDTH
    assert max(len(line) for line in result.stdout.splitlines()) <= 60


def test_a_table_wider_than_the_terminal_is_saved_whole_and_unfolded(tmp_path):
    weights = tmp_path / "wide.json"
    assert invoke("weights", "new", "-o", str(weights), "--n-embd", "30").exit_code == 0
    page = tmp_path / "wide.html"
    result = runner.invoke(app, ["explain", "ab", "-w", str(weights), "--step", "embed", "--html", str(page)],
                           env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "--all to show" in result.stdout  # the terminal folds the all-zero starter
    lines = html_lines(page)
    assert not any("page 1 of" in line or "--all to show" in line for line in lines)
    header = next(line for line in lines if "pos ╲ dim" in line)
    assert all(f" d{i} " in header for i in range(30))  # every column on one line: nothing paged or cut


def test_a_failing_check_still_saves_its_report(tmp_path, aab_doc, write_json):
    aab_doc["blocks"][0]["attn"]["c_proj"]["b"][5] = 0  # the a-bias gone: ties everywhere
    weights = write_json(aab_doc)
    page = tmp_path / "fail.html"
    result = invoke("check", "-w", str(weights), "--html", str(page))
    assert result.exit_code == 1
    assert "failures" in "\n".join(html_lines(page))


def test_export_refusals(tmp_path):
    existing = tmp_path / "there.svg"
    existing.write_text("mine")
    assert "already exists; use --force" in user_error("predict", "ab", "--svg", str(existing))
    assert existing.read_text() == "mine"
    assert invoke("predict", "ab", "--svg", str(existing), "--force").exit_code == 0
    assert existing.read_text().startswith("<svg")
    same = tmp_path / "same"
    assert "choose two files" in user_error("weights", "show", "--svg", str(same), "--html", str(same))
    assert "choose one" in user_error("predict", "ab", "--json", "--svg", str(tmp_path / "p.svg"))
    assert "choose one" in user_error("check", "--json", "--html", str(tmp_path / "c.html"))
    assert "choose one" in user_error("weights", "show", "--sparse", "--html", str(tmp_path / "c.html"))
    assert not (tmp_path / "p.svg").exists() and not (tmp_path / "c.html").exists()
