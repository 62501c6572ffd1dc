"""Where handwired's bundled files are: inside the installed package, or at the top of a checkout."""

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # a plain path: importlib.resources would cost every command ~3 ms


def bundled_folder(name: str) -> Path:
    """A folder of bundled files (weights, puzzles): inside the installed package, or at the top of a checkout."""
    packaged = PACKAGE / name
    return packaged if packaged.is_dir() else PACKAGE.parent / name


def json_files(folder: Path) -> dict[str, Path]:
    """Name (the file's stem) -> path, for every .json file directly in ``folder``."""
    if not folder.is_dir():
        return {}
    return {path.stem: path for path in sorted(folder.glob("*.json"))}
