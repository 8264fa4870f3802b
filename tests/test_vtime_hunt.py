"""``testbed hunt --check-http CMD``: a real process hunted like a Python check (on virtual time)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("cc") is None,
                                reason="virtual time: Linux and a C compiler")


def test_a_process_is_hunted_and_its_world_reproduces(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`true` passes every release: the hunt writes a missed world that `compare --check-http true`
    reproduces (its [expect] holds, exit 0)."""
    out = tmp_path / "found"
    assert main(["hunt", "--check-http", "true", "--budget", "1", "--out", str(out), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["check"] == "http-true"
    assert doc["summary"]["missed"] >= 1
    found = Path(doc["found"][0]["file"])
    assert "# Reproduce: testbed compare " in found.read_text()
    assert "--check-http true" in found.read_text()
    assert main(["compare", str(found), "--check-http", "true"]) == 0
    assert "expectations held: http-true missed" in capsys.readouterr().out


@pytest.mark.parametrize(("extra", "message"), [
    (["--check", "count"], "hunt takes one check: the process, or one --check"),
    (["--check-http", "false"], "hunt takes exactly one process (got 2)"),
    (["--deploy-cmd", "true"], "--deploy-cmd: hunt takes a --check-http process"),
])
def test_hunt_takes_one_process_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    """A second check or process beside --check-http, or a deploy step: one line, exit 2."""
    assert main(["hunt", "--check-http", "true", *extra, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err
