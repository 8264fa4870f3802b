"""Crash timelines: asserted on the artists' data and gids, never on pixels."""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from itertools import pairwise
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from platform_testbed.checks.registry import BUILTIN_CHECKS
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish.world import RunResult, run
from platform_testbed.sim.show.explore import traced_runs
from platform_testbed.sim.show.lanes import MAX_WINDOW_ROWS
from platform_testbed.sim.show.plot import (
    Focus,
    check_colours,
    compare_timelines,
    crash_timeline,
    save_timeline,
)
from platform_testbed.sim.show.timeline import from_result, world_run

SHIPPED = sorted(scenario.shipped())


@cache
def _runs(name: str, *sets: str) -> tuple[RunResult, ...]:
    return tuple(traced_runs(scenario.load(name, list(sets))))


def _publish_ms(result: RunResult) -> int:
    assert result.trace is not None
    return result.trace.epoch_ms + round(result.trace.publish_at_s * 1000)


def _by_gid(ax: Axes, prefix: str) -> list[object]:
    return [a for a in ax.get_children() if (a.get_gid() or "").startswith(prefix)]


def _one(ax: Axes, gid: str) -> object:
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert len(found) == 1, f"expected one artist {gid!r}, found {len(found)}"
    return found[0]


def _look_times(result: RunResult) -> list[float]:
    """The oracle: when the run says the check looked, in seconds after the publish."""
    publish_ms = _publish_ms(result)
    return [(recorded.look.at_ms - publish_ms) / 1000 for recorded in result.looks]


