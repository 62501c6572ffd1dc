"""The example notebook runs from top to bottom in a real Jupyter kernel, headless, and shows its results as
HTML. Needs nbclient and ipykernel (the test extra); without them the test says so and skips."""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed: pip install 'handwired[test]'")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed: pip install 'handwired[test]'")
pytest.importorskip("ipykernel", reason="ipykernel is not installed: pip install 'handwired[test]'")

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "notebook.ipynb"


def test_the_example_notebook_runs_without_an_error_and_shows_html(tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "kept clean"
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()  # raises on any error
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    html = [output["data"]["text/html"] for output in outputs if "text/html" in output.get("data", {})]
    assert len(html) >= 6  # the puzzle, the model, the pattern, both reports, the verdict
    assert any("Solved puzzle" in page for page in html)
    # rich renders into the HTML only: nothing printed behind the notebook's back as terminal text
    assert not [output for output in outputs if output.output_type == "display_data"
                and "text/html" not in output.get("data", {})]
