"""The weight file's format, ``handwired/1``: a parsed document -> a :class:`Model`, or every problem in it.

A weight file is JSON a person writes by hand: the vocabulary, ``n_ctx``,
``n_embd``, ``n_head``, optional ``constants`` and ``dims`` labels, then the
GPT-2-named parameters (``wte``, ``wpe``, ``blocks[i].attn.c_attn`` …, ``ln_f``),
each dense or sparse. :func:`parse` checks all of it and reports every problem
as ``json.path: what was found, what was expected``.
"""

from typing import Any

import numpy as np

from handwired.weightfile.axes import Axis
from handwired.weightfile.checker import describe, known
from handwired.weightfile.entries import EntryChecker
from handwired.weightfile.expr import NAME_PATTERN
from handwired.weightfile.heads import head_axes, numbered
from handwired.weightfile.model import Config, Model, Written
from handwired.weightfile.sizing import MAX_PARAMETERS as MAX_PARAMETERS  # read from here by the starter and puzzles
from handwired.weightfile.sizing import oversized
from handwired.weightfile.sizing import parameter_count as parameter_count

FORMAT = "handwired/1"

TOP_KEYS = {
    "format": True, "name": False, "description": False, "vocab": True, "n_ctx": True,
    "n_embd": True, "n_head": False, "constants": False, "dims": False, "example": False,
    "target": False, "puzzle": False, "wte": True, "wpe": True, "blocks": True, "ln_f": False,
}  # key -> required
BLOCK_KEYS = {"attn": True, "ln_1": False, "ln_2": False, "mlp": False}
ATTN_KEYS = {"heads": False, "c_attn": True, "c_proj": True}
MLP_KEYS = {"hidden": False, "c_fc": True, "c_proj": True}
MAX_TEXT = {"name": 200, "description": 10_000}  # characters: every view prints them, so a view stays quick


def parse(doc: Any, source: str = "<weights>") -> tuple[Model | None, list[str]]:
    """Validate a parsed weight document; return the model (None if invalid) and every problem found."""
    check = EntryChecker()
    top = check.obj(doc, "", TOP_KEYS)
    if top is None:
        return None, check.problems
    too_large = oversized(top)  # before anything is made: a few bytes can declare gigabytes
    if too_large:
        check.problem("", too_large)
        return None, check.problems
    if "format" in top and top["format"] != FORMAT:
        check.problem("format", f"expected {FORMAT!r}; found {describe(top['format'])}")
    name, description = (_text(check, top.get(key, ""), key) or "" for key in ("name", "description"))
    vocab = check.vocab(top.get("vocab")) if "vocab" in top else None
    n_ctx = check.whole(top["n_ctx"], "n_ctx") if "n_ctx" in top else None
    n_embd = check.whole(top["n_embd"], "n_embd") if "n_embd" in top else None
    n_head = check.whole(top.get("n_head", 1), "n_head")
    if n_embd is not None and n_head is not None and n_embd % n_head:
        check.problem("n_head", f"n_embd {n_embd} is not divisible by n_head {n_head}")
        n_head = None
    _constants(check, top.get("constants", {}))
    dims = _dims(check, top.get("dims"), n_embd)
    example = check.tokens(top["example"], "example", vocab) if "example" in top else None
    target = check.tokens(top["target"], "target", vocab) if "target" in top else None
    puzzle = _puzzle(check, top["puzzle"]) if "puzzle" in top else None

    axes = _axes(vocab, n_ctx, n_embd, dims)
    params = _params(check, top, axes, n_head)
    if check.problems:
        return None, check.problems
    config = Config(tuple(known(vocab)), known(n_ctx), known(n_embd), known(n_head), len(params["blocks"]),
                    tuple(known(dims)))
    written = Written(doc, dict(check.constants), check.written, _param_axes(check.written, axes))
    return Model(config, params, source, name, description, example, target, written, puzzle), []