def _lane_labels(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


@pytest.mark.parametrize("name", SHIPPED)
def test_compare_figure_has_one_lane_per_check(name: str) -> None:
    """Every shipped scenario gives one Axes with one labelled lane per check, rendered by Agg."""
    results = _runs(name)
    figure = compare_timelines(scenario.load(name), results)
    FigureCanvasAgg(figure).draw()
    [ax] = figure.axes
    for result in results:
        _one(ax, f"check-lane:{result.check}")
    named = [label.split("\n")[0] for label in _lane_labels(ax)]
    assert [n for n in named if n in {r.check for r in results}] == [r.check for r in results]


@pytest.mark.parametrize("name", SHIPPED)
def test_check_lanes_do_not_overlap(name: str) -> None:
    """The check lanes are stacked in the order given, each band below the previous one."""
    results = _runs(name)
    [ax] = compare_timelines(name, results).axes
    bands = []
    for result in results:
        band = _one(ax, f"check-lane:{result.check}")
        assert isinstance(band, Rectangle)
        bands.append((band.get_y(), band.get_y() + band.get_height()))
    for (_, bottom), (top, _) in pairwise(bands):
        assert bottom <= top + 1e-9


@pytest.mark.parametrize("name", SHIPPED)
def test_every_lane_is_labelled(name: str) -> None:
    """One non-empty y label per machine, per check (with its look count) and per site strip."""
    loaded = scenario.load(name)
    results = _runs(name)
    [ax] = compare_timelines(loaded, results).axes
    labels = _lane_labels(ax)
    assert len(_by_gid(ax, "lane:")) == loaded.release.machines
    machines = [f"m{i}" for i in range(1, loaded.release.machines + 1)]
    assert labels[: loaded.release.machines] == machines
    rest = labels[loaded.release.machines :]
    assert len(rest) == 2 * len(results)
    for index, result in enumerate(results):
        looks = len(result.looks)
        assert rest[2 * index] == f"{result.check}\n{looks} look{'s' if looks != 1 else ''}"
        assert rest[2 * index + 1] == "site"
    assert all(label.strip() for label in labels)


@pytest.mark.parametrize("name", SHIPPED)
def test_look_ticks_are_the_looks_the_run_took(name: str) -> None:
    """Each check's lane has one tick per look, at the times the run recorded."""
    results = _runs(name)
    [ax] = compare_timelines(name, results).axes
    for result in results:
        ticks = _one(ax, f"looks:{result.check}")
        assert isinstance(ticks, Line2D)
        assert list(ticks.get_xdata()) == pytest.approx(_look_times(result))
        ys = set(np.asarray(ticks.get_ydata(), dtype=float))
        band = _one(ax, f"check-lane:{result.check}")
        assert isinstance(band, Rectangle)
        assert all(band.get_y() < y < band.get_y() + band.get_height() for y in ys)


@pytest.mark.parametrize("name", SHIPPED)
def test_verdict_sits_at_the_decision_time_with_its_word(name: str) -> None:
    """The verdict dot is at decided_at_s, in its lane; its label says PASS/FAIL, when, rollback."""
    results = _runs(name)
    [ax] = compare_timelines(name, results).axes
    for result in results:
        label = _one(ax, f"verdict-label:{result.check}").get_text()  # type: ignore[attr-defined]
        if result.verdict is None or result.decided_at_s is None:
            assert label.startswith("no verdict")
            continue
        dot = _one(ax, f"verdict:{result.check}")
        assert isinstance(dot, Line2D)
        assert dot.get_xdata()[0] == pytest.approx(result.decided_at_s)
        assert label.startswith(f"{'PASS' if result.verdict.ok else 'FAIL'} at "
                                f"{result.decided_at_s:+.1f} s")
        assert result.outcome.replace("_", " ") in label
        assert ("rollback:" in label) == (result.rollback is not None)


@pytest.mark.parametrize("name", SHIPPED)
def test_window_holds_exactly_the_events_of_the_look(name: str) -> None:
    """A check with few looks shows each look's list: the snapshot's events, nothing dropped."""
    loaded = scenario.load(name)
    results = _runs(name)
    [ax] = compare_timelines(loaded, results).axes
    for result in results:
        rows = len(result.looks) * loaded.release.machines
        drawn = _by_gid(ax, f"window:{result.check}:")
        assert len(drawn) == (rows if rows <= MAX_WINDOW_ROWS else 0)
        if not drawn:
            continue
        publish_ms = _publish_ms(result)
        for number, recorded in enumerate(result.looks, start=1):
            for snapshot, dropped in zip(recorded.look.machines, recorded.dropped, strict=True):
                tag = f"{result.check}:{number}:{snapshot.id}"
                kept = _one(ax, f"window-events:{tag}")
                assert isinstance(kept, PathCollection)
                xs = sorted(float(x) for x in np.asarray(kept.get_offsets())[:, 0])
                expected = sorted((e.timestamp - publish_ms) / 1000 for e in snapshot.events)
                assert xs == pytest.approx(expected)
                shade = _one(ax, f"window:{tag}")
                assert isinstance(shade, Rectangle)
                left, right = shade.get_x(), shade.get_x() + shade.get_width()
                look_s = (recorded.look.at_ms - publish_ms) / 1000
                assert right == pytest.approx(look_s)
                assert all(left - 1e-9 <= x <= right + 1e-9 for x in xs)
                label = _one(ax, f"window-label:{tag}").get_text()  # type: ignore[attr-defined]
                assert f"L{number} saw {len(snapshot.events)} events, {dropped} dropped" in label


def test_figure_grows_with_the_checks_and_machines() -> None:
    """Six checks make a taller figure than two; three machines a taller one than one."""
    def inches(name: str, sets: tuple[str, ...], checks: int) -> float:
        return float(compare_timelines(name, _runs(name, *sets)[:checks]).get_figheight())

    assert inches("sept25-crash-loop", (), 6) > inches("sept25-crash-loop", (), 2)
    assert inches("healthy-release", ("release.machines=3",), 6) > inches(
        "healthy-release", ("release.machines=1",), 6
    )


def test_legend_covers_no_lane() -> None:
    """The legend is drawn outside the axes: its box and the axes' box do not intersect."""
    figure = compare_timelines("sept25-crash-loop", _runs("sept25-crash-loop"))
    FigureCanvasAgg(figure).draw()
    [ax] = figure.axes
    [legend] = figure.legends
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    box, axes = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
    assert box.y1 <= axes.y0


def test_check_colours_are_fixed_for_the_builtins() -> None:
    """A built-in check has the same colour in any figure; all six colours differ."""
    six = check_colours(list(BUILTIN_CHECKS))
    assert len(set(six.values())) == len(BUILTIN_CHECKS) == 6
    assert check_colours(["timestamp", "count"]) == {k: six[k] for k in ("timestamp", "count")}
    mine = check_colours(["count", "mine", "theirs"])
    assert len(set(mine.values())) == 3


def test_machines_drawn_are_a_passing_runs_else_the_last_to_decide() -> None:
    """The machine lanes come from a run nothing rolled back, else the check that decided last."""
    runs = {r.check: r for r in _runs("sept25-crash-loop")}
    timelines = [from_result(runs[c]) for c in ("timestamp", "count", "min-healthy-time")]
    assert world_run(timelines)[0] == 1  # count passed: its world had no rollback
    failing = [from_result(runs[c]) for c in ("timestamp", "min-healthy-time", "circuit-breaker")]
    index, why = world_run(failing)
    assert failing[index].check == "min-healthy-time"
    assert f"{runs['min-healthy-time'].decided_at_s:+.1f} s" in why


@pytest.mark.parametrize("suffix", ["png", "svg", "pdf"])
def test_same_runs_give_the_same_file(tmp_path: Path, suffix: str) -> None:
    """Saving the same runs twice writes identical bytes: no date, no random ids."""
    results = _runs("sept25-crash-loop")
    one = save_timeline(tmp_path / f"one.{suffix}", "sept25-crash-loop", results).read_bytes()
    two = save_timeline(tmp_path / f"two.{suffix}", "sept25-crash-loop", results).read_bytes()
    assert one == two


def test_dropped_events_are_drawn_outside_the_window() -> None:
    """The events that fell off before a look are ghosts left of its window, never inside it."""
    result = _runs("sept25-crash-loop")[0]
    ax = crash_timeline(result)
    last = len(result.looks)
    recorded = result.looks[-1]
    assert recorded.dropped[0] > 0
    ghosts = _one(ax, f"window-dropped:count:{last}:m1")
    shade = _one(ax, f"window:count:{last}:m1")
    assert isinstance(ghosts, PathCollection)
    assert isinstance(shade, Rectangle)
    xs = np.asarray(ghosts.get_offsets())[:, 0]
    assert len(xs) > 0
    assert all(x <= shade.get_x() for x in xs)


def test_sept25_shows_the_missed_verdict_late_failure_and_404() -> None:
    """The count check's panel shows PASS, the reconciler's late failure and the 404 span."""
    count = next(r for r in _runs("sept25-crash-loop") if r.check == "count")
    ax = crash_timeline(count)
    assert count.late_failure_at_s is not None
    verdict = _one(ax, "verdict:count")
    assert isinstance(verdict, Line2D)
    assert verdict.get_xdata()[0] == pytest.approx(count.decided_at_s)
    assert "PASS" in _one(ax, "verdict-label:count").get_text()  # type: ignore[attr-defined]
    late = _one(ax, "late-failure:count")
    assert isinstance(late, LineCollection)
    [[(x, _), _]] = late.get_segments()
    assert x == pytest.approx(count.late_failure_at_s)
    span = _one(ax, "site-404:count")
    assert isinstance(span, Rectangle)
    assert span.get_x() == pytest.approx(count.late_failure_at_s)
    label = _one(ax, "site-404-label:count").get_text()  # type: ignore[attr-defined]
    assert f"serves 404 ({count.site.down_s:.0f} s)" in label


def test_sept25_timestamp_panel_shows_fail_and_rollback() -> None:
    """The timestamp check's panel shows FAIL and the restored previous image, no late failure."""
    stamp = next(r for r in _runs("sept25-crash-loop") if r.check == "timestamp")
    ax = crash_timeline(stamp)
    text = _one(ax, "verdict-label:timestamp").get_text()  # type: ignore[attr-defined]
    assert "FAIL" in text
    assert "previous image restored" in text
    assert not _by_gid(ax, "late-failure")


def test_exit_markers_are_split_by_cause() -> None:
    """Crashes, OOM kills and requested stops are separate marker sets at their exits' times."""
    oom = _runs("sept25-crash-loop", 'release.behavior="oom"')[0]
    ax = crash_timeline(oom)
    timeline = from_result(oom)
    for kind in ("oom", "requested stop"):
        marks = _one(ax, f"marks:{kind}:m1")
        assert isinstance(marks, Line2D)
        expected = [m.at_s for m in timeline.lanes[0].marks if m.kind == kind]
        assert list(marks.get_xdata()) == pytest.approx(expected)
    assert not _by_gid(ax, "marks:crash:")


def test_gave_up_is_marked_at_the_last_exit() -> None:
    """The moment the platform gave up is marked at the exit whose restarting is false."""
    result = _runs("gives-up")[0]
    assert result.trace is not None
    last_exit = next(e for e in reversed(result.trace.machines[0].events) if e.type == "exit")
    assert last_exit.is_crash
    assert not last_exit.restarting
    ax = crash_timeline(result)
    marker = _one(ax, "gave-up:m1")
    assert isinstance(marker, Line2D)
    assert marker.get_xdata()[0] == pytest.approx(
        (last_exit.timestamp - _publish_ms(result)) / 1000
    )


def test_delete_rollback_shows_destroyed_machines_and_404() -> None:
    """With the legacy delete rollback the caught publish still leaves the site serving 404."""
    stamp = next(
        r for r in _runs("sleeping-api-crash-on-boot", 'publish.rollback="delete"')
        if r.check == "timestamp"
    )
    ax = crash_timeline(stamp)
    label = _one(ax, "verdict-label:timestamp").get_text()  # type: ignore[attr-defined]
    assert "machines deleted" in label
    assert _by_gid(ax, "site-404")


def test_focus_compresses_the_tail_and_round_trips() -> None:
    """The x scale is linear up to the split, squeezed after it, and its inverse undoes it."""
    focus = Focus(-5.0, 40.0, 570.0)
    xs = np.array([-5.0, 0.0, 40.0, 100.0, 570.0])
    assert focus.forward(xs)[:3] == pytest.approx(xs[:3])
    assert focus.forward(570.0) - focus.forward(40.0) < 530.0
    assert focus.inverse(focus.forward(xs)) == pytest.approx(xs)


def test_timeline_needs_a_trace() -> None:
    """Plotting a run made without trace=True says how to get one."""
    loaded = scenario.load("sept25-crash-loop")
    from platform_testbed.checks import make_check  # noqa: PLC0415

    result = run(loaded, loaded.seed, make_check("count", {}))
    with pytest.raises(ValueError, match="trace=True"):
        crash_timeline(result)


def test_plotting_never_touches_pyplot() -> None:
    """Drawing a timeline imports no pyplot, so no figure state lingers between calls."""
    code = (
        "import sys\n"
        "from platform_testbed.sim.config import scenario\n"
        "from platform_testbed.sim.show.explore import traced_runs\n"
        "from platform_testbed.sim.show.plot import compare_timelines\n"
        "s = scenario.load('sept25-crash-loop')\n"
        "compare_timelines(s, traced_runs(s)).savefig('/dev/null', format='png')\n"
        "print('matplotlib.pyplot' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_lanes_beyond_max_are_counted_not_drawn() -> None:
    """Beyond max_lanes machines, only max_lanes lanes are drawn and a note counts the rest."""
    results = _runs("healthy-release", "release.machines=3")
    ax = crash_timeline(results[0], max_lanes=2)
    assert len(_by_gid(ax, "lane:")) == 2
    note = _one(ax, "lanes-hidden").get_text()  # type: ignore[attr-defined]
    assert "1 more machine" in note
