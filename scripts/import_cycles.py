"""Fail on an import cycle among the modules of bench/, or on an import that breaks bench/layers.toml's declared layer
order (run by `make lint` and tests/test_imports.py).

The graph is read with ast, nothing is imported: an edge A -> B for every `import B` / `from B import x` in A,
at module level or inside a function (a deferred import only hides a cycle, it does not break it). `from P import m`
where P.m is a module is an edge to P.m alone: a package's __init__ importing its submodules is no cycle.

The layers, lowest first, are bench/layers.toml's: a module imports its own layer and those below, never above; the
modules of an `independent` group import none of one another; each exception is an `allowed` entry with its reason,
and an entry that no longer excuses any import fails too, so the list only shrinks.

    python3 scripts/import_cycles.py [ROOT]     # ROOT holds bench/ (default: this checkout); exit 1 on a cycle or
                                                # a broken layer
"""
from __future__ import annotations

import ast
import fnmatch
import sys
import tomllib
from pathlib import Path

PACKAGE = "bench"
LAYERS = Path(PACKAGE) / "layers.toml"


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


def matches(module: str, pattern: str) -> bool:
    """A module name takes itself and the modules below it (the package's own name only its __init__, so that a new
    module is placed on purpose); a pattern with * takes what fnmatch matches."""
    below = pattern != PACKAGE and module.startswith(pattern + ".")
    return module == pattern or below or fnmatch.fnmatchcase(module, pattern)


def layer_of(module: str, layers: list[dict]) -> int | None:
    """The index of the module's layer: that of its longest matching pattern; None where none matches."""
    found = [(len(p), i) for i, layer in enumerate(layers) for p in layer["modules"] if matches(module, p)]
    return max(found)[1] if found else None


def layer_problems(graph: dict[str, set[str]], declared: dict) -> list[str]:
    """Modules placed in no layer, imports that go up a layer or across an independent group (unless allowed),
    and allowed entries that excuse nothing."""
    layers = declared["layer"]
    allowed = {(a["importer"], a["imported"]) for a in declared.get("allowed", [])}
    problems = [f"{m} is in no layer of {LAYERS}: add it to the layer it belongs to" for m in sorted(graph)
                if layer_of(m, layers) is None]  # fmt: skip
    broken: set[tuple[str, str]] = set()
    for importer in sorted(graph):
        for imported in sorted(graph[importer]):
            low, high = layer_of(importer, layers), layer_of(imported, layers)
            if low is not None and high is not None and high > low:
                broken.add((importer, imported))
                if (importer, imported) not in allowed:
                    problems.append(
                        f"upward import: {importer} ({layers[low]['name']}) imports {imported} "
                        f"({layers[high]['name']}); move the code down, or allow it in {LAYERS} with a reason"
                    )
    for group in declared.get("independent", []):
        for importer in sorted(graph):
            for imported in sorted(graph[importer]):
                sides = [next((p for p in group["modules"] if matches(m, p)), None) for m in (importer, imported)]
                if None not in sides and sides[0] != sides[1]:
                    broken.add((importer, imported))
                    if (importer, imported) not in allowed:
                        problems.append(f"{importer} imports {imported}: {group['name']} are independent")
    problems += [f"allowed in {LAYERS}, yet no such import breaks a layer: remove {a} -> {b}"
                 for a, b in sorted(allowed - broken)]  # fmt: skip
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    graph = import_graph(root)
    found = cycles(graph)
    for component in found:
        edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
        print(f"import cycle among {', '.join(component)}: {'; '.join(edges)}")
    if not found:
        print(f"no import cycle among the {len(graph)} modules of {PACKAGE}/")
    declared = tomllib.loads((root / LAYERS).read_text())
    problems = layer_problems(graph, declared)
    for problem in problems:
        print(problem)
    if not problems:
        names = " < ".join(layer["name"] for layer in declared["layer"])
        allowed = len(declared.get("allowed", []))
        print(f"every import keeps the layer order {names} ({allowed} allowed, each with its reason)")
    return 1 if found or problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
