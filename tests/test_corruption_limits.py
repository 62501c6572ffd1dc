"""Random corruption aimed at the limits: expressions, numbers too large to read, declared shapes.

Each of 600 weight files is the aab model (dense or sparse) with one to three corruptions drawn from
deep or long expressions, integer literals of hundreds or thousands of digits, non-finite literals,
and shapes a few bytes can declare (n_embd 4096, thousands of blocks, MLPs 4,096 wide, long label
lists). Every file must be read in one of two ways: a model, or problems that are each one line —
never an exception, never more than a few seconds of CPU time or 200 MB. A sample of them also goes through the
command line, which must answer with exit 0 or 2 and, on 2, one line naming the file.
"""

import copy
import json
import random
import re
import time
import tracemalloc

import numpy as np
from stress import size
from test_cli import invoke

from handwired.engine.forward import forward
from handwired.errors import HandwiredError
from handwired.weightfile import parse
from handwired.weightfile.jsonfile import MAX_FILE_BYTES, parse_json

RUNS, THROUGH_CLI = size(600, 150), size(60, 20)  # see stress.py


def expression(rng: random.Random) -> str:
    """An entry that is hard on a parser: deep, long, or numerically wild (valid or not)."""
    depth = rng.choice([1, 50, 99, 101, 250, 400, 1000])
    return rng.choice([
        "(" * depth + "Lg" + ")" * depth,
        "-" * depth + "1",
        "sqrt(" * min(depth, 180) + "4" + ")" * min(depth, 180),
        "exp(" * 3 + "Lg" + ")" * 3,
        "1e999", "1/0", "ln(0)", "Lg" * depth, "2*" * depth + "1", "(" * depth, "-" * 5000,
        "9" * rng.choice([20, 400, 5000]), "Lg/" + "0" * 30, "sqrt(-Lg)", "\n", "\u2212" * 10 + "1",
    ])


def big_literal(rng: random.Random) -> str:
    """Raw JSON number text: beyond float range, beyond what Python reads as an int, or not finite."""
    digits = rng.choice([309, 400, 4300, 4301, 6000])
    return rng.choice(["-", ""]) + rng.choice("123456789") + "0" * (digits - 1) if rng.random() < 0.8 else \
        rng.choice(["1e400", "-1e400", "NaN", "Infinity", "-Infinity", "1" + "0" * 400 + ".5"])


def reshape(doc: dict, rng: random.Random) -> None:
    """Declare a different shape, the matrices left as they are (or emptied, as a sparse file may)."""
    choice = rng.randrange(6)
    if choice == 0:
        doc["n_embd"] = rng.choice([1, 9, 1024, 4096, 4097, 10**6])
        doc.pop("dims", None)
    elif choice == 1:
        doc["n_ctx"] = rng.choice([1, 4, 4096, 10**9])
    elif choice == 2:
        doc["vocab"] = rng.choice([[], ["a"], [chr(0x4E00 + i) for i in range(20_000)]])
    elif choice == 3:
        block = {"attn": {"c_attn": {"w": {}}, "c_proj": {"w": {}}}}
        count = rng.choice([1, 2, 300, 4096, 20_000])
        labels = [f"h{i}" for i in range(3000)] if count <= 2 else 3000  # a file of at most 32 MB
        block["mlp"] = {"hidden": rng.choice([1, 4096, 5000, labels]), "c_fc": {"w": {}}, "c_proj": {"w": {}}}
        doc["blocks"] = [block] * count
    elif choice == 4:
        doc["blocks"] = [{"attn": {"c_attn": {"w": {}}, "c_proj": {"w": {}}}}] * rng.choice([0, 1, 50, 30_000])
    else:
        for key in ("wte", "wpe"):
            doc[key] = {}


def corrupted(doc: dict, rng: random.Random) -> str:
    """The file's text after one to three corruptions."""
    doc = copy.deepcopy(doc)
    literals: list[str] = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(3)
        if kind == 0:
            target = rng.choice(_entries(doc) + [("constants", "Lg")])
            _set(doc, target, expression(rng))
        elif kind == 1:
            literals.append(big_literal(rng))
            target = rng.choice(_entries(doc) + [("n_ctx",), ("n_embd",), ("n_head",), ("constants", "Lg")])
            _set(doc, target, f"@@{len(literals) - 1}@@")
        else:
            reshape(doc, rng)
    text = json.dumps(doc, ensure_ascii=False)
    return re.sub(r'"@@(\d+)@@"', lambda match: literals[int(match[1])], text)


def _entries(doc: dict) -> list[tuple]:
    """Paths to a few matrix entries, wherever the (possibly reshaped) document still has them."""
    found = []
    for key in ("wte", "wpe"):
        value = doc.get(key)
        if isinstance(value, list) and value and isinstance(value[0], list) and value[0]:
            found.append((key, 0, 0))
        elif isinstance(value, dict) and value:
            row = next(iter(value))
            if isinstance(value[row], dict) and value[row]:
                found.append((key, row, next(iter(value[row]))))
    return found or [("constants", "Lg")]


def _set(doc: dict, path: tuple, value) -> None:
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


def read(text: str) -> list[str]:
    """What handwired makes of the text: [] for a model (which must also run), else its problems."""
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        return ["too large"]  # read_json refuses it before reading: see test_weightfile
    try:
        document = parse_json(text, "corrupt.json")
    except HandwiredError as error:
        return [str(error)]
    model, problems = parse(document, "corrupt.json")
    if model is not None:
        forward(model.params, np.zeros((1, min(model.n_ctx, 4)), dtype=int), model.n_head)
    return problems


def test_six_hundred_corruptions_of_expressions_literals_and_shapes_are_read_in_little_cpu_time_in_one_line_each(
        aab_doc, tmp_path):
    from handwired.weightfile import load
    from handwired.weightfile.forms import document

    sparse = document(load("aab"), "sparse")
    rng = random.Random(16)
    slowest, refused, texts = 0.0, 0, []
    for run in range(RUNS):
        text = corrupted(rng.choice([aab_doc, sparse]), rng)
        texts.append(text)
        measure = run % 20 == 0  # memory traced on some runs only: tracing slows every allocation
        if measure:
            tracemalloc.start()
        started = time.process_time()  # CPU time, which other work on the machine does not add to
        problems = read(text)
        slowest = max(slowest, time.process_time() - started)
        if measure:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert peak < 200 * 2**20, (f"{peak / 2**20:.0f} MB", text[:300])
        long = [f"{p[:100]}… ({len(p):,} characters)" for p in problems if "\n" in p or len(p) > 2000]
        assert not long, (long, text[:300])
        refused += bool(problems)
    assert slowest < 5, f"the slowest file took {slowest:.1f} s of CPU time"
    assert refused >= RUNS * 0.8, f"only {refused} of {RUNS} refused: the corruptions are too gentle"

    for i, text in enumerate(texts[:THROUGH_CLI]):
        path = tmp_path / f"corrupt-{i}.json"
        path.write_text(text, encoding="utf-8")
        result = invoke("predict", "ab", "-w", str(path))
        assert result.exit_code in (0, 2), (text[:300], result.output)
        if result.exit_code == 2:
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"error: {path}"), (text[:300], result.stderr)