def _params(check: EntryChecker, top: dict[str, Any], axes: dict[str, Axis], n_head: int | None) -> dict[str, Any]:
    """wte, wpe, the blocks and ln_f, as float64 (a part that is wrong is reported and left as None)."""
    params: dict[str, Any] = {}
    if "wte" in top:
        params["wte"] = check.matrix(top["wte"], "wte", axes.get("vocab"), axes.get("dims"))
    if "wpe" in top:
        params["wpe"] = check.matrix(top["wpe"], "wpe", axes.get("positions"), axes.get("dims"))
    blocks = top.get("blocks", [])
    if not isinstance(blocks, list):
        check.problem("blocks", f"expected a list of blocks; found {describe(blocks)}")
        blocks = []
    params["blocks"] = [_block(check, block, f"blocks[{i}]", axes, n_head) for i, block in enumerate(blocks)]
    if "ln_f" in top:
        params["ln_f"] = check.norm(top["ln_f"], "ln_f", axes.get("dims"))
    return params


def _constants(check: EntryChecker, value: Any) -> None:
    if not isinstance(value, dict):
        check.problem("constants", f"expected an object of name: number; found {describe(value)}")
        return
    for key, entry in value.items():
        path = f"constants.{key}"
        if not NAME_PATTERN.match(key):
            check.problem(path, "a constant's name must be letters, digits and _ and not start with a digit")
            continue
        # A constant may use the ones defined before it, e.g. {"Lg": 1024, "half": "Lg/2"}.
        number = check.number(entry, path)
        if number is not None:
            check.constants[key] = number
        else:
            check.failed.add(key)


def _text(check: EntryChecker, value: Any, key: str) -> str | None:
    text = check.text(value, key)
    if text is not None and len(text) > MAX_TEXT[key]:
        check.problem(key, f"{len(text):,} characters, more than handwired shows (at most {MAX_TEXT[key]:,})")
        return None
    return text


def _puzzle(check: EntryChecker, value: Any) -> str | None:
    """The puzzle the file answers: a bundled puzzle's name, or a statement's path (from the file's folder) and
    ``#`` and the hash of its content, as ``puzzles start`` writes it."""
    text = check.text(value, "puzzle")
    if text is not None and (not text.strip() or not text.isprintable()):
        check.problem("puzzle", f"expected a puzzle's name, e.g. \"max\", or a statement's path; found {text!r}")
        return None
    return text


def _dims(check: EntryChecker, value: Any, n_embd: int | None) -> list[str] | None:
    if value is None:
        return [f"d{i}" for i in range(n_embd)] if n_embd else None
    return check.labels(value, "dims", n_embd, "labels (one per residual dim)")


def _axes(vocab, n_ctx, n_embd, dims) -> dict[str, Axis]:
    """The labelled axes of a model's matrices, as far as the file's header is valid."""
    axes: dict[str, Axis] = {}
    if vocab:
        axes["vocab"] = Axis("one per vocab token", tuple(vocab))
    if n_ctx:
        axes["positions"] = Axis("one per position, n_ctx", tuple(str(i) for i in range(n_ctx)))
    if n_embd and dims:
        axes["dims"] = Axis("one per residual dim", tuple(dims))
        axes["qkv"], axes["z"] = numbered(n_embd)
    return axes


def _param_axes(written: dict[str, np.ndarray], axes: dict[str, Axis]) -> dict[str, tuple[Axis, ...]]:
    """Each parameter's path -> the axes of its rows and columns (a vector: its one axis)."""
    result: dict[str, tuple[Axis, ...]] = {"wte": (axes["vocab"], axes["dims"]),
                                           "wpe": (axes["positions"], axes["dims"])}
    for path in written:
        if path in result:
            continue
        block = path.split(".attn.")[0]
        if ".attn.c_attn." in path:
            rows, cols = axes["dims"], axes.get(f"{block}.attn.qkv", axes["qkv"])
        elif ".attn.c_proj." in path:
            rows, cols = axes.get(f"{block}.attn.z", axes["z"]), axes["dims"]
        elif ".mlp.c_fc." in path:
            rows, cols = axes["dims"], axes[path.split(".mlp.")[0] + ".mlp.hidden"]
        elif ".mlp.c_proj." in path:
            rows, cols = axes[path.split(".mlp.")[0] + ".mlp.hidden"], axes["dims"]
        else:  # LayerNorm g and b
            rows = cols = axes["dims"]
        result[path] = (rows, cols) if path.endswith(".w") else (cols,)
    return result


