"""From the checkout's root, ``import sim`` is refused: it would be a second copy of the model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=False, timeout=60)


@pytest.mark.parametrize("line", ["import sim", "import sim.publish.world", "from sim.kit import testing"])
def test_a_second_copy_of_the_model_is_refused_with_the_import_to_use(line):
    """The folder ``sim/`` imported as ``sim`` (the root is on sys.path): one clear ImportError."""
    done = _python(line)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: this folder is the package platform_testbed.sim")
    assert "import platform_testbed.sim instead" in last


def test_the_package_itself_still_imports_from_the_root():
    """platform_testbed.sim (through the checkout's links) is the one copy, and imports."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", "import platform_testbed.sim.publish.world as w; "
                           "print(w.__name__)"], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.stdout.strip() == "platform_testbed.sim.publish.world", done.stderr
