"""A random attack: statements and weight files a careless or hostile author might write, through every command.

Five hundred files, each a bundled statement, the `puzzles new` template or a weight file (bundled, a reference
solution, a starter) with a few random mutations — wrong types, huge, negative and fractional numbers, escape
sequences, C1 and unicode characters, names that are paths or 300 bytes long, thousands of hints or examples, deep
and long values — go through `puzzles show`, `start`, `hint` and `check` (a statement) or `predict`, `check` and
`diff` (a weight file). Every run ends with exit code 0, 1 or 2, an error in one line, no control character on
stdout, no file written outside the folder it runs in, and within a memory bound (RLIMIT_AS, so an allocation past
it would be an internal error, exit 70). Nothing is asserted on time.

The seed is fixed (HANDWIRED_ATTACK_SEED sets another, to try more files: HANDWIRED_ATTACK_FILES sets how many).
"""

import json
import os
import random
import re
from pathlib import Path

import pytest
from stress import size
from test_cli import invoke

from handwired.judge.game.catalogue import bundled_puzzles, puzzles_dir
from handwired.judge.game.puzzle import TEMPLATE
from handwired.weightfile import bundled_models

SEED = int(os.environ.get("HANDWIRED_ATTACK_SEED", "26"))
FILES = int(os.environ.get("HANDWIRED_ATTACK_FILES", size(500, 100)))  # see stress.py
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # C0 but the newline, DEL and C1: what a terminal obeys
MEMORY_BOUND = 3 * 2**30  # bytes of address space a run may add: handwired's own limit (2 GB) and room to spare

TEXTS = ["\x1b]0;PWNED\x07", "\x1b[2J\x1b[H", "\x9b31m", "\x7f", "\x00", "a\nb", "\t", "\u202e", "é", "日本",
         "\U0001f600", "../../x", "/etc/passwd", "..", "x" * 300, "#", "|", "a", "ab", " ", "", "x" * 20_000,
         "mine.json#0123456789ab", "../mine.json#0123456789ab", "secret.json#0123456789ab"]
NUMBERS = [0, -1, 1, 2, 3, 63, 64, 65, 255, 256, 257, 4095, 4096, 10**6, 10**400, -(10**400), 1.5, -0.0, 1e308, -1e308]
OTHERS = [None, True, False, [], {}, [[["deep"]]], {"kind": "strings"}, {"kind": "nope"}, [1, 10**9], [64, 64]]


def hostile_value(rng: random.Random, texts: list[str]):
    pick = rng.randrange(10)
    if pick < 4:
        return rng.choice(texts)
    if pick < 7:
        return rng.choice(NUMBERS)
    if pick == 7:
        return rng.choice(OTHERS)
    if pick == 8:
        return [rng.choice(texts) or "h" for _ in range(rng.choice((2, 101, 1001, 3000)))]  # thousands of hints
    return "#" * rng.choice((63, 64, 70, 300))  # a template past n_ctx or np.indices' 64 dimensions


SHOWN = ["\x1b]0;PWNED\x07", "\x1b[2J\x1b[H", "\x1b]8;;http://x/\x1b\\link\x1b]8;;\x1b\\", "\x9b31m", "\x7f", "\x00",
         "a\nb", "\u202e", "é", "日本", "\U0001f600"]  # text a view prints: the file stays valid
PROSE = {True: ("title", "summary", "story"), False: ("name", "description")}


