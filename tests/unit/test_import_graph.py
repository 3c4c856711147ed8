"""The package has no import cycles: modules import one way (DESIGN.md section 2).

Every ``import``/``from ... import`` of an ``archsim`` module counts, also inside functions and
under ``if TYPE_CHECKING:`` -- a deferred import that dodges a cycle is still a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import archsim

PACKAGE = Path(archsim.__file__).parent


def _module_name(path: Path) -> str:
    parts = ["archsim", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """module -> archsim modules it imports (``from pkg import sub`` counts as ``pkg.sub``)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative import
                    base = name.split(".")[: len(name.split(".")) - node.level + is_pkg]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    edges.add(sub if sub in modules else target)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def _without_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Drop package ``__init__`` modules: they re-export their children by design."""
    packages = {m for m in graph if (PACKAGE / Path(*m.split(".")[1:]) / "__init__.py").exists()}
    packages.add("archsim")
    return {m: e - packages for m, e in graph.items() if m not in packages}


def test_the_checker_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_graph_sees_the_real_imports() -> None:
    graph = import_graph()
    assert "archsim.config.base" in graph["archsim.config.io"]
    assert "archsim.errors" in graph["archsim.config.base"]


def test_no_import_cycles_between_modules() -> None:
    cycle = find_cycle(_without_packages(import_graph()))
    assert cycle is None, " -> ".join(cycle or [])
