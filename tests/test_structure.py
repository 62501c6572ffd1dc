"""The shape of the code: layers that import only downwards, no import circle, short modules and functions,
a core that names parameters rather than command-line flags."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "handwired"
# Bottom to top. A module may import its own layer and the layers below; views and interop sit side by side
# and do not import each other, nor do cli and api.
LAYERS = {
    "handwired.errors": 0, "handwired.defaults": 0, "handwired.budget": 0,
    "handwired.weightfile": 1,
    "handwired.engine": 2,
    "handwired.judge": 3,
    "handwired.views": 4, "handwired.interop": 4,
    "handwired.cli": 5, "handwired.api": 5,
    "handwired": 6, "handwired.__main__": 6,
}
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
FLAG = re.compile(r"--[a-z]")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> tuple[int, str]:
    """The module's layer and the folder it belongs to."""
    for prefix in sorted(LAYERS, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return LAYERS[prefix], prefix
    raise AssertionError(f"{module} is in no layer")


def imports(module: str) -> set[str]:
    """The handwired modules ``module`` imports, anywhere in it (a package import counts as its __init__)."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in MODULES else node.module
                     for alias in node.names]
        else:
            continue
        found |= {name for name in names if name in MODULES and name != module}
    return found


GRAPH = {module: imports(module) for module in MODULES}


def test_every_module_imports_only_its_own_layer_and_the_layers_below():
    assert {"handwired.engine.trace", "handwired.cli.common"} <= GRAPH["handwired.cli.predict"]  # the probe is real
    wrong = []
    for module, targets in GRAPH.items():
        rank, folder = layer(module)
        for target in targets:
            target_rank, target_folder = layer(target)
            if target_rank > rank or (target_rank == rank and target_folder != folder and rank > 0):
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_there_is_no_import_circle():
    state: dict[str, str] = {}  # module -> "open" while on the path, "done" after

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(GRAPH[module]):
            if module.startswith(target + ".") and MODULES[target].name == "__init__.py":
                continue  # a module imports its own package (already running): not a circle of the module's making
            if state.get(target) == "open":
                raise AssertionError("import circle: " + " → ".join(path[path.index(target):] + [target]))
            if target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])


# Inside a layer, its sub-systems are folders in the same order: each imports only itself and those before it.
SUBSYSTEMS = {
    "handwired.judge": ("kinds", "checking", "game", "judging", "workbench"),
}


def subsystem(module: str) -> tuple[str, int] | None:
    for folder, order in SUBSYSTEMS.items():
        if module.startswith(folder + "."):
            part = module[len(folder) + 1:].split(".")[0]
            assert part in order, f"{module} is in none of {folder}'s sub-systems {order}"
            return folder, order.index(part)
    return None


def test_a_layers_sub_systems_import_only_themselves_and_those_before_them():
    assert subsystem("handwired.judge.workbench.sweep") == ("handwired.judge", 4)  # the probe is real
    assert GRAPH["handwired.judge.game.puzzle"] & {"handwired.judge.kinds.spec", "handwired.judge.kinds.rules"}
    wrong = []
    for module, targets in GRAPH.items():
        mine = subsystem(module)
        for target in targets:
            theirs = subsystem(target)
            if mine and theirs and mine[0] == theirs[0] and theirs[1] > mine[1]:
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_every_sub_system_says_what_it_is():
    for folder, order in SUBSYSTEMS.items():
        for part in order:
            path = PACKAGE.parent.joinpath(*folder.split("."), part)
            init = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
            assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), f"{init} says what it is"


def test_the_layers_are_folders_each_saying_what_it_is():
    for folder in ("weightfile", "engine", "judge", "views", "interop", "cli", "api"):
        init = PACKAGE / folder / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 200, f"{folder}/__init__.py says what the layer is"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_and_functions_are_short(module):
    text = MODULES[module].read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_MODULE_LINES, f"{module}: {len(text.splitlines())} lines"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{module}.{node.name}: {length} lines"


def error_texts(tree: ast.AST) -> list[str]:
    """Every piece of text in a raise statement or in the making of a HandwiredError (or of a Note, a warning the
    core phrases the same way)."""
    texts: dict[int, str] = {}  # by node, so text in a HandwiredError inside a raise counts once
    for node in ast.walk(tree):
        made = isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("HandwiredError", "bad_value", "Note")
        if isinstance(node, ast.Raise) or made:
            texts |= {id(part): part.value for part in ast.walk(node)
                      if isinstance(part, ast.Constant) and isinstance(part.value, str)}
    return list(texts.values())


@pytest.mark.parametrize("module", sorted(name for name in MODULES if not name.startswith("handwired.cli")))
def test_the_core_names_parameters_never_flags(module):
    """Errors below the command line name their parameters ({min_length}); the CLI spells them as flags."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    assert [text for text in error_texts(tree) if FLAG.search(text)] == []


def test_the_probe_finds_flags_where_they_are():
    caught = error_texts(ast.parse('raise HandwiredError(f"--length {n}: too short")\nbad_value("x", 1, "use --x")'))
    assert [text for text in caught if FLAG.search(text)] == ["--length ", "use --x"]


def test_a_core_error_is_spelled_as_the_command_spells_it():
    from handwired.errors import HandwiredError, bad_value

    error = bad_value("min_length", 0, "expected at least 1")
    assert str(error) == "min_length 0: expected at least 1"
    assert error.render(lambda name: "--" + name.replace("_", "-")) == "--min-length 0: expected at least 1"
    literal = HandwiredError('expected {"kind": "first"}')  # braces that name no parameter are left alone
    assert str(literal) == 'expected {"kind": "first"}'


# ---------------------------------------------------------------- one verdict, one decision

FACES = ("handwired.cli", "handwired.api", "handwired.views")  # what a person or a program meets: they judge nothing
CHOOSERS = {"named_puzzle", "other_puzzle", "chosen_plan", "submit", "puzzle_sample_plan"}  # what decides a judging
MODEL = re.compile(r"^(?:\w+\.)*(?:model|before|after|old|new)$")  # an expression that holds a weight file
# a face that reads a file's puzzle for another reason than choosing its judge: which, and why
NOT_CHOOSING = {
    "handwired.cli.weights": "validate checks the key a file names; it judges nothing",
    "handwired.cli.predict": "loads the judge only when the file may name a puzzle: predict must start quickest",
}


def verdict_classes(modules: dict[str, Path]) -> list[str]:
    """Where a class named Verdict is defined: module names."""
    return [module for module, path in modules.items()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ClassDef) and node.name == "Verdict"]