def _block(check: EntryChecker, value: Any, path: str, axes: dict[str, Axis], n_head: int | None
           ) -> dict[str, Any] | None:
    spec = check.obj(value, path, BLOCK_KEYS)
    if spec is None:
        return None
    block: dict[str, Any] = {}
    dims = axes.get("dims")
    attn = check.obj(spec.get("attn"), f"{path}.attn", ATTN_KEYS) if "attn" in spec else None
    if attn is not None:
        qkv, z = axes.get("qkv"), axes.get("z")
        if "heads" in attn and dims is not None and n_head is not None:
            named = head_axes(check, attn["heads"], f"{path}.attn.heads", len(dims), n_head)
            qkv, z = named if named is not None else (None, None)  # wrong names: no entry can be read by them
            if named is not None:
                axes[f"{path}.attn.qkv"], axes[f"{path}.attn.z"] = named
        block["attn"] = {
            "c_attn": (check.linear(attn["c_attn"], f"{path}.attn.c_attn", dims, qkv)
                       if "c_attn" in attn else None),
            "c_proj": (check.linear(attn["c_proj"], f"{path}.attn.c_proj", z, dims)
                       if "c_proj" in attn else None),
        }
    for norm in ("ln_1", "ln_2"):
        if norm in spec:
            block[norm] = check.norm(spec[norm], f"{path}.{norm}", dims)
    if "mlp" in spec:
        mlp = check.obj(spec["mlp"], f"{path}.mlp", MLP_KEYS)
        if mlp is not None and "c_fc" in mlp and "c_proj" in mlp:
            hidden = _hidden(check, mlp, f"{path}.mlp")
            if hidden is not None:
                axes[f"{path}.mlp.hidden"] = hidden
            block["mlp"] = {
                "c_fc": check.linear(mlp["c_fc"], f"{path}.mlp.c_fc", dims, hidden),
                "c_proj": check.linear(mlp["c_proj"], f"{path}.mlp.c_proj", hidden, dims),
            }
    elif "ln_2" in spec:
        check.problem(f"{path}.ln_2", "given, but the block has no mlp for it to feed")
    return block


def _hidden(check: EntryChecker, mlp: dict[str, Any], path: str) -> Axis | None:
    """An MLP's hidden units: named by ``hidden`` (labels or a count), else as wide as a dense matrix says."""
    meaning = "one per hidden unit"
    value = mlp.get("hidden")
    if isinstance(value, list):
        if not value:
            check.problem(f"{path}.hidden", "expected at least one hidden unit; found an empty list")
            return None
        labels = check.labels(value, f"{path}.hidden")
        return None if labels is None else Axis(meaning, tuple(labels))
    if "hidden" in mlp:
        count = check.whole(value, f"{path}.hidden")
        return None if count is None else Axis(meaning, tuple(f"h{i}" for i in range(count)))
    fc_w = mlp["c_fc"].get("w") if isinstance(mlp["c_fc"], dict) else None
    proj_w = mlp["c_proj"].get("w") if isinstance(mlp["c_proj"], dict) else None
    if isinstance(fc_w, list) and fc_w and isinstance(fc_w[0], list):
        count = len(fc_w[0])  # a dense c_fc says how wide the hidden layer is
    elif isinstance(proj_w, list) and proj_w:
        count = len(proj_w)
    else:
        check.problem(path, "missing 'hidden': with sparse c_fc and c_proj, give the hidden units' labels "
                            "(e.g. \"hidden\": [\"and\", \"or\"]) or their number (\"hidden\": 4)")
        return None
    if count == 0:
        check.problem(f"{path}.c_fc.w", "rows with no numbers; expected at least one hidden unit")
        return None
    return Axis(meaning + ", as c_fc has columns", tuple(f"h{i}" for i in range(count)))