def places(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from places(item, (*path, key))
    elif isinstance(value, list) and len(value) <= 64:
        for index, item in enumerate(value):
            yield from places(item, (*path, index))


def mutate(doc, rng: random.Random, statement: bool, texts: list[str]):
    """``doc`` with one to three random mutations; a statement's name and hints are favoured, as the attacks were."""
    doc = json.loads(json.dumps(doc))
    for key in PROSE[statement]:  # most files keep working, their text full of escape sequences
        if key in doc and rng.random() < 0.5:
            doc[key] = rng.choice(SHOWN) + str(doc[key]) + rng.choice(SHOWN)
    if statement and rng.random() < 0.5:
        doc["hints"] = [hint + rng.choice(SHOWN) for hint in doc.get("hints") or ["h"]]
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        favoured = ["name", "hints", "title", "story", "domain", "vocab", "n_ctx", "caps", "examples"] if statement \
            else ["name", "description", "puzzle", "vocab", "n_ctx", "n_embd", "example", "dims", "target"]
        if rng.random() < 0.5:
            path = (rng.choice(favoured),)
        else:
            path = rng.choice([p for p in places(doc) if p])
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        how = rng.randrange(6)
        if how == 0 and isinstance(parent, dict):
            parent.pop(last, None)
        elif how == 1 and isinstance(parent, list):
            parent.extend([parent[-1] if parent else "a"] * rng.choice((2, 1000)))
        elif isinstance(parent, dict) or (isinstance(parent, list) and isinstance(last, int) and last < len(parent)):
            parent[last] = hostile_value(rng, texts)
    return doc


def bases():
    statements = [json.loads(path.read_text(encoding="utf-8")) for path in bundled_puzzles().values()]
    template = json.loads(TEMPLATE.read_text(encoding="utf-8"))
    template["name"] = "mine"
    weights = [json.loads(path.read_text(encoding="utf-8")) for path in bundled_models().values()]
    weights += [json.loads(path.read_text(encoding="utf-8"))
                for path in sorted((puzzles_dir() / "solutions").glob("*.json"))]
    return statements + [template] * 4, weights


def files_in(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*") if path.is_file()}


def check_run(result, command, source: Path) -> None:
    where = f"{' '.join(map(str, command))} on {source.name}: {source.read_text(encoding='utf-8')[:200]!r}"
    assert result.exit_code in (0, 1, 2), (where, result.output[-500:])
    assert not RAW_CONTROL.search(result.stdout), (where, RAW_CONTROL.findall(result.stdout)[:5])
    lines = result.stderr.splitlines()
    assert all(line.startswith(("error: ", "warning: ")) for line in lines), (where, result.stderr[-500:])
    assert sum(line.startswith("error: ") for line in lines) == (result.exit_code == 2), (where, result.stderr)


def python_api(doc, example: str, source: Path) -> None:
    """The same file from Python: a mistake is one HandwiredError in one line, never another exception."""
    import handwired

    try:
        model = handwired.load(doc)
        model(example)
        handwired.check(model, sample=50) if model.model.target else model.explain(example)
    except handwired.HandwiredError as error:
        assert "\n" not in str(error), (source.name, str(error)[:300])


@pytest.fixture
def memory_bound():
    """RLIMIT_AS at the address space in use now plus MEMORY_BOUND, for the attack only (Linux)."""
    resource = pytest.importorskip("resource")
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("needs /proc to know the address space in use")
    in_use = int(re.search(r"VmSize:\s+(\d+) kB", status.read_text())[1]) * 1024
    before = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (in_use + MEMORY_BOUND, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, before)


def test_five_hundred_hostile_files_through_every_command(tmp_path, monkeypatch, memory_bound):
    rng = random.Random(SEED)
    statements, weights = bases()
    cases, work = tmp_path / "cases", tmp_path / "a" / "b" / "work"
    for folder in (cases, work, tmp_path / "abs"):
        folder.mkdir(parents=True)
    texts = [*TEXTS, str(tmp_path / "abs" / "x")]  # an absolute path to a folder that exists
    (work / "secret.json").write_text('"ghp_SECRET_TOKEN_1234"')
    monkeypatch.chdir(work)
    mine = {work, cases, tmp_path / "home"}  # where the commands may write: here, and progress

    def written_elsewhere() -> set[Path]:
        return {path for path in files_in(tmp_path) if not any(folder in path.parents for folder in mine)}

    outside = written_elsewhere()
    exits: dict[int, int] = {}
    for number in range(FILES):
        is_statement = number % 10 < 7
        doc = mutate(rng.choice(statements if is_statement else weights), rng, is_statement, texts)
        source = cases / f"case{number}.json"
        source.write_text(json.dumps(doc, ensure_ascii=rng.random() < 0.5), encoding="utf-8")
        answer = work / f"answer{number}.json"
        if is_statement:
            commands = [("puzzles", "show", str(source)), ("puzzles", "start", str(source), "-o", str(answer)),
                        ("puzzles", "start", str(source), "--force"), ("puzzles", "hint", str(source)),
                        ("puzzles", "check", str(source), str(answer))]
        else:
            example = doc.get("example") if isinstance(doc.get("example"), str) and doc.get("example") else "ab"
            diff = (("diff", "aab", str(source)) if rng.random() < 0.5
                    else ("diff", str(source), str(source), "--sample", "300"))  # not every context, twice
            workbench = rng.choice([("sweep", str(source), "Lg=0..4", "--steps", "3"), ("ablate", str(source)),
                                    ("spread", "lead", "-w", str(source))])  # one of the workbench's commands
            commands = [("predict", example[:64], "-w", str(source)), ("check", str(source)), diff, workbench]
            python_api(doc, example[:64], source)
        for command in commands:
            result = invoke(*command)
            check_run(result, command, source)
            exits[result.exit_code] = exits.get(result.exit_code, 0) + 1
    print(f"seed {SEED}: {FILES} files, {sum(exits.values())} runs, by exit code {dict(sorted(exits.items()))}")
    assert sum(exits.values()) >= 4 * FILES and min(exits.get(code, 0) for code in (0, 1, 2)) >= FILES // 5  # every end
    assert written_elsewhere() == outside  # nothing written outside the folder the commands run in
    assert {path.parent for path in files_in(work)} == {work}  # and nothing in a folder a name led to
