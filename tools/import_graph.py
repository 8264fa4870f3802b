"""Print the import graph of the project's packages and check the rules between them.

Run ``python tools/import_graph.py`` (or ``make graph``) to print the packages, the rules
between them and the package graph, then every module with its line count and the
project modules it imports. ``--check`` prints nothing but one line per violation and
exits 1 when there is one (0 otherwise). The graph is read from the sources with
``ast``; no project module is imported, so a broken module cannot hide an edge.

Modules are named by their folder in the repository (``sim.publish.world``,
``checks.model``); they install as ``platform_testbed.sim...`` and
``platform_testbed.checks...``, and an import of either spelling is the same edge.

What counts as an edge: every ``import`` and ``from ... import`` of a project module, at
module level, inside a function (a lazy import still couples the two modules) or under
``if TYPE_CHECKING:`` (a hint still ties the two ideas; type-only edges are printed apart
but obey every rule). ``from pkg import name`` is an edge to ``pkg.name`` when that is a
module, otherwise to ``pkg`` (its ``__init__``). A package's ``__init__`` is a node of its
own; the implicit "importing ``pkg.mod`` runs ``pkg/__init__``" is not an edge.

The rules (``--check``), stated here and nowhere else:

1. No cycle between modules, type-only edges included.
2. No cycle between packages, type-only edges included.
3. ``checks`` imports nothing from ``sim`` and no third-party package: only itself (by
   relative imports, so a deploy tool can vendor it under any name) and the standard
   library.
4. Each package imports only the packages ``RULES`` lets it import (below); a package
   missing from ``RULES`` is a violation, so a new package is placed on purpose.
5. The top of ``sim`` holds only the front doors: ``sim`` (its docstring), ``sim.api``
   and ``sim.__main__``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("checks", "sim")
PREFIX = "platform_testbed."

# Which package may import which: the one place these rules are stated. Read it bottom-up:
# decision code, configuration, the process around a run, checks by name, the model, the
# publish, what users look at, the searches over worlds, the entry points.
_BASE = {"checks", "sim.config"}
RULES: dict[str, frozenset[str]] = {
    "checks": frozenset(),
    "sim": frozenset(),
    "sim.config": frozenset({"checks"}),
    "sim.runtime": frozenset(_BASE),
    "sim.checkcmd": frozenset(_BASE),
    "sim.checkload": frozenset(_BASE | {"sim.checkcmd", "sim.runtime"}),
    "sim.platform": frozenset(_BASE),
    "sim.publish": frozenset(_BASE | {"sim.runtime", "sim.checkload", "sim.platform"}),
    "sim.kit": frozenset(_BASE | {"sim.platform"}),
    "sim.show": frozenset(_BASE | {"sim.runtime", "sim.checkload", "sim.platform", "sim.publish"}),
    "sim.rollout": frozenset(_BASE | {"sim.runtime", "sim.platform", "sim.show"}),
    "sim.sweep": frozenset(_BASE | {"sim.runtime", "sim.checkload", "sim.platform", "sim.publish",
                                    "sim.show"}),
    "sim.hunt": frozenset(_BASE | {"sim.runtime", "sim.checkload", "sim.platform", "sim.publish",
                                   "sim.show", "sim.checkcmd"}),
    # sim.vtime: the preload clock for real processes (standard library only).
    "sim.vtime": frozenset(),
    "sim.twin": frozenset(_BASE | {"sim.runtime", "sim.checkload", "sim.platform", "sim.publish",
                                   "sim.show", "sim.vtime"}),
    "sim.cli": frozenset({"checks", "sim.config", "sim.runtime", "sim.checkcmd", "sim.checkload",
                          "sim.platform", "sim.publish", "sim.show", "sim.rollout", "sim.sweep",
                          "sim.hunt", "sim.twin"}),
    # The API never imports the command line: both read sim.config.options (issue 31).
    "sim.api": frozenset({"checks", "sim.config", "sim.runtime", "sim.checkcmd", "sim.checkload",
                          "sim.platform", "sim.publish", "sim.kit", "sim.show", "sim.rollout",
                          "sim.sweep", "sim.hunt", "sim.twin"}),
    "sim.__main__": frozenset({"sim.cli"}),
}
FRONT_DOORS = frozenset({"sim", "sim.api", "sim.__main__"})


@dataclass
class Module:
    """One module of the project: where it is, its size and what it imports."""

    name: str
    path: Path
    lines: int
    imports: set[str] = field(default_factory=set)
    type_only: set[str] = field(default_factory=set)
    external: set[str] = field(default_factory=set)


def module_name(path: Path, root: Path) -> str:
    """Return the dotted name of the module at ``path`` (a package is its ``__init__``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterable[tuple[bool, ast.Import | ast.ImportFrom]]:
    """Yield every import statement with whether it sits under ``if TYPE_CHECKING:``.

    A walk with a stack of its own, past expressions (no statement sits inside one): a
    generator per node nested as deep as the tree cost ten times more.
    """
    stack = [(child, False) for child in ast.iter_child_nodes(tree)]
    while stack:
        node, type_only = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield type_only, node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend((child, True) for child in node.body)
            stack.extend((child, type_only) for child in node.orelse)
        else:
            stack.extend((child, type_only) for child in ast.iter_child_nodes(node)
                         if not isinstance(child, ast.expr))


#: One import statement as written: under TYPE_CHECKING, ``from`` form, module, level, names.
Statement = tuple[bool, bool, str, int, tuple[str, ...]]
_PARSED: dict[str, tuple[Statement, ...]] = {}


def _statements(text: str, filename: str) -> tuple[Statement, ...]:
    """The import statements of one source text, each distinct text parsed once per process.

    A process that scans several trees (tests/test_layout.py scans a copy of the project per
    planted break) reads every file each time but parses only what it has not seen.
    """
    if text not in _PARSED:
        _PARSED[text] = tuple(
            (type_only, isinstance(node, ast.ImportFrom),
             (node.module or "") if isinstance(node, ast.ImportFrom) else "",
             node.level if isinstance(node, ast.ImportFrom) else 0,
             tuple(alias.name for alias in node.names))
            for type_only, node in _imports(ast.parse(text, filename=filename))
        )
    return _PARSED[text]


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def scan(root: Path = ROOT) -> dict[str, Module]:
    """Read every module of ``PACKAGES`` under ``root`` and resolve its imports."""
    files = sorted(p for pkg in PACKAGES for p in (root / pkg).rglob("*.py"))
    modules = {
        module_name(p, root): Module(module_name(p, root), p, len(p.read_text().splitlines()))
        for p in files
    }

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    for mod in modules.values():
        for type_only, from_form, written, level, names in _statements(mod.path.read_text(),
                                                                        str(mod.path)):
            if not from_form:
                targets = list(names)
            else:
                base = written
                if level:
                    pkg = _package_of(mod.name, mod.path).split(".")
                    pkg = pkg[: len(pkg) - level + 1]
                    base = ".".join([*pkg, base] if base else pkg)
                targets = [f"{base}.{name}" for name in names]
            for raw in targets:
                if raw.startswith(PREFIX) and mod.name.split(".")[0] == "checks":
                    mod.external.add("platform_testbed")  # named apart by the checks rule
                target = raw.removeprefix(PREFIX)
                top = target.split(".")[0]
                if top not in PACKAGES:
                    mod.external.add(top)
                    continue
                found = resolve(target)
                if found is None or found == mod.name:
                    continue
                (mod.type_only if type_only else mod.imports).add(found)
    return modules


def _edges(mod: Module) -> set[str]:
    return mod.imports | mod.type_only


def _cycle(nodes: Iterable[str], edges: dict[str, set[str]]) -> list[str] | None:
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str] | None:
        colour[name] = 1
        stack.append(name)
        for dep in sorted(edges.get(name, ())):
            if colour.get(dep) == 1:
                return [*stack[stack.index(dep):], dep]
            if dep not in colour and (found := visit(dep)):
                return found
        stack.pop()
        colour[name] = 2
        return None

    for name in sorted(nodes):
        if name not in colour and (found := visit(name)):
            return found
    return None


