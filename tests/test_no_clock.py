"""No test asserts elapsed wall time: on a machine busy with other work anything can take longer, so a test
that means "refused before the work" shows what did not run (tests/forbidden.py), memory or CPU time, and a
test that waits for something waits for that event (tests/waiting.py, the one module allowed a clock) with a
long deadline that is only a safety net. Speeds are measured in benchmarks/.

This reads every test module's syntax tree for the wall clock (time.time, perf_counter, monotonic, their _ns
forms, datetime's now), for sleeping (time.sleep, a ``sleep`` subprocess) and for a timeout under a minute.
"""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ALLOWED = {"waiting.py"}
WALL_CLOCK = {"time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "sleep"}
SHORTEST_TIMEOUT = 60  # seconds: a shorter timeout on a subprocess or a wait is a timing in disguise


def clock_uses(source: str) -> list[str]:
    """Each place ``source`` reads the wall clock, sleeps, or gives something a timeout under a minute."""
    tree = ast.parse(source)
    modules = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names if alias.name == "time"}
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                and node.attr in WALL_CLOCK:
            found.append(f"line {line}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "time":
            found += [f"line {line}: from time import {alias.name}" for alias in node.names if alias.name in WALL_CLOCK]
        elif isinstance(node, ast.Attribute) and node.attr in ("now", "utcnow", "today") and \
                (ast.unparse(node.value).split(".")[-1] in ("datetime", "date")):
            found.append(f"line {line}: {ast.unparse(node)}")
        elif isinstance(node, ast.keyword) and node.arg == "timeout" and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, (int, float)) and node.value.value < SHORTEST_TIMEOUT:
            found.append(f"line {line}: timeout={node.value.value}")
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)) and \
                node.args[0].elts and isinstance(node.args[0].elts[0], ast.Constant) and \
                node.args[0].elts[0].value == "sleep":
            found.append(f"line {line}: a sleep subprocess")
    return sorted(found, key=lambda use: int(use.split(":")[0].split()[1]))  # in the order of the file


def test_no_test_module_reads_the_wall_clock_or_sleeps():
    modules = sorted(path for path in TESTS.rglob("*.py") if path.name not in ALLOWED)
    assert len(modules) > 40  # the probe is real: it reads the whole suite
    found = [f"{path.relative_to(TESTS)} {use}" for path in modules
             for use in clock_uses(path.read_text(encoding="utf-8"))]
    assert found == [], "\n".join(found)


def test_the_probe_finds_each_way_of_timing_and_lets_cpu_time_and_long_deadlines_pass():
    timed = """
import time
import time as clock
import datetime
from time import monotonic, process_time
started = time.perf_counter()
assert time.time() - started < 1
clock.sleep(2)
subprocess.run(["sleep", "0.05"])
child.communicate(timeout=10)
stamp = datetime.datetime.now()
"""
    assert clock_uses(timed) == ["line 5: from time import monotonic", "line 6: time.perf_counter",
                                 "line 7: time.time", "line 8: clock.sleep", "line 9: a sleep subprocess",
                                 "line 10: timeout=10", "line 11: datetime.datetime.now"]
    untimed = """
import os, time
cpu = time.process_time()
user, system = os.times()[:2]
child.communicate(timeout=DEADLINE)
thread.join(timeout=120)
"""
    assert clock_uses(untimed) == []
