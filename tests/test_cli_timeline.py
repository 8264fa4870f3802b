"""``testbed compare --timeline``: the figure file, stdout kept pure, bad input exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from matplotlib.lines import Line2D
from matplotlib.text import Text

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario
from platform_testbed.sim.show.explore import traced_runs
from platform_testbed.sim.show.plot import compare_timelines


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


def test_timeline_lanes_follow_the_json_of_the_same_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each check's look ticks and verdict in the figure are the looks and decision --json gives."""
    code = main(["compare", "sept25-crash-loop", "--json", "--timeline", str(tmp_path / "t.png")])
    runs = json.loads(capsys.readouterr().out)["runs"][0]
    assert code == 0
    loaded = scenario.load("sept25-crash-loop")
    [ax] = compare_timelines(loaded, traced_runs(loaded, seed=runs["seed"])).axes
    results = runs["results"]
    assert len(results) == 6
    for result in results:
        [ticks] = [a for a in ax.get_children() if a.get_gid() == f"looks:{result['check']}"]
        assert isinstance(ticks, Line2D)
        assert list(ticks.get_xdata()) == pytest.approx([look["at_s"] for look in result["looks"]])
        [dot] = [a for a in ax.get_children() if a.get_gid() == f"verdict:{result['check']}"]
        assert isinstance(dot, Line2D)
        assert dot.get_xdata()[0] == pytest.approx(result["decided_at_s"])
        [label] = [a for a in ax.get_children()
                   if a.get_gid() == f"verdict-label:{result['check']}"]
        assert isinstance(label, Text)
        assert label.get_text().startswith(f"{result['verdict'].upper()} at ")


def test_same_command_twice_writes_the_same_png(tmp_path: Path) -> None:
    """The timeline file is byte-identical across two runs of the same command."""
    one, two = tmp_path / "one.png", tmp_path / "two.png"
    for target in (one, two):
        assert main(["compare", "sept25-crash-loop", "--timeline", str(target)]) == 0
    assert one.read_bytes() == two.read_bytes()
