"""The TransformerLens folder: writing it (atomically, byte for byte the same each time) and reading it back.

A folder holds ``config.json`` (the ``HookedTransformerConfig`` arguments),
``model.safetensors`` (the state dict), ``vocab.json`` (token id -> character),
``handwired.json`` (the labels TransformerLens has no place for: dims, name,
example, target) and ``README.md`` (how to load it).
"""

import json
import math
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from handwired.errors import HandwiredError
from handwired.interop import mapping
from handwired.interop.readme import readme
from handwired.weightfile import Model, parse, read_json
from handwired.weightfile.checker import Checker, known
from handwired.weightfile.forms import document
from handwired.weightfile.jsonfile import MAX_FILE_BYTES, check_path, kind_of
from handwired.weightfile.puzzlekey import moved
from handwired.weightfile.writing import dumps, umask_mode

CONFIG, WEIGHTS, VOCAB, LABELS, README = "config.json", "model.safetensors", "vocab.json", "handwired.json", "README.md"
FILES = (CONFIG, WEIGHTS, VOCAB, LABELS, README)
MAX_WEIGHTS_BYTES = 4 * MAX_FILE_BYTES  # float64 tensors of a model handwired can still write as JSON
INSTALL = "pip install 'handwired[export]'"


def safetensors_numpy():
    """safetensors' numpy half (no torch needed); a one-line message if it is not installed."""
    try:
        import safetensors.numpy
    except ImportError:
        raise HandwiredError(f"TransformerLens folders need the safetensors package: {INSTALL}") from None
    return safetensors.numpy


# ---------------------------------------------------------------- export


def export_files(model: Model, folder: Path | None = None) -> dict[str, bytes]:
    """Every file of the folder, as bytes; the same model always gives the same bytes."""
    save = safetensors_numpy().save
    config = mapping.to_config(model)
    state = mapping.to_state_dict(model)
    labels = {"name": model.name, "description": model.description,
              "dims": list(model.dims), "example": model.example, "target": model.target,
              "puzzle": model.puzzle if folder is None or model.puzzle is None  # a statement's path: from the folder
              else moved(model.puzzle, Path(model.source).parent, folder),
              "heads": _head_names(model),  # block number -> its heads' q, k, v labels, where the file names them
              # each MLP's hidden units by name and number: TransformerLens pads them to one width, unnamed
              "hidden": {str(i): list(model.axes(f"blocks[{i}].mlp.c_fc.w")[1].labels)
                         for i, block in enumerate(model.params["blocks"]) if "mlp" in block}}
    return {
        CONFIG: _json(config),
        WEIGHTS: save(state),
        VOCAB: _json({str(i): token for i, token in enumerate(model.vocab)}),
        LABELS: _json(labels),
        README: readme(model, config).encode("utf-8"),
    }


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_folder(folder: Path, files: dict[str, bytes], force: bool = False) -> None:
    """Build the folder beside its place and rename it in, so no half-written folder is ever seen.

    ``force`` replaces an earlier export, never a folder holding anything an export does not write.
    """
    check_output_folder(folder, force)
    parent = folder.parent
    temp = aside = None
    try:
        temp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=parent))
        for name, data in files.items():
            (temp / name).write_bytes(data)
        temp.chmod(umask_mode(0o777))  # mkdtemp makes it private; an export is an ordinary folder
        if folder.exists():
            aside = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".old", dir=parent))
            os.rename(folder, aside / folder.name)
        os.rename(temp, folder)
    except BaseException as error:
        if aside is not None and (aside / folder.name).exists() and not folder.exists():
            os.rename(aside / folder.name, folder)  # put the earlier export back
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
        if isinstance(error, OSError):
            raise HandwiredError(f"{folder}: cannot write: {error.strerror or error}") from None
        raise
    finally:
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)


def check_output_folder(folder: Path, force: bool) -> None:
    """Refuse an output folder before any work: it exists (without --force), is a file, or holds other things."""
    check_path(folder)
    if folder.exists() or folder.is_symlink():
        if not folder.is_dir() or folder.is_symlink():
            raise HandwiredError(f"{folder}: already exists and is not a folder; choose another name")
        if not force:
            raise HandwiredError(f"{folder}: already exists; use {{force}} to replace it", ("force",))
        for entry in sorted(folder.iterdir()):
            if entry.name not in FILES:
                raise HandwiredError(f"{folder}: holds {entry.name!r}, which an export does not write; "
                                     "not replacing it, even with {force}", ("force",))
            if not stat.S_ISREG(entry.lstat().st_mode):  # README.md/ a folder of notes, a link: not an export's own
                raise HandwiredError(f"{folder}: holds {entry.name!r}, which is {kind_of(entry.lstat().st_mode)}, "
                                     "not the file an export writes; not replacing it, even with {force}",
                                     ("force",))
    parent = folder.parent
    if not parent.is_dir():
        raise HandwiredError(f"{folder}: folder {parent} does not exist")


# ---------------------------------------------------------------- import