def test_there_is_one_verdict_type():
    """One class is named Verdict (handwired.judge.judging's, which handwired.Verdict is): watch, check and the
    Python face show it; sweep and ablate count a Tally per variant, which is not one."""
    assert verdict_classes(MODULES) == ["handwired.judge.judging"]
    import handwired
    from handwired.judge import judging

    assert handwired.Verdict is judging.Verdict


def judge_choices(modules: dict[str, Path]) -> list[str]:
    """Where a face chooses how a file is judged: it reads a model's ``puzzle`` or ``target``, or calls what only
    the one decision (handwired.judge.judging) should call."""
    found = []
    for module, path in modules.items():
        if not module.startswith(FACES):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in ("puzzle", "target")
                    and MODEL.match(ast.unparse(node.value)) and module not in NOT_CHOOSING):
                found.append(f"{module}:{node.lineno} reads {ast.unparse(node)}")
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("handwired.judge"):
                chosen = {alias.name for alias in node.names} & CHOOSERS
                if chosen and not (module in NOT_CHOOSING and chosen == {"named_puzzle"}):
                    found.append(f"{module}:{node.lineno} imports {', '.join(sorted(chosen))}")
    return found


def test_how_a_file_is_judged_is_decided_in_one_place():
    """No face (cli, api, views) reads a weight file's puzzle or target to choose its judge, or calls the parts of
    the choice itself (the puzzle a file names, a target's plan, a puzzle's verdict): handwired.judge.judging does,
    once, for all of them."""
    assert judge_choices(MODULES) == []
    assert "handwired.judge.judging" in GRAPH["handwired.cli.check"] | GRAPH["handwired.cli.checking"]
    assert "handwired.judge.judging" in GRAPH["handwired.views.watch"] and "handwired.judge.judging" in GRAPH[
        "handwired.api.judging"]


def test_the_probes_find_a_second_verdict_and_a_choice_made_in_a_face(tmp_path):
    face = tmp_path / "face.py"
    face.write_text("from handwired.judge.game.verdict import submit\nclass Verdict:\n    pass\n"
                    "def judge(hooked):\n    return hooked.model.puzzle or before.target\n", encoding="utf-8")
    assert verdict_classes({"handwired.views.face": face}) == ["handwired.views.face"]
    assert judge_choices({"handwired.views.face": face}) == [
        "handwired.views.face:1 imports submit", "handwired.views.face:5 reads hooked.model.puzzle",
        "handwired.views.face:5 reads before.target"]


# The MLP and the residual stream's step are written once, over an arithmetic, in engine/block_step.py, besides
# forward.py (the readable pass and the oracle).
ONE_STEP = "handwired.engine.block_step"
NOT_YET = {"handwired.engine.forward"}


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _names_c_proj(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and node.value == "c_proj" or isinstance(node, ast.Attribute)
            and node.attr == "c_proj" or isinstance(node, ast.Name) and node.id == "c_proj")


