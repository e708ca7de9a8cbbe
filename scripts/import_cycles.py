"""Fail on an import cycle among the modules of bench/ (run by `make lint` and tests/test_imports.py).

The graph is read with ast, nothing is imported: an edge A -> B for every `import B` / `from B import x` in A,
at module level or inside a function (a deferred import only hides a cycle, it does not break it). `from P import m`
where P.m is a module is an edge to P.m alone: a package's __init__ importing its submodules is no cycle.

    python3 scripts/import_cycles.py [ROOT]     # ROOT holds bench/ (default: this checkout); exit 1 on a cycle
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "bench"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the modules of the package it imports."""
    files = {module_name(p, root): p for p in sorted((root / PACKAGE).rglob("*.py"))}
    graph: dict[str, set[str]] = {m: set() for m in files}

    def known(name: str) -> str | None:  # the longest prefix of name that is a module of the package
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package, up level - 1
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in files else base)
            for target in targets:
                found = known(target) if target.split(".")[0] == PACKAGE else None
                if found and found != module:
                    graph[module].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    graph = import_graph(root)
    found = cycles(graph)
    for component in found:
        edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
        print(f"import cycle among {', '.join(component)}: {'; '.join(edges)}")
    if not found:
        print(f"no import cycle among the {len(graph)} modules of {PACKAGE}/")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
