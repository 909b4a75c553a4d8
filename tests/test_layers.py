"""The layer rule of the four packages, read from the source.

Between packages imports go one way: ``scoring`` (pure rubric logic) ← ``workspace`` (state on disk) ← ``judges``
(models) ← ``flows`` (Prefect). Inside ``flows`` the layers of flows/__init__.py hold. Every import counts — at module
level, inside a function, or under ``TYPE_CHECKING`` — and no two modules import each other, however far round.
Below the flows, nothing reaches Prefect; and an import inside a function must keep something heavy out of its
module's import (a command module may import what its command runs)."""

from __future__ import annotations

import ast
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGES = ("scoring", "workspace", "judges", "flows")  # lowest first
ENTRY = {"flows.cli", "flows.optimize", "flows.skill_flow", "flows.serving"}
RANK = {"phases": 5, "scale": 4, "ratchet": 3, "state": 2, "server": 1, "interaction": 1, "route": 2}
GATE_MAY_IMPORT = {"flows.interaction.terminal"}  # one line to the terminal, exit 2: shared with the other commands
# What a function-level import may keep out of a module's own import: Prefect, model clients, data frames, git, charts.
HEAVY = {"prefect", "openai", "pandas", "numpy", "scipy", "matplotlib", "git", "httpx", "tiktoken"}
# Each command imports what it runs, so `luban --help` and `luban score` do not pay for the other commands.
PREFECT_SIDE_OF_THE_ROUND = {"flows.ratchet.tasks", "flows.ratchet.effects"}  # PrefectMeasurements, PrefectEffects
COMMAND_MODULES = {"flows.cli", "flows.gate.cli", "flows.interaction.records_cli", "flows.interaction.doctor",
                   "flows.route.cli"}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (REPO_ROOT / relative).with_suffix(".py").exists() or (REPO_ROOT / relative / "__init__.py").exists()


def imported(node: ast.Import | ast.ImportFrom) -> set[str]:
    """The modules one import statement names (``from a.b import c`` names ``a.b.c`` when that is a module)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if not node.module or node.level:
        return set()
    return {f"{node.module}.{a.name}" if _is_module(f"{node.module}.{a.name}") else node.module for a in node.names}


def ours(names: set[str]) -> set[str]:
    return {n for n in names if n.split(".")[0] in PACKAGES} - set(PACKAGES)


def repo_imports(path: Path) -> set[str]:
    """Every module of the four packages ``path`` imports, wherever the import stands."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return set().union(*(ours(imported(n)) for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)))


def modules() -> list[Path]:
    return [p for package in PACKAGES for p in sorted((REPO_ROOT / package).rglob("*.py"))]


def graph() -> dict[str, set[str]]:
    return {module_name(p): repo_imports(p) for p in modules()}


def flows_layer(module: str) -> str:
    if module in ENTRY:
        return "entry"
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else "flows"


def allowed(importer: str, target: str) -> bool:
    mine, theirs = importer.split(".")[0], target.split(".")[0]
    if mine != theirs:
        return PACKAGES.index(theirs) < PACKAGES.index(mine)
    if mine != "flows":
        return True
    mine, theirs = flows_layer(importer), flows_layer(target)
    if mine == "entry" or mine == theirs:
        return True
    if mine == "gate":
        return target in GATE_MAY_IMPORT
    if mine == "route" and theirs == "gate":
        return True  # `luban route` reads skills and listings as `luban score` does
    if theirs in ("entry", "gate", "flows"):
        return False
    return mine in RANK and RANK[theirs] < RANK[mine]


def cycle(edges: dict[str, set[str]]) -> list[str]:
    """A cycle among the modules (its first module again at the end), or [] when there is none."""
    try:
        TopologicalSorter(edges).prepare()
    except CycleError as err:
        return list(err.args[1])
    return []


