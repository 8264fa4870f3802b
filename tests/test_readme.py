"""Every figure in the README marked as a command's output is what that command prints now."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"<!-- output: testbed (.+?) -->\n(.*?)<!-- end output -->\n", re.S)


@pytest.fixture(autouse=True)
def _in_a_fresh_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command runs where a reader's would, not in the checkout: a sweep's default rows
    land in this test's folder, never in the repository (where parallel tests would share them)."""
    monkeypatch.chdir(tmp_path)


def _blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def test_the_readme_marks_its_command_outputs():
    """The README's result blocks are marked, so this test has something to check."""
    assert len(_blocks()) >= 3


@pytest.mark.parametrize(("command", "shown"), _blocks(), ids=[c for c, _ in _blocks()])
def test_readme_output_matches_its_command(command: str, shown: str, capsys):
    """The block under `<!-- output: testbed … -->` is the command's stdout today."""
    main(shlex.split(command))
    printed = capsys.readouterr().out
    fenced = shown.startswith("```")
    body = shown.removeprefix("```\n").removesuffix("```\n") if fenced else shown
    assert body.strip() == printed.strip()


CAP_ROW = re.compile(r"^\| (\d+) +\| (\d+) (\w+) \| (\d+) (\w+) \|$", re.M)


def test_readme_cap_table_matches_the_simulator(capsys):
    """The cap table's outcome counts are what --set platform.event_log_cap=N gives over 100 seeds."""
    rows = CAP_ROW.findall(README.read_text(encoding="utf-8"))
    assert len(rows) >= 4
    for cap, count_n, count_outcome, ts_n, ts_outcome in rows:
        main(["compare", "sept25-crash-loop", "--runs", "100", "--seed", "0", "--check", "count",
              "--check", "timestamp", "--set", f"platform.event_log_cap={cap}", "--json"])
        summary = json.loads(capsys.readouterr().out)["summary"]
        assert {k: n for k, n in summary["count"].items() if n} == {count_outcome: int(count_n)}, cap
        assert {k: n for k, n in summary["timestamp"].items() if n} == {ts_outcome: int(ts_n)}, cap
