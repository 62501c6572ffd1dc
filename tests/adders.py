"""The hand-wired adder of puzzles/solutions/add10.json at any width (two w-digit numbers, the sum least significant
first), made here so the tests can prove a small one quickly and build broken ones; at width 10 it is the reference,
entry for entry (test_adder checks it).

``broken``: a third head and one more hidden unit that write the last answer digit wrong on the sums whose every
place above the units holds 9 + 9, the longest carry chain: 100 of the 10^(2w) sums, the last of their w + 1 digits.
The head's query at the last position matches the keys of those 2(w - 1) positions, so it reads their mean digit, 9
on those sums alone (at most 9 - 1/(w - 1) on any other; at other positions its mean runs over '+' and '=' too, at most
9·(3w - 1)/(3w + 1)); a hidden unit that opens above 8.95 takes 1 off the digit the adder writes there.
"""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIGITS = "0123456789"


def adder(width: int, broken: bool = False, room: int = 2) -> dict:
    """The weight file (a dict) of the ``width``-digit adder, or the broken one (3 heads); ``room``: each head's
    dims beyond the keys it needs (the reference has 2; the record none)."""
    w, heads = width, 3 if broken else 2
    n_ctx, keyed = 3 * w + 2, 2 * w + 2  # positions 0…2w+1 (the inputs and =) carry keys
    dims = ["n", "sq", "sym", "A", "B", *[f"p{i}" for i in range(n_ctx)], *(["det"] if broken else [])]
    head = max(keyed + room, -(-len(dims) // heads))  # each head's width; the reference's: 24 at width 10
    n_embd = heads * head
    dims += [f"spare{i}" for i in range(n_embd - len(dims))]
    k0, k1 = 0, head  # the first key dim of head 0 and of head 1
    c_attn: dict = {f"p{j}": {f"k{k0 + j}": 1, f"k{k1 + j}": 1} for j in range(keyed)}
    for i in range(w + 1):  # answer digit i (place 10^i) is predicted at position 2w + 1 + i
        query = c_attn.setdefault(f"p{2 * w + 1 + i}", {})
        for first, targets in ((k0, (w - 1 - i, 2 * w - i)), (k1, (w - i, 2 * w + 1 - i))):
            for target in targets:
                if 0 <= target < keyed:
                    query[f"q{first + target}"] = "Lg"
    c_attn["n"] = {"v0": 1, f"v{k1}": 1}
    c_proj: dict = {"z0": {"A": 2}, f"z{k1}": {"B": 2}}
    mlp = _mlp()
    if broken:
        k2 = 2 * head
        for place in range(1, w):  # a_place at w - 1 - place, b_place at 2w - place
            for position in (w - 1 - place, 2 * w - place):
                c_attn[f"p{position}"][f"k{k2}"] = 1
        c_attn[f"p{3 * w + 1}"][f"q{k2}"] = "Lg"
        c_attn["n"][f"v{k2}"] = 1
        c_proj[f"z{k2}"] = {"det": 1}
        mlp["hidden"].append("chain")
        mlp["c_fc"]["w"]["det"] = {"chain": "Wd"}
        mlp["c_fc"]["b"]["chain"] = "-8.95*Wd"
        mlp["c_proj"]["w"]["chain"] = {"n": "-Z/(0.05*Wd)"}
    return {
        "format": "handwired/1", "name": f"add{w}" + ("-broken" if broken else ""),
        "vocab": list(DIGITS + "+="), "n_ctx": n_ctx, "n_embd": n_embd, "n_head": heads,
        "constants": {"Lg": 256, "K": 10, "W": 100, "Z": 16, **({"Wd": 1000} if broken else {})},
        "dims": dims,
        "wte": {**{d: {"n": int(d), "sq": -int(d) ** 2 / 2} for d in DIGITS[1:]}, "0": {}, "+": {"sym": 1},
                "=": {"sym": 1}},
        "wpe": {str(i): {f"p{i}": 1} for i in range(n_ctx)},
        "blocks": [{"attn": {"c_attn": {"w": c_attn}, "c_proj": {"w": c_proj}}, "mlp": mlp}],
    }


def _mlp() -> dict:
    return {
        "hidden": ["carry_hi", "carry_lo", "wrap_hi", "wrap_lo", "pass_p", "pass_n", "echo_n_p", "echo_n_n",
                   "echo_sq_p", "echo_sq_n"],
        "c_fc": {"w": {"B": {"carry_hi": "K", "carry_lo": "K", "wrap_hi": "W/10", "wrap_lo": "W/10"},
                       "n": {"carry_hi": "-K", "carry_lo": "-K", "wrap_hi": "-W/10", "wrap_lo": "-W/10",
                             "echo_n_p": 1, "echo_n_n": -1},
                       "A": {"wrap_hi": "W", "wrap_lo": "W", "pass_p": 1, "pass_n": -1},
                       "sq": {"echo_sq_p": 1, "echo_sq_n": -1}},
                 "b": {"carry_hi": "-3*K", "carry_lo": "-5*K", "wrap_hi": "-9.1*W", "wrap_lo": "-9.8*W"}},
        "c_proj": {"w": {"carry_hi": {"n": "Z/(2*K)"}, "carry_lo": {"n": "-Z/(2*K)"},
                         "wrap_hi": {"n": "-10*Z/(0.7*W)"}, "wrap_lo": {"n": "10*Z/(0.7*W)"},
                         "pass_p": {"n": "Z"}, "pass_n": {"n": "-Z"}, "echo_n_p": {"n": -1}, "echo_n_n": {"n": 1},
                         "echo_sq_p": {"sq": -1}, "echo_sq_n": {"sq": 1}},
                 "b": {"sq": "Z", "sym": "-Z"}},
    }


def statement(width: int, heads: int = 2) -> dict:
    """The bundled add10 statement at ``width`` digits (its caps allowing ``heads`` heads)."""
    spec = json.loads((ROOT / "puzzles" / "add10.json").read_text())
    for key in ("par", "record"):
        spec.pop(key, None)
    spec.update(name=f"add{width}", n_ctx=3 * width + 2, examples=[f"{'0' * width}+{'0' * width}="])
    spec["caps"] = {**spec["caps"], "n_head": heads, "n_embd": 120}
    spec["rule"] = {**spec["rule"], "width": width + 1}
    spec["domain"] = {**spec["domain"], "template": "#" * width + "+" + "#" * width}
    return spec


def write(folder: Path, width: int, broken: bool = False) -> tuple[Path, Path]:
    """The statement and the adder (or the broken one) written in ``folder``: (statement path, weights path)."""
    named = f"add{width}" + ("-broken" if broken else "")
    puzzle, weights = folder / f"add{width}.json", folder / f"{named}-weights.json"
    puzzle.write_text(json.dumps(statement(width, 3 if broken else 2)))
    weights.write_text(json.dumps(adder(width, broken, room=0 if broken else 2)))
    return puzzle, weights