def _module_level(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports that run when the module is imported: not inside a function, not under ``if TYPE_CHECKING``."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo += node.orelse
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo += [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
    return found


def _in_functions(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    functions = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
    return [n for f in functions for n in ast.walk(f) if isinstance(n, ast.Import | ast.ImportFrom)]


def heavy_on_import() -> dict[str, set[str]]:
    """Per module, the heavy packages importing it loads, through the modules it imports at module level."""
    direct, edges = {}, {}
    for path in modules():
        names = set().union(*map(imported, _module_level(ast.parse(path.read_text(encoding="utf-8")))))
        direct[module_name(path)] = {n.split(".")[0] for n in names} & HEAVY
        edges[module_name(path)] = ours(names) | _packages_of(ours(names))
    heavy = {}
    for module in edges:
        seen, todo = {module}, [module]
        while todo:
            for nxt in edges.get(todo.pop(), set()) - seen:
                seen.add(nxt)
                todo.append(nxt)
        heavy[module] = set().union(*(direct.get(m, set()) for m in seen))
    return heavy


def _packages_of(names: set[str]) -> set[str]:
    return {".".join(n.split(".")[:i]) for n in names for i in range(2, len(n.split(".")))}


def idle_in(importer: str, tree: ast.Module, heavy: dict[str, set[str]]) -> list[tuple[int, set[str]]]:
    """(line, modules) of each function-level import in ``tree`` that keeps nothing heavy out of ``importer``'s import."""
    idle = []
    for node in _in_functions(tree):
        names = imported(node)
        kept_out = set().union(*(heavy.get(n, set()) for n in ours(names))) | ({n.split(".")[0] for n in names} & HEAVY)
        light = {n for n in names if n.split(".")[0] in sys.stdlib_module_names} | ours(names)
        if names <= light and kept_out <= heavy.get(importer, set()):
            idle.append((node.lineno, names))
    return idle


def idle_function_imports() -> list[str]:
    """Function-level imports that could stand at the top of their module (command modules aside)."""
    heavy = heavy_on_import()
    return [f"{path.relative_to(REPO_ROOT)}:{line} imports {', '.join(sorted(names))}" for path in modules()
            if module_name(path) not in COMMAND_MODULES
            for line, names in idle_in(module_name(path), ast.parse(path.read_text(encoding="utf-8")), heavy)]


def test_every_import_goes_down_the_layers():
    edges = graph()
    against = sorted(f"{a} imports {b}" for a, targets in edges.items() for b in targets if not allowed(a, b))
    assert not against, "\n".join(against)


def test_no_module_is_in_an_import_cycle():
    assert cycle(graph()) == []


def test_nothing_below_the_flows_nor_the_round_reaches_prefect():
    """The rubric, the records, the judges, the run's state and the round itself (propose, measure, decide, apply,
    record) can be imported, used and tested without Prefect: only the round's Prefect side imports it."""
    below = [m for m in map(module_name, modules()) if not m.startswith("flows.") or
             (m.startswith(("flows.state", "flows.ratchet")) and m not in PREFECT_SIDE_OF_THE_ROUND)]
    program = f"import importlib, sys\nfor m in {below!r}: importlib.import_module(m)\nprint('prefect' in sys.modules)"
    answer = subprocess.run([sys.executable, "-c", program], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert answer.stdout.strip() == "False"


def test_every_import_inside_a_function_keeps_something_heavy_out():
    assert idle_function_imports() == []


def test_the_rule_reads_what_it_claims():
    """The reader itself: an upward import and a cycle are found, in a function body as at the top."""
    assert not allowed("flows.state.run", "flows.ratchet.measure") and allowed("flows.ratchet.measure", "flows.state.run")
    assert not allowed("flows.gate.check", "flows.state.run") and not allowed("flows.phases.init", "flows.gate.check")
    assert allowed("flows.cli", "flows.gate.cli") and allowed("flows.gate.cli", "flows.interaction.terminal")
    assert not allowed("scoring.model", "judges.usage") and not allowed("workspace.profile", "judges.llm")
    assert allowed("judges.backend", "workspace.test_prompts") and not allowed("judges.llm", "flows.state.run")
    assert sorted(set(cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}))) == ["a", "b", "c"]
    assert cycle({"a": {"a"}}) == ["a", "a"] and cycle({"a": {"b"}, "b": set()}) == []
    assert repo_imports(REPO_ROOT / "flows" / "skill_flow.py") >= {"flows.scale.child"}
    assert "flows.state.ledger" in repo_imports(REPO_ROOT / "flows" / "ratchet" / "measure.py")
    heavy = heavy_on_import()
    assert "prefect" in heavy["flows.ratchet.tasks"] and "git" in heavy["workspace.git_repository"]
    assert heavy["scoring.model"] == set() and "prefect" not in heavy["flows.phases.preflight"]
    tree = ast.parse("import a\nif TYPE_CHECKING:\n    import b\nelse:\n    import c\ndef f():\n    import d\n"
                     "class K:\n    import e\n    def g(self):\n        import f\ntry:\n    import g\nexcept ImportError:\n    pass\n")
    assert sorted(n for node in _module_level(tree) for n in imported(node)) == ["a", "c", "e", "g"]
    lazy = ast.parse("def f():\n    import json\n    from flows.ratchet import tasks\n    from scoring import formula\n"
                     "    import pandas\n")
    assert idle_in("scoring.model", lazy, heavy) == [(2, {"json"}), (4, {"scoring.formula"})]
    assert (3, {"flows.ratchet.tasks"}) in idle_in("flows.ratchet.tasks", lazy, heavy)  # Prefect is there already