def find_cycle(modules: dict[str, Module]) -> list[str] | None:
    """Return one import cycle between modules (first repeated last), or None."""
    return _cycle(modules, {n: _edges(m) for n, m in modules.items()})


def find_package_cycle(modules: dict[str, Module]) -> list[str] | None:
    """Return one import cycle between packages (first repeated last), or None."""
    graph = package_graph(modules)
    return _cycle(graph, graph)


def levels(modules: dict[str, Module]) -> tuple[int, list[str]]:
    """Return the number of modules on the longest import path and that path (no cycles)."""
    memo: dict[str, list[str]] = {}

    def longest(name: str) -> list[str]:
        if name not in memo:
            below = [longest(dep) for dep in sorted(_edges(modules[name]))]
            memo[name] = [name, *max(below, key=len, default=[])]
        return memo[name]

    path = max((longest(n) for n in sorted(modules)), key=len, default=[])
    return len(path), path


def package_of(name: str) -> str:
    """Return the package ``name`` belongs to: ``checks``, ``sim.<pkg>`` or a front door."""
    parts = name.split(".")
    if parts[0] == "checks":
        return "checks"
    return ".".join(parts[:2])


def package_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Return the module edges (type-only included) collapsed onto packages."""
    out: dict[str, set[str]] = {package_of(n): set() for n in modules}
    for name, mod in modules.items():
        for dep in _edges(mod):
            if package_of(dep) != package_of(name):
                out[package_of(name)].add(package_of(dep))
    return out


def violations(modules: dict[str, Module]) -> list[str]:
    """Return one line per broken rule (see the module docstring), in a stable order."""
    out: list[str] = []
    if cycle := find_cycle(modules):
        out.append("cycle: " + " -> ".join(cycle))
    if cycle := find_package_cycle(modules):
        out.append("package cycle: " + " -> ".join(cycle))
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    for name, mod in sorted(modules.items()):
        pkg = package_of(name)
        if pkg == "checks":
            for dep in sorted(_edges(mod)):
                if not dep.startswith("checks"):
                    out.append(f"checks imports sim: {name} imports {dep}")
            for ext in sorted(mod.external - stdlib - {"platform_testbed"}):
                out.append(f"checks imports a third-party package: {name} imports {ext}")
            if "platform_testbed" in mod.external:
                out.append(f"checks imports itself by an absolute name: {name} (use relative imports)")
        if package_of(name) == name and name.startswith("sim.") and mod.path.name != "__init__.py" \
                and name not in FRONT_DOORS:
            out.append(f"not a front door: {name} sits at the top of sim (place it in a package)")
        if pkg not in RULES:
            out.append(f"no rule: package {pkg} is not in the RULES table of tools/import_graph.py")
            continue
        for dep in sorted(_edges(mod)):
            theirs = package_of(dep)
            if theirs != pkg and theirs not in RULES[pkg]:
                kind = " (type-only)" if dep not in mod.imports else ""
                out.append(f"not allowed: {name} imports {dep}{kind} ({pkg} may not import {theirs})")
    return out


def render(modules: dict[str, Module]) -> str:
    """Return the printed graph: packages and their rules, the package graph, then modules."""
    rows = ["packages, what each may import (RULES), and what it does import:"]
    graph = package_graph(modules)
    for pkg in sorted(graph, key=lambda p: (len(RULES.get(p, ())), p)):
        lines = sum(m.lines for n, m in modules.items() if package_of(n) == pkg)
        count = sum(package_of(n) == pkg for n in modules)
        rows.append(f"  {pkg:<14} {count:>3} modules {lines:>6} lines")
        rows.append(f"      may import: {', '.join(sorted(RULES.get(pkg, ()))) or '-'}")
        rows.append(f"      imports:    {', '.join(sorted(graph[pkg])) or '-'}")
    rows.append("")
    rows.append("modules:")
    for name in sorted(modules):
        mod = modules[name]
        deps = ", ".join(sorted(mod.imports)) or "-"
        line = f"  {name:<30} {mod.lines:>4}  -> {deps}"
        if mod.type_only:
            line += f"   [TYPE_CHECKING: {', '.join(sorted(mod.type_only))}]"
        rows.append(line)
    n_edges = sum(len(_edges(m)) for m in modules.values())
    if find_cycle(modules) is None:
        n_levels, path = levels(modules)
        rows.append(f"levels: {n_levels} (longest path: {' -> '.join(path)})")
    else:
        rows.append("levels: undefined (the graph has a cycle)")
    rows.append(
        f"modules: {len(modules)}  edges: {n_edges}  lines: "
        f"{sum(m.lines for m in modules.values())}  largest: "
        + ", ".join(
            f"{m.name} {m.lines}"
            for m in sorted(modules.values(), key=lambda m: (-m.lines, m.name))[:3]
        )
    )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Print the graph, or with ``--check`` the violations; exit 1 when there is one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print violations; exit 1 if any")
    parser.add_argument("--root", type=Path, default=ROOT, help="the project to read")
    args = parser.parse_args(argv)
    modules = scan(args.root)
    if args.check:
        found = violations(modules)
        for line in found:
            print(line)
        return 1 if found else 0
    print(render(modules))
    return 0


if __name__ == "__main__":
    sys.exit(main())
