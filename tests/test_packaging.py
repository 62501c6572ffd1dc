"""The package as it is shipped: what the sdist carries (so its own tests and the README's links work from it),
its metadata, and the marker that says it is typed."""

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib comes with Python 3.11; the other versions run the rest")
ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_sdist_carries_every_folder_the_tests_and_the_readme_read():
    included = set(PYPROJECT["tool"]["hatch"]["build"]["targets"]["sdist"]["include"])
    needed = {"handwired", "weights", "puzzles", "tests", "benchmarks", "docs", "examples", ".ci", "README.md",
              "LICENSE"}
    assert needed <= included, needed - included
    for path in included:
        assert (ROOT / path).exists(), path


def test_the_metadata_says_what_the_package_is():
    project = PYPROJECT["project"]
    assert "Typing :: Typed" in project["classifiers"]
    assert {f"Programming Language :: Python :: 3.{minor}" for minor in (10, 11, 12, 13)} <= set(project["classifiers"])
    assert "interpretability" in project["keywords"] and "transformerlens" in project["keywords"]
    assert {"nbclient", "ipykernel"} <= {requirement.split(">")[0] for requirement in
                                         project["optional-dependencies"]["test"]}


def test_the_package_says_it_is_typed():
    assert (ROOT / "handwired" / "py.typed").is_file()
    assert PYPROJECT["tool"]["pyright"]["typeCheckingMode"] == "basic"
    assert "pyright" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("link", ["docs/python-api.md", "examples/notebook.ipynb"])
def test_the_readme_links_the_python_api(link):
    assert f"]({link})" in (ROOT / "README.md").read_text(encoding="utf-8")
