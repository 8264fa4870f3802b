"""The installed testbed inside a user's project that has its own checks/ and sim/ (issue 17).

Runs ``tools/user_project.py`` on this environment (the editable install): the console
script, the Python API and pytest with the test kit, each from inside the project.
``tools/wheel_smoke.sh`` runs the same tool on the wheel.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.mark.skipif(not (BIN / "testbed").exists(), reason="the testbed console script is not installed here")
def test_cli_api_and_pytest_work_from_a_project_with_its_own_checks_and_sim() -> None:
    """compare --check checks.mine:MyCheck, api.compare and a kit test all use the project's modules."""
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "user_project.py"), str(BIN)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "user-project: ok" in done.stderr
