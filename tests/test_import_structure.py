"""The package's import graph keeps its layers (ARCHITECTURE.md): imports
run only downward, distribution has one home, and no import cycle joins
modules of different packages.

Run as a script to print the graph's summary (upward imports, function-level
imports in ``distribute/`` and ``steps/``, cycles)::

    python tests/test_import_structure.py
"""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kerasflow"

# Layers, lowest first (ARCHITECTURE.md's table).
LAYERS = {
    "distribute": 3, "steps": 2.5, "data": 2.5, "layers": 2,
    "callbacks": 4, "compat": 4, "saving": 4, "models": 5, "estimators": 6,
}
ABOVE_DISTRIBUTION = ("models", "compat", "estimators", "callbacks")


def _modules() -> dict:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_edges() -> list:
    """Every import of a kerasflow module by a kerasflow module, as
    ``(importer, imported, line, inside_function)``; ``from pkg import mod``
    names the module ``pkg.mod``."""
    mods = _modules()
    edges = []

    def visit(name, node, in_function):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                edges.extend((name, a.name, child.lineno, in_function)
                             for a in child.names if a.name.startswith("kerasflow"))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    pkg = name.split(".")
                    if not str(mods[name]).endswith("__init__.py"):
                        pkg = pkg[:-1]
                    pkg = pkg[:len(pkg) - child.level + 1]
                    base = ".".join(pkg + ([base] if base else []))
                if base.startswith("kerasflow"):
                    for a in child.names:
                        full = f"{base}.{a.name}"
                        edges.append((name, full if full in mods else base,
                                      child.lineno, in_function))
            visit(name, child, nested)

    for name, path in sorted(mods.items()):
        visit(name, ast.parse(path.read_text(encoding="utf-8")), False)
    return edges


def package_of(module: str) -> str:
    """``kerasflow.distribute.mirrored.replica`` -> ``distribute``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def cycles(edges) -> list:
    """The strongly connected components (more than one module) of the graph
    (Tarjan's algorithm), each a sorted list of module names."""
    graph = defaultdict(set)
    for a, b, _, _ in edges:
        if a != b:
            graph[a].add(b)
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    # Iterative, so no recursion limit is touched (CPython 3.11's ast.parse
    # fails after the limit changes).
    for root in sorted(set(graph) | {w for ws in graph.values() for w in ws}):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def upward(edges) -> list:
    """Imports from a lower layer into a higher one (as ``importer -> imported``)."""
    bad = []
    for a, b, line, _ in edges:
        la, lb = LAYERS.get(package_of(a)), LAYERS.get(package_of(b))
        if la is not None and lb is not None and lb > la:
            bad.append(f"{a}:{line} -> {b}")
    return bad


def test_distribution_and_steps_import_no_higher_layer():
    bad = [f"{a}:{line} -> {b}" for a, b, line, _ in import_edges()
           if package_of(a) in ("distribute", "steps")
           and package_of(b) in ABOVE_DISTRIBUTION]
    assert bad == []


def test_data_knows_nothing_of_distribution():
    bad = [f"{a}:{line} -> {b}" for a, b, line, _ in import_edges()
           if package_of(a) == "data" and package_of(b) in ("distribute", "steps")]
    assert bad == []


def test_distribute_imports_its_own_modules_at_the_top():
    bad = [f"{a}:{line} -> {b}" for a, b, line, inside in import_edges()
           if inside and package_of(a) in ("distribute", "steps")
           and package_of(b) in ("distribute", "steps")]
    assert bad == []


def test_no_upward_import_between_layered_packages():
    assert upward(import_edges()) == []


def test_no_cycle_spans_packages_or_lives_in_distribute():
    bad = [c for c in cycles(import_edges())
           if len({package_of(m) for m in c}) > 1
           or any(package_of(m) == "distribute" for m in c)]
    assert bad == []


def test_ray_is_imported_by_one_module():
    importers = sorted(
        name for name, path in _modules().items()
        if any(isinstance(n, (ast.Import, ast.ImportFrom))
               and any((getattr(n, "module", None) or a.name).split(".")[0] == "ray"
                       for a in n.names)
               for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))))
    assert importers == ["kerasflow.distribute.runtime.ray"]


def test_the_checks_see_a_planted_violation(tmp_path):
    # The walk must notice an upward, function-level import (else the tests
    # above could pass on an empty graph).
    edges = import_edges()
    assert any(a == "kerasflow.distribute.distribute_lib" for a, _, _, _ in edges)
    planted = edges + [("kerasflow.distribute.values", "kerasflow.models.model", 1, True),
                       ("kerasflow.models.model", "kerasflow.distribute.values", 1, False)]
    assert upward(planted) == ["kerasflow.distribute.values:1 -> kerasflow.models.model"]
    # models.model reaches distribute.values through the training loop, so the
    # planted cycle holds every module on those paths, not just the two.
    assert any({"kerasflow.distribute.values", "kerasflow.models.model"} <= set(c)
               for c in cycles(planted))


def main() -> None:
    edges = import_edges()
    print(f"{len({a for a, *_ in edges})} modules, {len(edges)} imports "
          f"({sum(e[3] for e in edges)} inside functions)")
    print("\nupward imports between layered packages:")
    for line in upward(edges) or ["  none"]:
        print(" ", line)
    print("\nimports inside functions in distribute/ and steps/:")
    inside = [f"{a}:{ln} -> {b}" for a, b, ln, f in edges
              if f and package_of(a) in ("distribute", "steps")]
    for line in inside or ["  none"]:
        print(" ", line)
    print("\nimport cycles (strongly connected modules):")
    for comp in cycles(edges) or [["none"]]:
        pk = sorted({package_of(m) or "kerasflow" for m in comp})
        print(f"  [{', '.join(pk)}] " + " ".join(comp))


if __name__ == "__main__":
    os.chdir(PACKAGE.parent)
    main()
