"""The layout rules of ``tools/import_graph.py`` hold, and the checker catches each break."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


graph = _tool()


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the project's sources (``checks`` and ``sim``, Python files only)."""
    for pkg in graph.PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _plant(root: Path, module: str, text: str) -> None:
    path = root / module
    path.write_text(path.read_text() + "\n" + text + "\n")


def _new(root: Path, before: list[str]) -> list[str]:
    """The violations of the copy that were not there before planting.

    The planted tests judge the checker, so they hold whatever today's tree breaks.
    """
    return [v for v in graph.violations(graph.scan(root)) if v not in before]


def test_the_project_breaks_no_layout_rule() -> None:
    """No module or package cycle, checks pure and relative, each package within its RULES."""
    assert graph.violations(graph.scan(ROOT)) == []


def test_every_package_has_a_rule() -> None:
    """Each package of the tree is placed in RULES, so none imports by default."""
    assert set(graph.package_graph(graph.scan(ROOT))) <= set(graph.RULES)


def test_a_planted_cycle_is_caught(copy: Path) -> None:
    """sim.config.settings importing sim.config.scenario (which imports it) is a cycle."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/config/settings.py", "from platform_testbed.sim.config import scenario  # planted")
    found = _new(copy, before)
    assert len(found) == 1
    assert found[0].startswith("cycle: ")
    assert "sim.config.scenario" in found[0]
    assert "sim.config.settings" in found[0]
    assert graph.main(["--check", "--root", str(copy)]) == 1


def test_a_type_only_cycle_is_caught(copy: Path) -> None:
    """A cycle through ``if TYPE_CHECKING:`` still ties the two modules: it is a cycle."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/config/settings.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
           "    from platform_testbed.sim.config.scenario import Scenario  # planted")
    found = _new(copy, before)
    assert [v.split(":")[0] for v in found] == ["cycle"]


def test_a_planted_package_cycle_is_caught(copy: Path) -> None:
    """Two packages importing each other is a package cycle, even with no module cycle."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/platform/serving.py", "from platform_testbed.sim.publish import gcpause  # planted")
    found = _new(copy, before)
    assert any(v.startswith("package cycle: ") and "sim.platform" in v and "sim.publish" in v
               for v in found)
    assert "not allowed: sim.platform.serving imports sim.publish.gcpause (sim.platform may not import " \
        "sim.publish)" in found


def test_an_import_the_rules_forbid_is_caught(copy: Path) -> None:
    """Configuration importing the publish (sim.config -> sim.publish) is not allowed."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/config/settings.py", "import platform_testbed.sim.publish.gcpause  # planted")
    found = _new(copy, before)
    assert "not allowed: sim.config.settings imports sim.publish.gcpause (sim.config may not import " \
        "sim.publish)" in found


def test_a_lazy_import_inside_a_function_is_an_edge(copy: Path) -> None:
    """An import inside a function still couples the modules, so it is checked too."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/config/settings.py",
           "def f() -> None:\n    import platform_testbed.sim.publish.gcpause  # planted")
    assert any("not allowed: sim.config.settings" in v for v in _new(copy, before))


def test_an_import_under_type_checking_obeys_the_rules(copy: Path) -> None:
    """A hint-only import is listed apart but may not break a package rule either."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/config/settings.py",
           "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
           "    import platform_testbed.sim.publish.gcpause")
    modules = graph.scan(copy)
    assert "sim.publish.gcpause" in modules["sim.config.settings"].type_only
    assert "sim.publish.gcpause" not in modules["sim.config.settings"].imports
    assert "not allowed: sim.config.settings imports sim.publish.gcpause (type-only) (sim.config may " \
        "not import sim.publish)" in _new(copy, before)


def test_checks_importing_sim_or_a_third_party_package_is_caught(copy: Path) -> None:
    """checks stays vendorable: stdlib and itself only, itself by relative imports."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "checks/model.py", "import numpy  # planted\n"
           "import platform_testbed.sim.config.settings  # planted\n"
           "from platform_testbed.checks import protocol  # planted")
    found = _new(copy, before)
    assert "checks imports sim: checks.model imports sim.config.settings" in found
    assert "checks imports a third-party package: checks.model imports numpy" in found
    assert "checks imports itself by an absolute name: checks.model (use relative imports)" in found


def test_show_reaching_into_sweep_is_caught(copy: Path) -> None:
    """DESIGN.md: nothing in show/ reaches up into sweep/."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/show/report.py", "from platform_testbed.sim.sweep.output import summarise  # planted")
    found = _new(copy, before)
    assert "not allowed: sim.show.report imports sim.sweep.output (sim.show may not import " \
        "sim.sweep)" in found


def test_the_printed_graph_names_packages_rules_and_edges() -> None:
    """``make graph`` prints each package with what it may import and does import."""
    modules = graph.scan(ROOT)
    text = graph.render(modules)
    assert f"edges: {sum(len(m.imports | m.type_only) for m in modules.values())}" in text
    for pkg in graph.package_graph(modules):
        assert f"  {pkg} " in text
    assert "may import: checks, sim.config" in text
    assert "levels: " in text
    assert "cycle" not in text.split("levels: ")[1].splitlines()[0]


def test_a_new_top_level_module_is_caught(copy: Path) -> None:
    """The top of sim holds only the front doors: a new module there is named."""
    before = graph.violations(graph.scan(copy))
    (copy / "sim" / "newcomer.py").write_text('"""A module nobody placed."""\n')
    found = _new(copy, before)
    assert "not a front door: sim.newcomer sits at the top of sim (place it in a package)" in found


def test_a_new_package_without_a_rule_is_caught(copy: Path) -> None:
    """A new package must be given its rule in RULES, or the check names it."""
    before = graph.violations(graph.scan(copy))
    (copy / "sim" / "newpkg").mkdir()
    (copy / "sim" / "newpkg" / "__init__.py").write_text('"""A package nobody placed."""\n')
    found = _new(copy, before)
    assert "no rule: package sim.newpkg is not in the RULES table of tools/import_graph.py" in found