def mlp_steps(tree: ast.AST) -> list[str]:
    """The functions in ``tree`` that make an MLP's or the residual stream's step: named for one (…mlp…, or
    residual), calling one (a call named mlp), or calling a GELU and naming c_proj after it."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        inside = [part for part in ast.walk(node) if hasattr(part, "lineno")]
        calls = [_called(part) for part in inside if isinstance(part, ast.Call)]
        gelu = min(((part.lineno, part.col_offset) for part in inside
                    if isinstance(part, ast.Call) and "gelu" in _called(part).lower()), default=None)
        then_c_proj = gelu is not None and any((part.lineno, part.col_offset) > gelu and _names_c_proj(part)
                                               for part in inside)
        if "mlp" in node.name.lower() or node.name.strip("_") == "residual" or "mlp" in calls or then_c_proj:
            found.append(node.name)
    return found


def test_the_mlp_and_residual_step_is_written_once_in_the_block_step():
    engine = [name for name in MODULES if name.startswith("handwired.engine.") and name not in NOT_YET]
    twice = {name: mlp_steps(ast.parse(MODULES[name].read_text(encoding="utf-8"))) for name in engine}
    assert sorted(twice.pop(ONE_STEP)) == ["block_step", "mlp"]  # the step defines it, and calls it
    assert {name: found for name, found in twice.items() if found} == {}


def test_the_probe_finds_an_mlp_step_in_each_of_its_forms():
    written = '''
def _mlp(x, block):
    return x
def resume(x, h, block):
    return x + mlp(h, **block["mlp"])
def feed(x, layer, weights):
    post = iv.gelu_bounds(linear_columns(x, **layer["c_fc"]))
    return iv.add(x, (linear_columns(post, **layer["c_proj"]), weights))
def _residual(x, out):
    return np.add(x, out, out=x)
def activation(x, c_proj):
    c_proj = c_proj.T
    return gelu(x)
'''
    assert mlp_steps(ast.parse(written)) == ["_mlp", "resume", "feed", "_residual"]


def test_there_is_one_traversal():
    """Every set of contexts is walked by engine/walk.py as a trie (every string, a domain, a list, a stream, a
    sample): no second walker of prefixes, such as the tree engine/tree.py was, and nothing imports one."""
    assert "handwired.engine.tree" not in MODULES
    walkers = [module for module, path in MODULES.items()
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.FunctionDef) and node.name in ("walk", "evaluate_tree", "new_position")]
    assert walkers == ["handwired.engine.walk"], walkers


# What a piece of work costs, in time and memory, is estimated in one module: every per-unit cost constant and every
# estimating function is there, and the rest call it.
ONE_SIZING = "handwired.engine.cost"
COST_CONSTANT = re.compile(r"^(SECONDS|BYTES)_PER_|_COST$")
ESTIMATING = re.compile(r".(_seconds|_bytes|_cost)$|^estimat")  # not the budget's seconds(), nor a part's cost


def cost_definitions(tree: ast.AST) -> list[str]:
    """The cost constants (SECONDS_PER_…, BYTES_PER_…, …_COST) and the estimating functions (…_seconds, …_bytes,
    …_cost, estimate…) ``tree`` defines, at any depth."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ESTIMATING.search(node.name.lower()):
            found.append(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name) and COST_CONSTANT.search(name.id):
                    found.append(name.id)
    return found


def test_the_time_and_memory_of_work_are_estimated_in_one_module():
    """Every cost constant and estimating function is handwired.engine.cost's: no command, view or sub-system prices
    work with a copy of its own (they count it, and refuse it against the budget)."""
    elsewhere = {module: found for module, path in MODULES.items() if module != ONE_SIZING
                 and (found := cost_definitions(ast.parse(path.read_text(encoding="utf-8"))))}
    assert elsewhere == {}
    mine = cost_definitions(ast.parse(MODULES[ONE_SIZING].read_text(encoding="utf-8")))
    assert {"SECONDS_PER_WALKED_MULTIPLY_ADD", "PROOF_COST", "walk_seconds", "walk_bytes", "copy_cost"} <= set(mine)
    users = {module for module, imported in GRAPH.items() if ONE_SIZING in imported}
    assert {"handwired.judge.checking.contexts", "handwired.judge.workbench.variants", "handwired.views.cost",
            "handwired.engine.parts", "handwired.api.tokens"} <= users


def test_the_probe_finds_a_cost_constant_and_an_estimate_defined_elsewhere():
    written = '''
SECONDS_PER_CELL = 75e-6
MAX_VIEW_SECONDS = 30
WAIT, BYTES_PER_ROW = 1e-9, 8
PROOF_COST: float = 2.5
def copy_cost(model):
    return 1
def _node_bytes(model):
    return 1
def estimated_time(model):
    return 1
def seconds(default):
    return 1
'''
    assert sorted(cost_definitions(ast.parse(written))) == ["BYTES_PER_ROW", "PROOF_COST", "SECONDS_PER_CELL",
                                                            "_node_bytes", "copy_cost", "estimated_time"]
