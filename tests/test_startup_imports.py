"""Start-up: --help imports neither the checks nor the check processes' code; compare imports
what it uses (NumPy only where traffic is drawn, the JUnit writer only for --junit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = """
import runpy, sys
sys.argv = ["testbed", *ARGV]
try:
    runpy.run_module("platform_testbed", run_name="__main__")
except SystemExit:
    pass
names = sorted(sys.modules)  # before this script's own json import
import json
json.dump(names, open(sys.argv[0] + ".json", "w"))
"""


def _modules(tmp_path: Path, argv: list[str]) -> set[str]:
    out = repr(str(tmp_path / "m.json"))
    script = SCRIPT.replace("ARGV", repr(argv)).replace('sys.argv[0] + ".json"', out)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True,
                   check=False, timeout=120)
    return set(json.loads((tmp_path / "m.json").read_text()))


def test_help_imports_no_checks_and_no_check_processes(tmp_path):
    """``testbed --help`` and ``compare --help``: the parser alone (no checks/, no sim.checkcmd)."""
    for argv in (["--help"], ["compare", "--help"]):
        loaded = _modules(tmp_path, argv)
        assert "platform_testbed.sim.cli.parser" in loaded
        assert not {m for m in loaded if m.startswith(("platform_testbed.checks",
                                                      "platform_testbed.sim.checkcmd"))}
        assert not {"tomllib", "dataclasses", "difflib", "json"} & loaded, argv


@pytest.mark.parametrize(("rps", "numpy"), [("0", False), ("5", True)])
def test_compare_imports_numpy_only_where_traffic_is_drawn(tmp_path, rps, numpy):
    """A world without traffic (rps 0) never loads NumPy; one with traffic does (it draws it)."""
    loaded = _modules(tmp_path, ["compare", "healthy-release", "--check", "count",
                                 "--set", f"traffic.rps={rps}"])
    assert "platform_testbed.sim.publish.compare" in loaded  # it ran
    assert ("numpy" in loaded) is numpy


def test_compare_without_junit_or_check_cmd_loads_neither(tmp_path):
    """No --junit: no XML writer; no --check-cmd: no child-process code."""
    loaded = _modules(tmp_path, ["compare", "healthy-release", "--check", "count"])
    assert "platform_testbed.sim.publish.compare" in loaded  # it ran
    assert "platform_testbed.sim.show.junit" not in loaded
    assert "xml.etree.ElementTree" not in loaded
    assert "platform_testbed.sim.checkcmd" not in loaded
