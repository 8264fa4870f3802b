"""Crash timelines: asserted on the artists' data and gids, never on pixels."""

from __future__ import annotations

import subprocess
import sys
from functools import cache

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from sim import scenario
from sim.publish.world import RunResult, run
from sim.show.explore import traced_runs
from sim.show.plot import Focus, compare_timelines, crash_timeline
from sim.show.timeline import from_result

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


@pytest.mark.parametrize("name", SHIPPED)
def test_compare_figure_renders_for_every_shipped_scenario(name: str) -> None:
    """Every shipped scenario gives a figure with one panel per check that renders under Agg."""
    results = _runs(name)
    figure = compare_timelines(scenario.load(name), results)
    FigureCanvasAgg(figure).draw()
    assert [ax.get_title(loc="left").split(" — ")[0] for ax in figure.axes] == [
        f"check: {r.check}" for r in results
    ]


@pytest.mark.parametrize("name", SHIPPED)
def test_one_lane_per_machine(name: str) -> None:
    """Each panel has exactly one state lane per machine of the release, plus the site lane."""
    loaded = scenario.load(name)
    figure = compare_timelines(loaded, _runs(name))
    for ax in figure.axes:
        lanes = _by_gid(ax, "lane:")
        assert len(lanes) == loaded.release.machines
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels[-1] == "site"
        assert len(labels) == loaded.release.machines + 1


@pytest.mark.parametrize("name", SHIPPED)
def test_look_markers_are_the_looks_the_check_took(name: str) -> None:
    """One look line per look the check took, at the look's time, labelled with the check."""
    for result in _runs(name):
        ax = crash_timeline(result, scenario=name)
        publish_ms = _publish_ms(result)
        lines = _by_gid(ax, "look:")
        assert len(lines) == len(result.looks)
        for number, recorded in enumerate(result.looks, start=1):
            line = _one(ax, f"look:{number}")
            assert isinstance(line, Line2D)
            assert line.get_xdata()[0] == pytest.approx((recorded.look.at_ms - publish_ms) / 1000)
            label = _one(ax, f"look-label:{number}")
            assert label.get_text() == f"{result.check} L{number}"  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", SHIPPED)
def test_window_holds_exactly_the_events_of_the_look(name: str) -> None:
    """Each look's shaded window on a lane holds the snapshot's events, and nothing dropped."""
    for result in _runs(name):
        ax = crash_timeline(result)
        publish_ms = _publish_ms(result)
        for number, recorded in enumerate(result.looks, start=1):
            for snapshot, dropped in zip(recorded.look.machines, recorded.dropped, strict=True):
                tag = f"{number}:{snapshot.id}"
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
                assert f"saw {len(snapshot.events)} events, {dropped} dropped" in label


def test_dropped_events_are_drawn_outside_the_window() -> None:
    """The events that fell off before a look are ghosts left of its window, never inside it."""
    result = _runs("sept25-crash-loop")[0]
    ax = crash_timeline(result)
    last = len(result.looks)
    recorded = result.looks[-1]
    assert recorded.dropped[0] > 0
    ghosts = _one(ax, f"window-dropped:{last}:m1")
    shade = _one(ax, f"window:{last}:m1")
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
    verdict = _one(ax, "verdict")
    assert isinstance(verdict, Line2D)
    assert verdict.get_xdata()[0] == pytest.approx(count.decided_at_s)
    assert "PASS" in _one(ax, "verdict-label").get_text()  # type: ignore[attr-defined]
    late = _one(ax, "late-failure")
    assert isinstance(late, Line2D)
    assert late.get_xdata()[0] == pytest.approx(count.late_failure_at_s)
    span = _one(ax, "site-404")
    assert "serves 404" in _one(ax, "site-404-label").get_text()  # type: ignore[attr-defined]
    assert span is not None


def test_sept25_timestamp_panel_shows_fail_and_rollback() -> None:
    """The timestamp check's panel shows FAIL and the restored previous image, no late failure."""
    stamp = next(r for r in _runs("sept25-crash-loop") if r.check == "timestamp")
    ax = crash_timeline(stamp)
    text = _one(ax, "verdict-label").get_text()  # type: ignore[attr-defined]
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
    assert "machines deleted" in _one(ax, "verdict-label").get_text()  # type: ignore[attr-defined]
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
    from checks import make_check  # noqa: PLC0415

    result = run(loaded, loaded.seed, make_check("count", {}))
    with pytest.raises(ValueError, match="trace=True"):
        crash_timeline(result)


def test_plotting_never_touches_pyplot() -> None:
    """Drawing a timeline imports no pyplot, so no figure state lingers between calls."""
    code = (
        "import sys\n"
        "from sim import scenario\n"
        "from sim.show.explore import traced_runs\n"
        "from sim.show.plot import compare_timelines\n"
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
