"""``testbed compare --timeline``: the figure file, stdout kept pure, bad input exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.cli import main


def test_timeline_is_written_and_stdout_stays_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --json --timeline the PNG is written, stdout is one JSON object, stderr says where."""
    target = tmp_path / "t.png"
    code = main(["compare", "sept25-crash-loop", "--json", "--timeline", str(target)])
    out, err = capsys.readouterr()
    assert code == 0
    assert json.loads(out)["scenario"] == "sept25-crash-loop"
    assert err.strip() == f"timeline written to {target}"
    assert target.read_bytes().startswith(b"\x89PNG")


def test_unknown_timeline_format_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file suffix matplotlib cannot write is exit 2 with one line naming --timeline."""
    code = main(["compare", "healthy-release", "--timeline", str(tmp_path / "t.bogus")])
    _, err = capsys.readouterr()
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "--timeline" in err
    assert "unknown image format" in err


def test_unwritable_timeline_path_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory that does not exist is exit 2 with one line, no traceback."""
    code = main(["compare", "healthy-release", "--timeline", str(tmp_path / "no" / "t.png")])
    _, err = capsys.readouterr()
    assert code == 2
    assert "cannot write" in err
    assert "Traceback" not in err
