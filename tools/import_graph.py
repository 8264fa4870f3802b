"""Print the import graph of the project's packages and check the layout rules.

Run ``python tools/import_graph.py`` (or ``make graph``) to print every module of
``checks`` and ``sim`` with its layer, its line count and the project modules it
imports; then the number of levels (modules on the longest import path) and the
number of edges. ``--check`` prints nothing but one line per violation and exits 1
when there is one (0 otherwise). The graph is read from the sources with ``ast``; no
project module is imported, so a broken module cannot hide an edge.

What counts as an edge: every ``import`` and ``from ... import`` of a project module,
at module level or inside a function (a lazy import still couples the two modules).
``from pkg import name`` is an edge to ``pkg.name`` when that is a module, otherwise
to ``pkg`` (its ``__init__``). Imports under ``if TYPE_CHECKING:`` are listed apart and
are not edges: they never run. A package's ``__init__`` is a node of its own; the
implicit "importing ``pkg.mod`` runs ``pkg/__init__``" is not an edge, or every package
that re-exports its modules (as SimPy's does) would be a cycle.

Rules (``--check``):

1. No cycles between modules.
2. ``checks`` imports nothing from ``sim`` and no third-party package: only itself and
   the standard library (``sys.stdlib_module_names``), so a deploy tool can vendor it.
3. Imports run down the layer table below: a module never imports a module of a
   higher layer. In particular configuration (layer 1) never imports the model
   (layer 3), and what users look at (layer 4) never reaches up into sweeps (layer 5),
   as DESIGN.md asks ("nothing in show/ reaches up into sweep/").
4. Nothing in ``sim.show`` imports ``sim.sweep`` (stated on its own as well, because it
   is the rule DESIGN.md names).
5. No module has more than ``MAX_LINES`` lines.

The layer table, worked out from what each module imports today (the most specific
prefix wins; a module missing from it is a violation, so a new module gets a layer):

====  ======================  ==============================================================
 0    checks                  pure decision code: looks in, waits and verdicts out
 1    configuration           settings, profiles, scenario tables, sweep and rollout files,
                              check loading (loader, checkcmd)
 2    engine                  traffic draws, event log, behaviours
 3    model                   machine, publish world/site/compare, rollout world, test kit
                              (testing, strategies), recordings
 4    presentation            reports, timelines, plots, explore; rollout report/timeline
 5    sweeps                  sweep units/run/output/heatmap; rollout sweep; hunt (a search
                              over worlds)
 6    entry points            the command lines
====  ======================  ==============================================================

Configuration sits above ``checks`` only: ``sim.sweep.file`` and ``sim.loader`` load
checks by name, and ``sim.checkcmd`` is a check (it speaks JSON Lines to a subprocess),
so they are configuration-time code that never needs a machine. ``sim.rollout.expect``
reads a rollout result and so sits with presentation.
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
MAX_LINES = 400

LAYER_NAMES = {
    0: "checks",
    1: "config",
    2: "engine",
    3: "model",
    4: "show",
    5: "sweeps",
    6: "entry",
}

# Most specific prefix wins (see the module docstring for the reasons).
LAYERS: dict[str, int] = {
    "checks": 0,
    "sim": 1,  # the package docstring only (an exact entry, see EXACT)
    "sim.settings": 1,
    "sim.scenario": 1,
    "sim.platform": 1,  # the package docstring only (an exact entry, see EXACT)
    "sim.platform.profiles": 1,
    "sim.sweep.file": 1,
    "sim.rollout.config": 1,
    "sim.loader": 1,
    "sim.checkcmd": 1,
    "sim.about": 1,
    "sim.shipped": 1,  # the shipped files' names, standard library only (a shell's Tab)
    "sim.frames": 1,  # to_pandas(): the optional pandas import and the result dtypes
    "sim.outputs": 1,  # output paths judged before work, written atomically
    "sim.checklimits": 1,  # --check-timeout / --max-looks, through the environment
    "sim.signals": 1,  # Ctrl-C and SIGTERM as checks.drive.Interrupt
    "sim.show.table": 1,  # tables and prose fitted to the terminal (rich only)
    "sim.traffic": 2,
    "sim.platform.eventlog": 2,
    "sim.platform.serving": 2,
    "sim.platform.behavior": 2,
    "sim.platform.restarting": 2,  # flyd's restart policy (the machine's life asks it)
    "sim.rollout.server": 2,
    "sim.rollout.drain": 2,
    "sim.rollout.traffic": 2,
    "sim.platform.machine": 3,
    "sim.publish": 3,
    "sim.rollout.balancer": 3,
    "sim.rollout.watchdog": 3,
    "sim.rollout.deploy": 3,
    "sim.rollout.result": 3,
    "sim.rollout.world": 3,
    "sim.testing": 3,
    "sim.strategies": 3,  # the test kit's hypothesis strategies, over sim.testing
    "sim.recording": 3,
    "sim.show": 4,
    "sim.junit": 4,  # CI's view of results (JUnit XML), beside the reports
    "sim.expect": 4,  # replay --expect: judged on replay rows
    "sim.compareopts": 4,  # compare's --details (JSON Lines), --summary, run limit
    "sim.rollout.expect": 4,
    "sim.rollout.report": 4,
    "sim.rollout.timeline": 4,
    "sim.rollout.runs": 4,  # a scenario over seeds as one value: --json and to_pandas()
    "sim.sweep": 5,
    "sim.rollout.sweep": 5,
    "sim.hunt": 5,
    "sim.rollout": 6,  # __init__ re-exports config, result and world: the public face
    "sim.cli": 6,
    "sim.launch": 6,  # the console script: quiet signal handlers while sim.cli imports
    "sim.commands": 6,  # list/compare/replay/checks/series handlers, imported when they run
    "sim.parsers": 6,  # sweep/rollout/lint-timing arguments, apart from their heavy packages
    "sim.api": 6,  # the Python front door: gathers loading, runs, comparisons and sweeps
    "sim.completion": 6,  # `testbed completion` and the completers (argcomplete)
    "sim.__main__": 6,
    "sim.sweep.cli": 6,
    "sim.rollout.cli": 6,
    "sim.rollout.__main__": 6,
}


# Entries that place one module only, not the modules under it: a new top-level module of
# ``sim`` or a new module of ``sim.platform`` must be given its own layer.
EXACT = frozenset({"sim", "sim.platform"})


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


def _imports(tree: ast.AST, type_only: bool = False) -> Iterable[tuple[bool, ast.stmt]]:
    """Yield every import statement with whether it sits under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield type_only, node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), True)
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), type_only)
        else:
            yield from _imports(node, type_only)


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
        tree = ast.parse(mod.path.read_text(), filename=str(mod.path))
        for type_only, node in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                assert isinstance(node, ast.ImportFrom)
                base = node.module or ""
                if node.level:
                    pkg = _package_of(mod.name, mod.path).split(".")
                    pkg = pkg[: len(pkg) - node.level + 1]
                    base = ".".join([*pkg, base] if base else pkg)
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                top = target.split(".")[0]
                if top not in PACKAGES:
                    mod.external.add(top)
                    continue
                found = resolve(target)
                if found is None or found == mod.name:
                    continue
                (mod.type_only if type_only else mod.imports).add(found)
    return modules


