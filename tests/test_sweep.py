"""Sweeps: same rows whoever runs them, error rows, atomic files, one-line bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import platform_testbed.sim.sweep.units as sweep_units
from platform_testbed.sim.cli.parser import main as run_cli
from platform_testbed.sim.config.scenario import BadInput
from platform_testbed.sim.runtime.outputs import OutputFailed
from platform_testbed.sim.sweep import load_sweep, read_rows, run_sweep, write_rows
from platform_testbed.sim.sweep.heatmap import heatmap, miss_grid

DATA = Path(__file__).parent / "data" / "sweeps"
SMALL = DATA / "small.toml"


@pytest.fixture(scope="module")
def local_rows() -> list[dict[str, Any]]:
    """The small sweep's rows computed in this process, in small tasks."""
    result = run_sweep(load_sweep(SMALL), workers=1, per_task=3)
    assert result.complete
    return result.rows


def test_sweep_expands_axes_and_seeds() -> None:
    """Ranges are inclusive, random axes are drawn from their seed, seeds count from first."""
    sweep = load_sweep(SMALL)
    assert dict(sweep.axes)["release.crash_after_s"] == (1, 3, 5, 7, 9)
    assert dict(sweep.axes)["check.look_delay_s"] == (3, 10)
    assert len(dict(sweep.axes)["platform.event_log_cap"]) == 2
    assert sweep.seeds == (3, 4)
    assert (sweep.points, sweep.units) == (20, 40)


def test_rows_one_per_point_seed_and_check(local_rows: list[dict[str, Any]]) -> None:
    """Every world gives one row per check, in point-major order, all checks same world."""
    assert len(local_rows) == 80
    assert [(r["point"], r["seed"], r["check"]) for r in local_rows[:4]] == [
        (0, 3, "count"), (0, 3, "timestamp"), (0, 4, "count"), (0, 4, "timestamp")
    ]
    for count, stamp in zip(local_rows[::2], local_rows[1::2], strict=True):
        assert count["release_bad"] == stamp["release_bad"]
        assert count["requests"] == stamp["requests"]  # same world, same traffic


def test_same_file_whatever_the_number_of_workers(
    tmp_path: Path, local_rows: list[dict[str, Any]]
) -> None:
    """Two local worker processes write the byte-identical file one process writes."""
    sweep = load_sweep(SMALL)
    pooled = run_sweep(sweep, workers=2, per_task=4)
    assert pooled.complete
    write_rows(tmp_path / "one.csv", sweep, local_rows)
    write_rows(tmp_path / "two.csv", sweep, pooled.rows)
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "two.csv").read_bytes()


def test_dask_cluster_gives_identical_rows(local_rows: list[dict[str, Any]]) -> None:
    """A Dask LocalCluster runs the sweep to exactly the local rows."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address="127.0.0.1:0",
        worker_dashboard_address="127.0.0.1:0"
    ) as cluster:
        result = run_sweep(load_sweep(SMALL), dask=cluster.scheduler_address, per_task=5)
    assert result.complete
    assert result.rows == local_rows


def test_a_world_that_raises_becomes_error_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A simulation that raises gives error rows with its message; other worlds still run."""
    real = sweep_units.run_checks

    def flaky(scenario: Any, seed: int, checks: Any, *budget: Any) -> Any:
        if seed == 4 and scenario.release.crash_after_s == 5:
            raise RuntimeError("simulated platform bug")
        return real(scenario, seed, checks, *budget)

    monkeypatch.setattr(sweep_units, "run_checks", flaky)
    result = run_sweep(load_sweep(SMALL), workers=1, per_task=7)
    errors = [r for r in result.rows if r["outcome"] == "error"]
    assert len(errors) == 4 * 2  # 4 points (2 look delays x 2 caps), 2 checks each
    assert {r["error"] for r in errors} == {"RuntimeError: simulated platform bug"}
    assert all(r["verdict"] is None for r in errors)
    assert len(result.rows) == 80
    assert result.summary is not None
    assert result.summary.checks["count"].counts.error == 4


def test_ctrl_c_keeps_the_finished_rows(tmp_path: Path) -> None:
    """Ctrl-C mid-sweep: the finished tasks' rows are kept, in order, and marked partial."""
    seen = []

    def progress(units: int) -> None:
        seen.append(units)
        if sum(seen) >= 12:
            raise KeyboardInterrupt

    result = run_sweep(load_sweep(SMALL), workers=1, per_task=4, progress=progress)
    assert result.interrupted
    assert not result.complete
    assert 0 < result.units_done < 40
    assert [r["point"] for r in result.rows] == sorted(r["point"] for r in result.rows)
    assert result.summary is not None
    assert result.summary.complete is False


