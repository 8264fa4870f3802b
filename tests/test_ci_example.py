"""examples/ci/: the workflow's run-steps, run in order in a copy of the example project."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "ci"
WORKFLOW = EXAMPLE / ".github" / "workflows" / "testbed.yml"
STEP = re.compile(r"^ {6}- ")


def run_steps(text: str) -> list[dict[str, str]]:
    """Each step's ``name``, ``id`` and ``run`` (a one-line or ``|`` block), in file order.

    A small reader for the shape this workflow has (a list of steps under one job), not a YAML
    parser: a step it cannot read fails the test below, rather than being skipped.
    """
    steps: list[dict[str, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if STEP.match(line):
            steps.append({})
            line = " " * 8 + line[8:]
        if steps and (m := re.match(r"^ {8}(name|id|run|uses): ?(.*)$", line)):
            key, value = m.groups()
            if value == "|":
                block = []
                while i + 1 < len(lines) and (lines[i + 1].startswith(" " * 10) or not lines[i + 1].strip()):
                    i += 1
                    block.append(lines[i][10:])
                value = "\n".join(block).strip()
            steps[-1][key] = value
        i += 1
    return steps


def test_the_workflow_installs_this_package_then_runs_the_gate():
    """The steps are: check out the project and the testbed, set up Python, install the
    testbed's checkout (it is not on PyPI: installing its name would fetch nothing, or
    someone else's package), run gate.sh, publish."""
    text = WORKFLOW.read_text(encoding="utf-8")
    steps = run_steps(text)
    name = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    assert [s.get("uses") for s in steps[:2]] == ["actions/checkout@v4"] * 2
    assert "          path: testbed\n" in text
    install = [s for s in steps if s.get("id") == "install"]
    assert len(install) == 1
    assert install[0]["run"] == "python -m pip install ./testbed"
    assert f"install {name}" not in text
    assert [s["run"] for s in steps if "run" in s and s.get("id") != "install"] == ["bash gate.sh"]
    assert any(s.get("uses", "").startswith("mikepenz/action-junit-report") for s in steps)


@pytest.mark.parametrize("broken", [False, True])
def test_the_workflows_commands_write_junit_and_fail_only_on_a_broken_regression(tmp_path, broken):
    """In order, with the installed testbed: every report is well-formed; exit 1 iff a regression fails."""
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    if broken:  # a regression whose [expect] cannot hold: the gate must go red
        (project / "regressions" / "healthy.toml").write_text(
            (project / "regressions" / "healthy.toml").read_text().replace('"passed"', '"caught"'))
    env = os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                        "BUDGET": "30"}
    codes = []
    for step in run_steps(WORKFLOW.read_text(encoding="utf-8")):
        if "run" not in step or step.get("id") == "install":  # installed already: this venv's
            continue
        done = subprocess.run(["bash", "-c", step["run"]], cwd=project, env=env,
                              capture_output=True, text=True, check=False, timeout=300)
        assert "Traceback" not in done.stderr, done.stderr
        codes.append(done.returncode)
    assert codes == [1 if broken else 0]
    reports = sorted(p.name for p in (project / "reports").iterdir())
    assert reports == ["healthy.xml", "hunt.xml", "sept25-crash-loop.xml"]
    failures = {}
    for report in reports:
        root = ET.parse(project / "reports" / report).getroot()
        assert root.tag == "testsuites"
        failures[report] = int(root.get("failures")) + int(root.get("errors"))
    assert failures["healthy.xml"] == int(broken)
    assert failures["sept25-crash-loop.xml"] == 0
    # The hunt's worlds are reported (and kept), not a reason to fail the build: skipped
    # cases, so a JUnit publisher shows the build green when the gate passes.
    assert failures["hunt.xml"] == 0
    hunt = ET.parse(project / "reports" / "hunt.xml").getroot()
    found = len(list((project / "hunt-out").glob("*.toml")))
    assert sum(int(suite.get("skipped")) for suite in hunt) == found > 0