def layer_of(name: str) -> int | None:
    """Return the layer of module ``name`` from ``LAYERS`` (most specific prefix)."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in EXACT and prefix != name:
            continue
        if prefix in LAYERS:
            return LAYERS[prefix]
    return None


def find_cycle(modules: dict[str, Module]) -> list[str] | None:
    """Return one import cycle as a list of modules (first repeated last), or None."""
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str] | None:
        colour[name] = 1
        stack.append(name)
        for dep in sorted(modules[name].imports):
            if colour.get(dep) == 1:
                return [*stack[stack.index(dep):], dep]
            if dep not in colour and (found := visit(dep)):
                return found
        stack.pop()
        colour[name] = 2
        return None

    for name in sorted(modules):
        if name not in colour and (found := visit(name)):
            return found
    return None


def levels(modules: dict[str, Module]) -> tuple[int, list[str]]:
    """Return the number of modules on the longest import path and that path (no cycles)."""
    memo: dict[str, list[str]] = {}

    def longest(name: str) -> list[str]:
        if name not in memo:
            below = [longest(dep) for dep in sorted(modules[name].imports)]
            memo[name] = [name, *max(below, key=len, default=[])]
        return memo[name]

    path = max((longest(n) for n in sorted(modules)), key=len, default=[])
    return len(path), path


def violations(modules: dict[str, Module]) -> list[str]:
    """Return one line per broken rule (see the module docstring), in a stable order."""
    out: list[str] = []
    cycle = find_cycle(modules)
    if cycle:
        out.append("cycle: " + " -> ".join(cycle))
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    for name, mod in sorted(modules.items()):
        if name.split(".")[0] == "checks":
            for dep in sorted(mod.imports | mod.type_only):
                if not dep.startswith("checks"):
                    out.append(f"checks imports sim: {name} imports {dep}")
            for ext in sorted(mod.external - stdlib):
                out.append(f"checks imports a third-party package: {name} imports {ext}")
        mine = layer_of(name)
        if mine is None:
            out.append(f"no layer: {name} is not in the LAYERS table of tools/import_graph.py")
        for dep in sorted(mod.imports):
            theirs = layer_of(dep)
            if mine is not None and theirs is not None and theirs > mine:
                out.append(
                    f"upward import: {name} (layer {mine} {LAYER_NAMES[mine]}) imports "
                    f"{dep} (layer {theirs} {LAYER_NAMES[theirs]})"
                )
            if (name == "sim.show" or name.startswith("sim.show.")) and (
                dep == "sim.sweep" or dep.startswith("sim.sweep.")
            ):
                out.append(f"show reaches into sweep: {name} imports {dep}")
        if mod.lines > MAX_LINES:
            out.append(f"too long: {name} has {mod.lines} lines (at most {MAX_LINES})")
    return out


def render(modules: dict[str, Module]) -> str:
    """Return the printed graph: one line per module, then levels, edges and lines."""
    rows = []
    def order(name: str) -> tuple[int, str]:
        layer = layer_of(name)
        return (99 if layer is None else layer, name)

    for name in sorted(modules, key=order):
        mod, layer = modules[name], layer_of(name)
        tag = f"{layer} {LAYER_NAMES[layer]}" if layer is not None else "? none"
        deps = ", ".join(sorted(mod.imports)) or "-"
        line = f"{tag:<9} {name:<28} {mod.lines:>4}  -> {deps}"
        if mod.type_only:
            line += f"   [TYPE_CHECKING: {', '.join(sorted(mod.type_only))}]"
        rows.append(line)
    n_edges = sum(len(m.imports) for m in modules.values())
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
    rows.append("packages (a top-level sim module counts as its own package):")
    pkg_edges = package_graph(modules)
    for pkg, pkg_deps in sorted(pkg_edges.items()):
        rows.append(f"  {pkg:<16} -> {', '.join(sorted(pkg_deps)) or '-'}")
    return "\n".join(rows)


def package_of(name: str) -> str:
    """Return the package ``name`` belongs to: ``checks``, ``sim.<pkg>`` or itself."""
    parts = name.split(".")
    if parts[0] == "checks":
        return "checks"
    return ".".join(parts[:2])


def package_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Return the module edges collapsed onto packages (edges inside a package dropped)."""
    out: dict[str, set[str]] = {package_of(n): set() for n in modules}
    for name, mod in modules.items():
        for dep in mod.imports:
            if package_of(dep) != package_of(name):
                out[package_of(name)].add(package_of(dep))
    return out


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