def test_cli_writes_rows_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`testbed sweep --out x.jsonl --json`: rows on disk, the summary alone on stdout."""
    out = tmp_path / "rows.jsonl"
    code = run_cli(["sweep", str(SMALL), "--workers", "1", "--out", str(out), "--json", "--no-progress"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["units_done"] == 40
    assert set(summary["checks"]) == {"count", "timestamp"}
    assert len(read_rows(out)) == 80


def test_write_is_atomic(tmp_path: Path, local_rows: list[dict[str, Any]]) -> None:
    """A write that fails midway leaves the old file whole and no temporary file behind."""
    sweep = load_sweep(SMALL)
    out = tmp_path / "rows.csv"
    write_rows(out, sweep, local_rows)
    before = out.read_bytes()

    class Unprintable:
        def __str__(self) -> str:
            raise OSError("disk full")

    broken = [*local_rows[:5], local_rows[5] | {"requests": Unprintable()}]
    with pytest.raises(OutputFailed, match="disk full"):  # one line naming the file (issue 32)
        write_rows(out, sweep, broken)
    assert out.read_bytes() == before
    assert os.listdir(tmp_path) == ["rows.csv"]
    assert read_rows(out)[0]["check"] == "count"


BAD = {
    "malformed": ("scenario = ", "malformed TOML"),
    "unknown field": ('scenario = "sept25-crash-loop"\nseed = 3\n', "seed: unknown field"),
    "missing scenario": ("seeds = 2\n", "scenario: required field is missing"),
    "unknown scenario": ('scenario = "nope"\n', "unknown scenario 'nope'"),
    "unknown key": ('scenario = "sept25-crash-loop"\n[axes]\n"release.crash_afte" = [1]\n',
                    "release.crash_afte: unknown field"),
    "value out of range": ('scenario = "sept25-crash-loop"\n[axes]\n'
                           '"platform.event_log_cap" = [3, 0]\n',
                           "platform.event_log_cap: input should be greater than or equal to 1"),
    "empty range": ('scenario = "sept25-crash-loop"\n[axes]\n'
                    '"check.look_delay_s" = { start = 5, stop = 1, step = 1 }\n', "empty range"),
    "bad step": ('scenario = "sept25-crash-loop"\n[axes]\n'
                 '"check.look_delay_s" = { start = 1, stop = 5, step = 0 }\n', "axes.check"),
    "deep key": ('scenario = "sept25-crash-loop"\n[axes]\n"a.b.c" = [1]\n', "'table.field'"),
    "empty list": ('scenario = "sept25-crash-loop"\n[axes]\n"check.look_delay_s" = []\n',
                   "at least one value"),
    "unknown check": ('scenario = "sept25-crash-loop"\nchecks = ["counted"]\n', "unknown check"),
    "no seeds": ('scenario = "sept25-crash-loop"\nseeds = 0\n', "seeds"),
    "heatmap axis": ('scenario = "sept25-crash-loop"\n[axes]\n"check.look_delay_s" = [1]\n'
                     '[heatmap]\nx = "check.look_delay_s"\ny = "release.machines"\n', "heatmap"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_sweep_file_is_one_line_bad_input(tmp_path: Path, case: str) -> None:
    """A bad sweep file raises BadInput with one line naming the problem."""
    text, fragment = BAD[case]
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BadInput) as raised:
        load_sweep(path)
    assert fragment in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_sweep_files_check_path_is_from_the_current_folder_and_its_error_names_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `checks` file path is read from the folder the command runs in, not the sweep
    file's; one it cannot load is exit 2 with one line naming the file's `checks` field."""
    folder = tmp_path / "sweeps"
    folder.mkdir()
    (folder / "my_check.py").write_text("class Mine:\n    name = 'mine'\n", encoding="utf-8")
    (folder / "s.toml").write_text(
        'scenario = "sept25-crash-loop"\nchecks = ["my_check.py:Mine"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert run_cli(["sweep", "sweeps/s.toml", "--out", "x.csv", "--no-progress"]) == 2
    assert capsys.readouterr().err == ("testbed: checks: my_check.py:Mine: cannot import "
                                       "my_check.py (no such file my_check.py)\n")


def test_cli_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI reports bad input on one stderr line with exit status 2, no traceback."""
    path = tmp_path / "bad.toml"
    path.write_text('scenario = "nope"\n', encoding="utf-8")
    assert run_cli(["sweep", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert run_cli(["sweep", str(SMALL), "--out", str(tmp_path / "x.txt")]) == 2


def test_heatmap_has_a_panel_per_check(local_rows: list[dict[str, Any]]) -> None:
    """The heatmap draws one panel per check plus a colour bar; cells are miss rates."""
    xs, ys, grid = miss_grid(local_rows, "release.crash_after_s", "check.look_delay_s", "count")
    assert (xs, ys) == ([1, 3, 5, 7, 9], [3, 10])
    assert grid.shape == (2, 5)
    figure = heatmap(local_rows, "release.crash_after_s", "check.look_delay_s")
    assert len(figure.axes) == 3


def test_out_path_through_a_missing_folder_and_back_is_written(tmp_path, monkeypatch):
    """`--out missing/../x.csv` is judged by the folder it lands in, before and after the run."""
    monkeypatch.chdir(tmp_path)
    assert run_cli(["sweep", str(SMALL), "--workers", "1", "--out", "missing/../x.csv",
                    "--no-progress"]) == 0
    assert (tmp_path / "x.csv").read_text().startswith("point,")
