"""A check given as a ``.py`` path imports as ``python path/file.py`` would: the files beside
it, and the project's own packages from the folder the command runs in (as the dotted form
``--check checks.mine:Class`` does). Neither stays on ``sys.path`` after the import."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main

#: A check that takes its reason from an import: a file beside it, or a project package.
CHECK = '''
from dataclasses import dataclass
from platform_testbed.checks import Verdict
from {source} import REASON

@dataclass(frozen=True)
class Split:
    name = "split"

    def next(self, publish_started_ms, looks):
        return Verdict(True, REASON)
'''


def _reason(capsys: pytest.CaptureFixture[str], check: str) -> str:
    assert main(["compare", "healthy-release", "--check", check, "--json"]) == 0
    [run] = json.loads(capsys.readouterr().out)["runs"]
    [result] = run["results"]
    return str(result["reason"])


def test_a_check_file_imports_the_file_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sib"
    folder.mkdir()
    (folder / "sibling_reason.py").write_text('REASON = "from the file beside it"\n')
    (folder / "split.py").write_text(CHECK.format(source="sibling_reason"))
    monkeypatch.chdir(tmp_path)
    before = list(sys.path)
    assert _reason(capsys, "sib/split.py:Split") == "from the file beside it"
    assert sys.path == before


def test_a_check_file_imports_a_package_of_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``checks/split.py`` doing ``from projhelpers.reasons import REASON``, run from the
    project's root, as ``--check checks.split:Split`` would find it."""
    (tmp_path / "projhelpers").mkdir()
    (tmp_path / "projhelpers" / "__init__.py").write_text("")
    (tmp_path / "projhelpers" / "reasons.py").write_text('REASON = "from the project"\n')
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "split.py").write_text(CHECK.format(source="projhelpers.reasons"))
    monkeypatch.chdir(tmp_path)
    before = list(sys.path)
    assert _reason(capsys, "checks/split.py:Split") == "from the project"
    assert sys.path == before