def read_folder(folder: Path, vocab: str | None = None, destination: Path | None = None) -> tuple[str, Any]:
    """A TransformerLens folder -> (the handwired/1 JSON text, the model it loads as).

    ``vocab`` gives the tokens when the folder has no vocab.json (a state dict saved by hand); ``destination``
    is the folder the text will be written in, from which a statement named by its path must still be found.
    """
    check_path(folder)
    if not folder.exists():
        raise HandwiredError(f"{folder}: no such folder")
    if not folder.is_dir():
        raise HandwiredError(f"{folder}: is not a folder (expected {CONFIG}, {WEIGHTS} and {VOCAB} in one)")
    config_path = folder / CONFIG
    sizes = mapping.read_config(_read_json(config_path), str(config_path))
    numbers = sum(math.prod(shape) for shape in mapping.expected_shapes(sizes).values())
    if 2 * numbers > MAX_FILE_BYTES:  # at least "0," for each number
        raise HandwiredError(f"{config_path}: {numbers:,} weights would make a file larger than handwired reads "
                             f"({MAX_FILE_BYTES:,} bytes)")
    tokens = _vocab(folder, sizes["d_vocab"], vocab)
    weights_path = folder / WEIGHTS
    state = mapping.check_tensors(_read_tensors(weights_path), sizes, str(weights_path))
    labels = _labels(folder / LABELS, sizes["d_model"])
    if destination is not None and isinstance(labels.get("puzzle"), str):  # anything else is refused by parse
        labels["puzzle"] = moved(labels["puzzle"], folder, destination)
    doc = mapping.to_document(state, sizes, tokens, labels)
    model, problems = parse(doc, source=str(folder))
    if problems:
        raise HandwiredError(f"{folder}: would not make a valid weight file: {problems[0]}")
    text = dumps(document(known(model), "sparse"))  # as a person would write it: non-zero entries by label
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        raise HandwiredError(f"{folder}: the weight file would be larger than handwired reads "
                             f"({MAX_FILE_BYTES:,} bytes)")
    return text, model


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise HandwiredError(f"{path}: missing (a TransformerLens folder has {CONFIG}, {WEIGHTS} and {VOCAB})")
    return read_json(path)


def _read_tensors(path: Path) -> dict[str, np.ndarray]:
    load = safetensors_numpy().load
    if not path.is_file():
        raise HandwiredError(f"{path}: missing (a TransformerLens folder has {CONFIG}, {WEIGHTS} and {VOCAB})")
    try:
        if path.stat().st_size > MAX_WEIGHTS_BYTES:
            raise HandwiredError(f"{path}: far too large for a model handwired can hold "
                                 f"(at most {MAX_WEIGHTS_BYTES:,} bytes)")
        state = load(path.read_bytes())
    except HandwiredError:
        raise
    except OSError as error:
        raise HandwiredError(f"{path}: cannot read: {error.strerror}") from None
    except Exception as error:  # safetensors' own error type, or numpy refusing a dtype such as bfloat16
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise HandwiredError(f"{path}: not a readable safetensors file: {reason}") from None
    return state


def _vocab(folder: Path, d_vocab: int, given: str | None) -> list[str]:
    path = folder / VOCAB
    if given is not None:
        tokens = list(given)
        where = "{vocab}"
    elif path.exists():
        mapping = _read_json(path)
        if not isinstance(mapping, dict) or set(mapping) != {str(i) for i in range(len(mapping))}:
            raise HandwiredError(f"{path}: expected an object from token id to character, "
                                 "{\"0\": \"a\", \"1\": \"b\", …}")
        tokens = [mapping[str(i)] for i in range(len(mapping))]
        where = str(path)
    else:
        raise HandwiredError(f"{path}: missing; give the tokens in id order with {{vocab}}, e.g. {{vocab}} "
                             f"{'abcdefghijklmnopqrstuvwxyz'[:min(d_vocab, 26)]}", ("vocab",))
    if len(tokens) != d_vocab:
        raise HandwiredError(f"{where}: {len(tokens)} tokens, the config has d_vocab {d_vocab}", ("vocab",))
    for i, token in enumerate(tokens):
        if not isinstance(token, str) or len(token) != 1:
            raise HandwiredError(f"{where}: token {i} is {token!r}; handwired's tokens are single characters",
                                 ("vocab",))
        if token in tokens[:i]:
            raise HandwiredError(f"{where}: token {token!r} appears twice", ("vocab",))
    return tokens


LABEL_KEYS = {"name": False, "description": False, "dims": False, "example": False, "target": False, "hidden": False,
              "puzzle": False, "heads": False}


def _labels(path: Path, d_model: int) -> dict[str, Any]:
    """What an export saved beside the weights: dims, name, example, target, MLP hidden labels.

    Optional. Read with the public checker; the texts are checked again as a weight file (parse) once assembled.
    """
    if not path.exists():
        return {}
    check = Checker()
    labels = check.obj(_read_json(path), "", LABEL_KEYS)
    if labels is not None and labels.get("dims") is not None:
        check.labels(labels["dims"], "dims", d_model, "labels (d_model)")
    hidden = check.mapping(labels.get("hidden", {}), "hidden", "block number: [hidden unit labels]") if labels else {}
    for block, units in (hidden or {}).items():
        if block.isdigit():
            check.labels(units, f"hidden.{block}", what="hidden unit labels")
        else:
            check.problem(f"hidden.{block}", "expected a block number")
    heads = check.mapping(labels.get("heads") or {}, "heads", "block number: [each head's labels]") if labels else {}
    for block in heads or {}:
        if not block.isdigit():
            check.problem(f"heads.{block}", "expected a block number")
    if check.problems:
        raise HandwiredError(f"{path}: {check.problems[0]}")
    return {key: known(labels).get(key) for key in LABEL_KEYS}  # the heads' labels are checked with the assembled file


def _head_names(model: Model) -> dict[str, Any]:
    """Block number -> its ``attn.heads``, for each block whose heads name their dims."""
    blocks = model.written.document.get("blocks", [])
    return {str(i): block["attn"]["heads"] for i, block in enumerate(blocks) if "heads" in block.get("attn", {})}
