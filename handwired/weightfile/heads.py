"""Names for the head dims: a block's ``attn.heads`` labels each head's q, k and v columns.

``"heads": [{"q": ["pos", "one"], "k": ["pos", "pos_sq"], "v": ["tok", "out"]}]`` names
the columns of head 0 in ``c_attn.w`` as ``q:pos``, ``q:one``, ``k:pos`` …, and the
rows of ``c_proj.w`` that head's z feeds as ``z:tok``, ``z:out`` (z is the pattern's
weighted sum of v, column for column). Columns left unnamed keep their numbers across
heads (``q2``, ``z5``); a name is used once among a block's q (k, v) columns, so every
label names one column.
"""

from typing import Any

from handwired.weightfile.axes import Axis
from handwired.weightfile.checker import Checker, describe

KINDS = ("q", "k", "v")
HEAD_KEYS = {kind: False for kind in KINDS}
QKV_MEANING = "q, k, v: 3 × n_embd"
Z_MEANING = "one per attention output dim, heads concatenated"


def numbered(n_embd: int) -> tuple[Axis, Axis]:
    """The q/k/v columns and z rows of a block whose heads name nothing: q0…, k0…, v0…; z0…."""
    return _axes(_numbers(n_embd))


def _numbers(n_embd: int) -> dict[str, list[str]]:
    return {kind: [f"{kind}{i}" for i in range(n_embd)] for kind in KINDS}


def head_axes(check: Checker, value: Any, path: str, n_embd: int, n_head: int) -> tuple[Axis, Axis] | None:
    """A block's ``heads`` -> its c_attn columns and c_proj rows, named where the heads name them."""
    if not isinstance(value, list) or len(value) != n_head:
        check.problem(path, f"expected a list of {n_head} heads (n_head), each an object of its q, k and v labels; "
                            f"found {describe(value)}")
        return None
    d_head = n_embd // n_head
    labels = _numbers(n_embd)
    named: dict[tuple[str, str], int] = {}  # (kind, name) -> the head that took it
    ok = True
    for h, head in enumerate(value):
        spec = check.obj(head, f"{path}[{h}]", HEAD_KEYS)
        if spec is None:
            ok = False
            continue
        for kind in (kind for kind in KINDS if kind in spec):  # an unknown key is already reported
            names = spec[kind]
            where = f"{path}[{h}].{kind}"
            names = check.labels(names, where, d_head, f"labels (d_head = n_embd / n_head: one per {kind} column "
                                                       f"of head {h})")
            if names is None:
                ok = False
                continue
            for j, name in enumerate(names):
                if (kind, name) in named:
                    check.problem(f"{where}[{j}]", f"{name!r} already names a {kind} column of head "
                                                  f"{named[kind, name]}; a name is used once among a block's "
                                                  f"{kind} columns")
                    ok = False
                named[kind, name] = h
                labels[kind][h * d_head + j] = f"{kind}:{name}"
    return _axes(labels) if ok else None


def _axes(labels: dict[str, list[str]]) -> tuple[Axis, Axis]:
    qkv = Axis(QKV_MEANING, tuple(labels["q"] + labels["k"] + labels["v"]))
    z = Axis(Z_MEANING, tuple("z" + label[1:] for label in labels["v"]))  # z_i is the weighted sum of v_i
    return qkv, z
