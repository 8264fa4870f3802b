"""Sweep rows stream to their file in unit order: the same bytes, whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from platform_testbed.sim.sweep import file as sweep_file
from platform_testbed.sim.sweep.output import Tally, streaming_rows, summarise, write_rows
from platform_testbed.sim.sweep.run import TASK_TARGET_S, _InOrder, _Tasks, run_sweep
from platform_testbed.sim.sweep.units import Row


def _sweep(tmp_path: Path) -> sweep_file.Sweep:
    path = tmp_path / "small.toml"
    path.write_text(
        'scenario = "sept25-crash-loop"\nchecks = ["count", "timestamp"]\nseeds = 2\n'
        '[axes]\n"release.crash_after_s" = [1.0, 2.5, 20.0]\n'
        '"check.look_delay_s" = [2.0, 10.0]\n',
        encoding="utf-8",
    )
    return sweep_file.load_sweep(path)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_streamed_file_is_the_file_written_whole(tmp_path: Path, suffix: str) -> None:
    """Rows streamed task by task give the bytes write_rows gives for every row at once."""
    sweep = _sweep(tmp_path)
    kept = run_sweep(sweep, workers=1, per_task=1)
    whole, streamed = tmp_path / f"whole{suffix}", tmp_path / f"streamed{suffix}"
    write_rows(whole, sweep, kept.rows)
    with streaming_rows(streamed, sweep) as sink:
        result = run_sweep(sweep, workers=1, per_task=1, sink=sink)
    assert result.rows == []
    assert result.row_count == len(kept.rows) == 2 * sweep.units
    assert streamed.read_bytes() == whole.read_bytes()
    assert result.summary == kept.summary == summarise(kept)


def test_tasks_finished_out_of_order_are_handed_on_in_order() -> None:
    """A task that finishes early waits only for those before it; then all go, in order."""
    got: list[list[Row]] = []
    order = _InOrder(got.append, Tally(["c"]))
    order.ends = {0: 2, 2: 3, 3: 5}
    order[3] = [{"check": "c", "outcome": "passed", "decided_at_s": 1.0, "u": 3}]
    order[2] = [{"check": "c", "outcome": "missed", "decided_at_s": None, "u": 2}]
    assert got == []
    assert len(order.done) == 2
    order[0] = [{"check": "c", "outcome": "caught", "decided_at_s": 2.0, "u": 0}]
    assert [rows[0]["u"] for rows in got] == [0, 2, 3]
    assert order.done == {}
    assert order.streamed == 3
    assert order.tally.counts["c"].total == 3


def test_a_failed_stream_leaves_no_file(tmp_path: Path) -> None:
    """A failure while rows stream keeps the old file (here: none) and no temporary file."""
    sweep = _sweep(tmp_path)
    out = tmp_path / "rows.csv"
    row = {"point": 0, "seed": 1, "check": "count"}

    def broken() -> None:
        with streaming_rows(out, sweep) as sink:
            sink([row])
            raise RuntimeError("a world broke the sweep")

    with pytest.raises(RuntimeError):
        broken()
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("unnamed", [True, False], ids=["O_TMPFILE", "named-temporary"])
def test_stream_bytes_and_permissions_with_and_without_an_unnamed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    """Either way the rows stream to (an unnamed file, or a named temporary one where the
    system has no O_TMPFILE): the bytes write_rows gives, the umask's permissions, and
    nothing beside the file while rows stream but the previous file."""
    if not unnamed:
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    elif not hasattr(os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE here")
    sweep = _sweep(tmp_path)
    rows = run_sweep(sweep, workers=1).rows
    whole, streamed = tmp_path / "whole.csv", tmp_path / "out" / "rows.csv"
    write_rows(whole, sweep, rows)
    streamed.parent.mkdir()
    streamed.write_text("previous\n")
    umask = os.umask(0o027)
    try:
        with streaming_rows(streamed, sweep) as sink:
            sink(rows[:3])
            beside = sorted(p.name for p in streamed.parent.iterdir())
            sink(rows[3:])
    finally:
        os.umask(umask)
    assert streamed.read_bytes() == whole.read_bytes()
    assert streamed.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in streamed.parent.iterdir()] == ["rows.csv"]
    if unnamed:
        assert beside == ["rows.csv"]
    else:
        assert len(beside) == 2
        assert beside[1] == "rows.csv"
        assert beside[0].startswith(".rows.csv.")
        assert beside[0].endswith(".tmp")


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
@pytest.mark.parametrize(("workers", "per_task"), [(1, 2), (2, 1), (2, 5), (2, None)])
def test_rows_formatted_by_the_workers_are_the_bytes_written_whole(
    tmp_path: Path, suffix: str, workers: int, per_task: int | None
) -> None:
    """Workers format and tally their tasks' rows: the same file, summary and kept rows as
    the rows written whole in one process, whatever the workers and the task size."""
    sweep = _sweep(tmp_path)
    kept = run_sweep(sweep, workers=1, per_task=3)
    whole, streamed = tmp_path / f"whole{suffix}", tmp_path / f"streamed{suffix}"
    write_rows(whole, sweep, kept.rows)
    seen: list[Row] = []
    with streaming_rows(streamed, sweep) as sink:
        result = run_sweep(sweep, workers=workers, per_task=per_task, sink=sink,
                           keep=seen.extend)
    assert streamed.read_bytes() == whole.read_bytes()
    assert result.summary == kept.summary
    assert result.row_count == len(kept.rows)
    assert seen == kept.rows


def test_rows_formatted_on_dask_are_the_bytes_written_whole(tmp_path: Path) -> None:
    """A Dask cluster's workers format the rows to the same bytes."""
    distributed = pytest.importorskip("distributed")
    sweep = _sweep(tmp_path)
    whole, streamed = tmp_path / "whole.csv", tmp_path / "streamed.csv"
    kept = run_sweep(sweep, workers=1)
    write_rows(whole, sweep, kept.rows)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address="127.0.0.1:0",
        worker_dashboard_address="127.0.0.1:0"
    ) as cluster, streaming_rows(streamed, sweep) as sink:
        result = run_sweep(sweep, dask=cluster.scheduler_address, per_task=2, sink=sink)
    assert streamed.read_bytes() == whole.read_bytes()
    assert result.summary == kept.summary


