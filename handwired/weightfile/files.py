"""Finding and loading weight files: a path, or the name of a model bundled with handwired."""

from pathlib import Path

from handwired.defaults import DEFAULT_MODEL
from handwired.errors import HandwiredError
from handwired.weightfile.checker import known
from handwired.weightfile.jsonfile import check_path, read_json
from handwired.weightfile.locations import bundled_folder, json_files
from handwired.weightfile.model import Model
from handwired.weightfile.parse import parse


def bundled_dir() -> Path:
    """Where the bundled models are: inside the installed package, or weights/ in a checkout."""
    return bundled_folder("weights")


def bundled_models() -> dict[str, Path]:
    return json_files(bundled_dir())


def resolve(spec: str) -> Path:
    """A weight file named by path or by a bundled model's name -> the file."""
    check_path(spec)
    path = Path(spec)
    if path.is_file():
        return path
    models = bundled_models()
    if spec in models:
        return models[spec]
    if path.exists():
        raise HandwiredError(f"{spec}: is not a file")
    names = ", ".join(models) or "none"
    raise HandwiredError(f"{spec}: no such file, and no bundled model of that name (bundled: {names})")


def validate(spec: str) -> tuple[Path, Model | None, list[str]]:
    """Read a weight file named by path or bundled name: its path, the model if valid, every problem."""
    path = resolve(spec)
    model, problems = parse(read_json(path), source=str(path))
    return path, model, problems


def load(spec: str = DEFAULT_MODEL) -> Model:
    """Read and validate a weight file named by path or bundled name; raise HandwiredError if it is wrong."""
    path, model, problems = validate(spec)
    if problems:
        more = f" (and {len(problems) - 1} more: handwired weights validate {path})" if len(problems) > 1 else ""
        raise HandwiredError(f"{path}: {problems[0]}{more}")
    return known(model)
