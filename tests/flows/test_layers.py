"""The layer rule of ``flows/`` (stated in flows/__init__.py), read from the source: every import, at module level or
inside a function, goes down the layers or stays in its own package, and no two modules import each other, however
far round."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from tests.conftest import REPO_ROOT

FLOWS = REPO_ROOT / "flows"
ENTRY = {"flows.cli", "flows.optimize", "flows.skill_flow", "flows.serving"}
RANK = {"phases": 5, "scale": 4, "ratchet": 3, "state": 2, "server": 1, "interaction": 1}
GATE_MAY_IMPORT = {"flows.interaction.terminal"}  # one line to the terminal, exit 2: shared with the other commands


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def flows_imports(path: Path) -> set[str]:
    """Every flows module ``path`` imports, wherever the import stands (``from flows.x import y`` names the module
    ``flows.x.y`` when that is a module, else ``flows.x``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "flows":
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if _is_module(candidate) else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "flows"}
    return found - {"flows"}


def _is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (REPO_ROOT / relative).with_suffix(".py").exists() or (REPO_ROOT / relative / "__init__.py").exists()


def layer(module: str) -> str:
    if module in ENTRY:
        return "entry"
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else "flows"


def allowed(importer: str, imported: str) -> bool:
    mine, theirs = layer(importer), layer(imported)
    if mine == "entry" or mine == theirs:
        return True
    if mine == "gate":
        return imported in GATE_MAY_IMPORT
    if theirs in ("entry", "gate", "flows"):
        return False
    return mine in RANK and RANK[theirs] < RANK[mine]


def graph() -> dict[str, set[str]]:
    return {module_name(p): flows_imports(p) for p in sorted(FLOWS.rglob("*.py"))}


def cycle(edges: dict[str, set[str]]) -> list[str]:
    """A cycle among the modules (its first module again at the end), or [] when there is none."""
    try:
        TopologicalSorter(edges).prepare()
    except CycleError as err:
        return list(err.args[1])
    return []


def test_every_import_in_flows_goes_down_the_layers():
    edges = graph()
    against = sorted(f"{a} imports {b} ({layer(a)} → {layer(b)})" for a, targets in edges.items() for b in targets
                     if not allowed(a, b))
    assert not against, "\n".join(against)


def test_no_module_of_flows_is_in_an_import_cycle():
    assert cycle(graph()) == []


def test_the_rule_reads_what_it_claims():
    """The reader itself: an upward import and a cycle are found, in a function body as at the top."""
    assert not allowed("flows.state.run", "flows.ratchet.measure") and allowed("flows.ratchet.measure", "flows.state.run")
    assert not allowed("flows.gate.check", "flows.state.run") and not allowed("flows.phases.init", "flows.gate.check")
    assert allowed("flows.cli", "flows.gate.cli") and allowed("flows.gate.cli", "flows.interaction.terminal")
    assert sorted(set(cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}))) == ["a", "b", "c"]
    assert cycle({"a": {"a"}}) == ["a", "a"] and cycle({"a": {"b"}, "b": set()}) == []
    assert flows_imports(FLOWS / "skill_flow.py") >= {"flows.scale.child"}
    assert "flows.state.ledger" in flows_imports(FLOWS / "ratchet" / "measure.py")