def test_tasks_cut_from_both_ends_cover_every_unit_once() -> None:
    """Tasks from the front and the back, resized as they go, give each unit exactly once."""
    order = _InOrder(None, None)
    tasks = _Tasks(order, 1000, 7, TASK_TARGET_S)
    covered: list[int] = []
    step = 0
    while (task := (tasks.back() if step % 3 == 0 else tasks.front())) is not None:
        covered.extend(range(*task))
        tasks.took(task[1] - task[0], 0.001 * (step % 5 + 1))  # sizes change as it goes
        step += 1
    assert sorted(covered) == list(range(1000))
    assert len({hi - lo for lo, hi in order.ends.items()}) > 2  # more than one size was cut
    assert tasks.made == len(order.ends)


def test_long_tasks_end_short_and_this_process_takes_short_ones() -> None:
    """Tasks of a longer target: the back's (this process's) are the short size, and the
    front's shrink near the end (to a 2 * workers-th of what is left, at least short)."""
    order = _InOrder(None, None)
    tasks = _Tasks(order, 1000, 100, 0.5, short=20, workers=2)
    assert tasks.back() == (980, 1000)
    sizes = []
    while (task := tasks.front()) is not None:
        sizes.append(task[1] - task[0])
    assert sum(sizes) == 980  # every unit once
    assert sizes[:6] == [100] * 6  # 980 - 600 = 380 left: a quarter is 95
    assert sizes[6:9] == [95, 72, 54]
    assert sizes[-1] <= 20
    assert min(sizes[:-1]) == 20  # never shorter than short, but for the very last
