"""The example notebook runs from top to bottom in a real Jupyter kernel, headless, shows its results as HTML, and
gives what its committed outputs show (compared loosely: the same outputs of the same kinds, the same printed text,
the same one-line reprs; HTML by the text it holds). Needs nbclient and ipykernel (the test extra); without them
the test says so and skips.

To refresh the committed outputs after changing the notebook: ``python tests/test_notebook.py``."""

import copy
import html
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed: pip install 'handwired[test]'")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed: pip install 'handwired[test]'")
pytest.importorskip("ipykernel", reason="ipykernel is not installed: pip install 'handwired[test]'")

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "notebook.ipynb"


def executed(notebook, folder: Path):
    notebook = copy.deepcopy(notebook)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(folder)}}).execute()  # raises on any error
    return notebook


def loosely(output) -> tuple:
    """What an output shows, with the markup and whitespace of its HTML left out."""
    data = output.get("data", {})
    page = data.get("text/html", "")
    text = output.get("text", "") or data.get("text/plain", "")
    words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    return output.output_type, tuple(sorted(data)), " ".join(text.split()), words


def test_the_example_notebook_runs_without_an_error_and_shows_what_it_has_committed(tmp_path):
    committed = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in committed.cells if cell.cell_type == "code"]
    assert all(cell.get("outputs") for cell in code), "committed with its outputs: python tests/test_notebook.py"
    shown = "".join(str(output) for cell in code for output in cell.outputs)
    assert "/work/" not in shown and "site-packages" not in shown and str(Path.home()) not in shown
    notebook = executed(committed, tmp_path)
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    html_pages = [output["data"]["text/html"] for output in outputs if "text/html" in output.get("data", {})]
    assert len(html_pages) >= 6  # the puzzle, the model, the pattern, both reports, the verdict
    assert any("Solved puzzle" in page for page in html_pages)
    # rich renders into the HTML only: nothing printed behind the notebook's back as terminal text
    assert not [output for output in outputs if output.output_type == "display_data"
                and "text/html" not in output.get("data", {})]
    for before, after in zip(code, [cell for cell in notebook.cells if cell.cell_type == "code"]):
        assert [loosely(o) for o in after.outputs] == [loosely(o) for o in before.outputs], before.source


if __name__ == "__main__":  # pragma: no cover - refreshes the committed outputs
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        fresh = executed(nbformat.read(NOTEBOOK, as_version=4), Path(folder))
    nbformat.write(fresh, NOTEBOOK)
    sys.exit(0)
