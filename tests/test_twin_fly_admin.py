"""npm's fly-admin (1.6.1, installed by the Makefile into tests/js) against the twin: a rolling
deploy written with it (examples/deploy/fly-admin-deploy.cjs: updateMachine, waitMachine,
listEvents, getMachine) judges the incident caught (restored) and a healthy release passed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = ROOT / "tests" / "js" / "node_modules"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node (make installs fly-admin with npm)")
@pytest.mark.parametrize(("scenario", "outcome", "rollback"), [
    ("sept25-crash-loop", "caught", "restored"), ("healthy-release", "passed", None)])
def test_a_rolling_deploy_written_with_fly_admin_is_judged(
    scenario: str, outcome: str, rollback: str | None
) -> None:
    """fly-admin's deploy as ``--deploy-cmd`` (speed 40, LOOK_DELAY_S=0.25: its 10 s)."""
    assert (MODULES / "fly-admin" / "package.json").exists(), "run make: npm ci --prefix tests/js"
    done = subprocess.run(
        [sys.executable, "-m", "platform_testbed.sim", "compare", scenario, "--deploy-cmd",
         f"node {ROOT / 'examples' / 'deploy' / 'fly-admin-deploy.cjs'}", "--speed", "40", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NODE_PATH": str(MODULES), "LOOK_DELAY_S": "0.25"})
    assert done.returncode == 0, done.stderr
    [row] = [r for run in json.loads(done.stdout)["runs"] for r in run["results"]]
    assert (row["outcome"], row["rollback"]) == (outcome, rollback), row["reason"]
