"""The version is stated in one place (pyproject.toml) and said the same wherever it shows."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from platform_testbed.sim.cli.about import version
from platform_testbed.sim.cli.parser import main

ROOT = Path(__file__).resolve().parent.parent
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_testbed_version_prints_the_projects_version(capsys: pytest.CaptureFixture[str]) -> None:
    """``testbed --version`` reads the installed metadata: pyproject's number (reinstall after
    a bump, as ``make`` does)."""
    assert version() == VERSION
    with pytest.raises(SystemExit) as ended:
        main(["--version"])
    assert ended.value.code == 0
    assert capsys.readouterr().out == f"testbed {VERSION}\n"


def test_the_readme_installs_the_wheel_of_this_version() -> None:
    """Every wheel file name in the README carries the current number (its quickstart runs it)."""
    names = re.findall(r"platform_simulator_testbed-([0-9][^-]*)-py3-none-any\.whl",
                       (ROOT / "README.md").read_text())
    assert names
    assert set(names) == {VERSION}


def test_the_changelog_has_a_heading_for_this_version() -> None:
    """CHANGELOG.md names the current version with its date, below Unreleased."""
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings[0] == "Unreleased"
    assert re.fullmatch(rf"{re.escape(VERSION)} — \d{{4}}-\d{{2}}-\d{{2}}", headings[1])
