"""COLUMNS that is not a width (issue 32): ignored as terminals and libraries ignore it.

``abc``, ``0``, ``-5`` and ``²`` are as if COLUMNS were unset (the terminal's width, else
``DEFAULT_WIDTH``); a huge one is clamped to ``MAX_COLUMNS``. Before, each refused to run
(exit 2), and ``²`` would have raised in rich's progress bars (``isdigit`` then ``int``).
"""

from __future__ import annotations

import pytest
from rich.console import Console

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.show import table
from platform_testbed.sim.show.columns import MAX_COLUMNS, columns_env, settle_columns
from platform_testbed.sim.show.table import DEFAULT_WIDTH

BAD = ("abc", "0", "-5", "²", "1e3", " ", "８０")


@pytest.mark.parametrize("value", BAD)
def test_a_bad_columns_is_as_if_unset(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Off a terminal a bad COLUMNS gives the default width, as an unset one does."""
    monkeypatch.setenv("COLUMNS", value)
    assert columns_env() is None
    assert table.width() == DEFAULT_WIDTH


def test_a_huge_columns_is_clamped(monkeypatch: pytest.MonkeyPatch) -> None:
    """COLUMNS=100000 draws at MAX_COLUMNS, not at a width no terminal has."""
    monkeypatch.setenv("COLUMNS", "100000")
    assert table.width() == MAX_COLUMNS


@pytest.mark.parametrize(("value", "settled"), [
    ("²", None), ("abc", None), ("0", None), ("-5", None), ("100000", str(MAX_COLUMNS)), ("80", "80"),
])
def test_settle_columns_leaves_every_reader_a_width(value: str, settled: str | None) -> None:
    """The command line's environment: bad removed, huge clamped, so rich can read it."""
    environ = {"COLUMNS": value}
    settle_columns(environ)
    assert environ.get("COLUMNS") == settled
    Console(file=None, _environ=environ)  # rich's own reading: no ValueError


@pytest.mark.parametrize("value", ["abc", "0", "-5", "²", "100000"])
def test_the_command_runs_under_a_bad_columns(value: str, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``testbed list`` with a bad COLUMNS: exit 0, the listing drawn, nothing on stderr."""
    monkeypatch.setenv("COLUMNS", value)
    assert main(["list"]) == 0
    out, err = capsys.readouterr()
    assert "sept25-crash-loop" in out
    assert err == ""
    widest = max(len(line) for line in out.splitlines())
    assert widest <= (DEFAULT_WIDTH if value != "100000" else MAX_COLUMNS)
