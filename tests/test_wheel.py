"""What the wheel carries: every package and every built-in settings file (issue 13).

`make wheel-smoke` (run by `make test`) builds the wheel and runs every command from a
fresh venv; these tests catch the usual cause of a broken wheel early and cheaply.
"""

import tomllib
from fnmatch import fnmatch
from pathlib import Path

from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish.series import load_series
from platform_testbed.sim.rollout import config as rollout_config
from platform_testbed.sim.sweep.file import load_sweep

ROOT = Path(__file__).resolve().parent.parent
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_python_package_in_the_checkout_is_listed_for_the_wheel():
    """A package missing from the list is missing from the wheel (sim.hunt once was)."""
    on_disk = {
        ".".join(["platform_testbed", *p.parent.relative_to(ROOT).parts])
        for top in ("checks", "sim") for p in (ROOT / top).rglob("__init__.py")
    }
    assert on_disk <= set(SETUPTOOLS["packages"])


def test_every_built_in_settings_file_is_package_data():
    """Each .toml under scenarios/ matches a package-data glob of the package mapped onto it."""
    assert (ROOT / "platform_testbed" / "scenarios").resolve() == (ROOT / "scenarios").resolve()
    data = SETUPTOOLS["package-data"]
    for path in sorted((ROOT / "scenarios").rglob("*.toml")):
        rel = path.relative_to(ROOT / "scenarios")
        package = ".".join(["platform_testbed.scenarios", *rel.parent.parts])
        assert any(fnmatch(rel.name, g) for g in data.get(package, [])), rel


def test_the_built_ins_are_found_by_name():
    """Scenarios, rollouts, sweeps and series resolve by name, as in the README."""
    assert "sept25-crash-loop" in scenario.shipped()
    assert "fixed" in rollout_config.shipped()
    assert load_sweep("sept25_unknowns").name == "sept25_unknowns"
    spec, loaded = load_series("sept25-three-publishes")
    assert len(loaded) == len(spec.publishes) == 3


def test_testbed_scenarios_overrides_where_every_built_in_is_found(tmp_path, monkeypatch):
    """TESTBED_SCENARIOS points every lookup (scenarios, rollouts, sweeps, series) elsewhere."""
    for sub in ("", "rollouts", "sweeps", "series"):
        (tmp_path / sub).mkdir(exist_ok=True)
        (tmp_path / sub / f"mine{sub}.toml").write_text("")
    monkeypatch.setenv("TESTBED_SCENARIOS", str(tmp_path))
    assert list(scenario.shipped()) == ["mine"]
    assert list(rollout_config.shipped()) == ["minerollouts"]
    assert list(scenario.shipped_sweeps()) == ["minesweeps"]
    assert list(scenario.shipped_series()) == ["mineseries"]
