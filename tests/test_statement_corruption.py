"""A statement people write is read like a weight file: whatever is wrong in it, one line naming it, exit code 2.

Two hundred statements, each a bundled one with a random corruption (a key removed or misspelt, a value of the
wrong type or out of range, a huge number, a control character, a domain or rule with wrong parameters, the
text cut short), go through `puzzles show`. Each must either be valid (some corruptions leave a playable
puzzle) or be refused in one line that names the file; never a traceback.
"""

import json
import random

from test_cli import invoke

from handwired.judge.game.catalogue import bundled_puzzles

WRONG_VALUES = [None, True, False, 0, -1, 1, 2.5, -7.25, 10**40, 10**400, "", "z", "\n", "a\tb", "^", "##", "|",
                [], [1], ["a", "a"], ["a", "zz"], {}, {"kind": "strings"}, {"kind": "nope"},
                {"kind": "answer_so_far", "alphabet": "ab", "length": [1, 3]}, {"kind": "sum", "width": 99},
                [[["deep"]]], "x" * 5000, [1, 0], [0, 0], [3, 2], [1, 10**9]]


def _paths(value, path=()):
    """Every place in a JSON document: (path to it, its value)."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _parent(doc, path):
    for step in path[:-1]:
        doc = doc[step]
    return doc


def corrupt(doc: dict, rng: random.Random) -> str:
    """One statement's text with one random corruption."""
    doc = json.loads(json.dumps(doc))
    places = [p for p, _ in _paths(doc) if p]
    path = rng.choice(places)
    parent, last = _parent(doc, path), path[-1]
    how = rng.randrange(6)
    if how == 0 and isinstance(parent, dict):
        del parent[last]
    elif how == 1 and isinstance(parent, dict):
        parent[f"{last}x"] = parent.pop(last)
    elif how == 2 and isinstance(parent, list):
        parent.append(rng.choice(WRONG_VALUES))
    elif how == 3:
        return json.dumps(doc)[: rng.randrange(1, len(json.dumps(doc)))]
    else:
        parent[last] = rng.choice(WRONG_VALUES)
    return json.dumps(doc)


def test_two_hundred_corrupted_statements_are_each_valid_or_one_line_with_exit_2(tmp_path, monkeypatch):
    monkeypatch.setenv("HANDWIRED_HOME", str(tmp_path / "home"))
    rng = random.Random(2026)
    statements = {name: json.loads(path.read_text(encoding="utf-8")) for name, path in bundled_puzzles().items()}
    refused = 0
    for round_ in range(200):
        name = rng.choice(sorted(statements))
        file = tmp_path / f"{name}-{round_}.json"
        file.write_text(corrupt(statements[name], rng), encoding="utf-8")
        result = invoke("puzzles", "show", str(file))
        assert result.exit_code in (0, 2), (file.read_text()[:300], result.output)
        if result.exit_code == 2:
            refused += 1
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"error: {file}"), (file.read_text()[:300], result.stderr)
    assert refused >= 150, f"only {refused} of 200 corruptions were refused: the corruptions are too gentle"
