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
    """No cycle, checks stdlib-only, no upward import, show never imports sweep, <= 400 lines."""
    assert graph.violations(graph.scan(ROOT)) == []


def test_every_module_has_a_layer() -> None:
    """A new module must be placed in the layer table, or the check names it."""
    modules = graph.scan(ROOT)
    assert [m for m in modules if graph.layer_of(m) is None] == []


def test_a_planted_cycle_is_caught(copy: Path) -> None:
    """sim.settings importing sim.scenario (which imports sim.settings) is a cycle."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/settings.py", "from sim import scenario  # planted")
    found = _new(copy, before)
    assert len(found) == 1
    assert found[0].startswith("cycle: ")
    assert "sim.scenario" in found[0]
    assert "sim.settings" in found[0]
    assert graph.main(["--check", "--root", str(copy)]) == 1


def test_a_planted_upward_import_is_caught(copy: Path) -> None:
    """Configuration importing the model (sim.settings -> sim.publish.gcpause) is upward."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/settings.py", "import sim.publish.gcpause  # planted")
    found = _new(copy, before)
    assert found == [
        "upward import: sim.settings (layer 1 config) imports sim.publish.gcpause (layer 3 model)"
    ]


def test_a_lazy_import_inside_a_function_is_an_edge(copy: Path) -> None:
    """An import inside a function still couples the modules, so it is checked too."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/settings.py", "def f() -> None:\n    import sim.publish.gcpause  # planted")
    assert any("upward import: sim.settings" in v for v in _new(copy, before))


def test_an_import_under_type_checking_is_not_an_edge(copy: Path) -> None:
    """A hint-only import never runs, so it is listed apart and breaks no rule."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/settings.py",
           "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import sim.publish.gcpause")
    modules = graph.scan(copy)
    assert _new(copy, before) == []
    assert "sim.publish.gcpause" in modules["sim.settings"].type_only
    assert "sim.publish.gcpause" not in modules["sim.settings"].imports


def test_checks_importing_sim_or_a_third_party_package_is_caught(copy: Path) -> None:
    """checks stays vendorable: stdlib and itself only."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "checks/model.py", "import numpy  # planted\nimport sim.settings  # planted")
    found = _new(copy, before)
    assert "checks imports sim: checks.model imports sim.settings" in found
    assert "checks imports a third-party package: checks.model imports numpy" in found


def test_show_reaching_into_sweep_is_caught(copy: Path) -> None:
    """DESIGN.md: nothing in show/ reaches up into sweep/."""
    before = graph.violations(graph.scan(copy))
    _plant(copy, "sim/show/report.py", "from sim.sweep.output import summarise  # planted")
    found = _new(copy, before)
    assert "show reaches into sweep: sim.show.report imports sim.sweep.output" in found


def test_a_module_over_the_line_limit_is_caught(copy: Path) -> None:
    """A module longer than MAX_LINES lines is named with its length."""
    before = graph.violations(graph.scan(copy))
    path = copy / "sim" / "traffic.py"
    lines = len(path.read_text().splitlines())
    _plant(copy, "sim/traffic.py", "#\n" * (graph.MAX_LINES - lines))
    found = _new(copy, before)
    assert found == [f"too long: sim.traffic has {graph.MAX_LINES + 2} lines (at most 400)"]


def test_the_printed_graph_names_levels_and_edges() -> None:
    """``make graph`` prints one row per module, the levels and the edge count."""
    text = graph.render(graph.scan(ROOT))
    modules = graph.scan(ROOT)
    assert f"modules: {len(modules)}  edges: {sum(len(m.imports) for m in modules.values())}" in text
    assert "levels: " in text
    assert "cycle" not in text.split("levels: ")[1].splitlines()[0]


def test_a_new_module_without_a_layer_is_caught(copy: Path) -> None:
    """A new top-level sim module must be placed in the layer table, not fall into ``sim``'s."""
    before = graph.violations(graph.scan(copy))
    (copy / "sim" / "newcomer.py").write_text('"""A module nobody placed."""\n')
    found = _new(copy, before)
    assert "no layer: sim.newcomer is not in the LAYERS table of tools/import_graph.py" in found
