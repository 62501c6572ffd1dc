import json
import copy
from pathlib import Path

import pytest

# The bundled aab model is written sparse; this dense copy of it keeps the tests honest about both forms.
AAB_FILE = Path(__file__).resolve().parent / "data" / "aab_dense.json"


@pytest.fixture
def aab_doc():
    """The bundled aab weight file as a fresh, editable JSON document."""
    return copy.deepcopy(json.loads(AAB_FILE.read_text(encoding="utf-8")))


@pytest.fixture
def write_json(tmp_path):
    def write(doc, name="model.json"):
        path = tmp_path / name
        path.write_text(json.dumps(doc), encoding="utf-8")
        return path

    return write
