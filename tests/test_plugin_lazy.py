"""The kit's strategies need no pytest, and the pytest plugin costs nothing until it is used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: A valid world: every app's times are whole, non-negative milliseconds and the horizon is
#: positive (junk from hypothesis' generic dataclass strategy breaks each of these).
VALID = """
from platform_testbed.sim.kit.testing import PUBLISH_MS, App
assert w.horizon_ms > PUBLISH_MS and w.machines, w
for app in (m.app for m in w.machines):
    assert isinstance(app, App) and app.boot_ms >= 0 and app.restart_delay_ms >= 0, app
    assert app.cap is None or app.cap >= 1, app
    assert app.crash_after_ms is None or app.crash_after_ms >= 0, app
print("valid")
"""


def _entry_point() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    [target] = project["project"]["entry-points"]["hypothesis"].values()
    return str(target)


def _python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter where hypothesis finds pyproject's entry point.

    This checkout's install may predate the entry point, so a distribution's metadata that
    declares it (as ``pip install`` writes it from pyproject) is put first on the path.
    """
    dist = tmp_path / "site" / "testbed_hook_probe-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: testbed-hook-probe\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(f"[hypothesis]\n_ = {_entry_point()}\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=False, timeout=120, cwd=tmp_path)


def test_from_type_world_is_a_valid_world_without_pytest(tmp_path):
    """The brief's line, in a plain interpreter: st.from_type(World) draws the kit's worlds."""
    done = _python("from hypothesis import strategies as st\n"
                   "from platform_testbed.sim.kit import World\n"
                   "w = st.from_type(World).example()\n" + VALID, tmp_path)
    assert done.stdout.strip() == "valid", done.stderr


def test_from_type_works_when_the_kit_came_first(tmp_path):
    """The kit imported before hypothesis: the entry point registers at hypothesis' import."""
    done = _python("from platform_testbed.sim.kit.testing import World\n"
                   "from hypothesis import strategies as st\n"
                   "w = st.from_type(World).example()\n" + VALID, tmp_path)
    assert done.stdout.strip() == "valid", done.stderr


def test_the_hook_imports_nothing_of_the_model(tmp_path):
    """Importing hypothesis (which runs the hook) loads none of the model until the kit is used."""
    done = _python("import sys\nimport hypothesis\n"
                   "from platform_testbed.sim.kit import hypothesis_hook as h\n"
                   "assert any(isinstance(f, h._AfterTesting) for f in sys.meta_path)\n"
                   "print(sorted(n for n in ('simpy', 'pydantic', 'numpy', "
                   "'platform_testbed.sim.kit.testing') if n in sys.modules))", tmp_path)
    assert done.stdout.strip() == "[]", done.stderr


CONFTEST = """
import json, sys

def pytest_unconfigure(config):
    names = ("simpy", "pydantic", "numpy", "platform_testbed.sim.kit.testing",
             "platform_testbed.checks")
    with open("loaded.json", "w") as out:
        json.dump(sorted(n for n in names if n in sys.modules), out)
"""


def test_the_pytest_plugin_imports_nothing_of_the_model_for_a_suite_that_does_not_use_it(tmp_path):
    """A suite of trivial tests with the plugin on (installed: pytest11): the model never loads."""
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_trivial.py").write_text("def test_one():\n    assert 1\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "test_trivial.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "loaded.json").read_text()) == []
