"""Figures read at a glance: heatmap ticks at the values that ran, cells of one size, titles,
timelines from the Python front door, and legends that list only what is drawn."""

from __future__ import annotations

from functools import cache

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import QuadMesh
from matplotlib.figure import Figure

from platform_testbed.sim import api
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish.world import RunResult
from platform_testbed.sim.show.explore import traced_runs
from platform_testbed.sim.show.lanes import MARKS, SITE_LABELS
from platform_testbed.sim.show.plot import MAX_LANES, compare_timelines, crash_timeline
from platform_testbed.sim.show.timeline import from_result, world_run
from platform_testbed.sim.sweep.facets import MAX_TICKS, facet_map
from platform_testbed.sim.sweep.heatmap import heatmap

CAPS = [1, 2, 3, 5, 10]  # uneven: the example drew a tick at 7
DELAYS = [5.0, 10.0, 30.0]


def _rows(xs, ys, check="count", **more):
    """One bad world per (x, y): missed where x < y/5, so the grid is not uniform."""
    return [{"check": check, "cap": x, "delay": y, "outcome": "missed" if x < y / 5 else "caught",
             **more} for x in xs for y in ys]


def _ticks(axis) -> tuple[list[float], list[str]]:
    """Tick positions and their labels as set (shared axes hide inner labels, not the ticks)."""
    locs = list(axis.get_ticklocs())
    label = axis.get_major_formatter()
    return locs, [label(loc, i) for i, loc in enumerate(locs)]


def _cell_sizes(panel: Axes) -> set[float]:
    [mesh] = [c for c in panel.collections if isinstance(c, QuadMesh)]
    corners = mesh.get_coordinates()
    return {round(float(d), 9) for d in np.diff(corners[0, :, 0])} | {
        round(float(d), 9) for d in np.diff(corners[:, 0, 1])}


def test_heatmap_ticks_stand_at_the_sampled_values_only():
    """Uneven caps: one tick per cap at its cell's centre, labelled with the cap; no tick at 7."""
    figure = heatmap(_rows(CAPS, DELAYS), "cap", "delay")
    [panel] = figure.axes[:1]
    assert _ticks(panel.xaxis) == ([0.5, 1.5, 2.5, 3.5, 4.5], ["1", "2", "3", "5", "10"])
    assert _ticks(panel.yaxis) == ([0.5, 1.5, 2.5], ["5", "10", "30"])
    assert _cell_sizes(panel) == {1.0}  # no cell stretched over the gap between 5 and 10


def test_heatmap_with_many_values_ticks_a_dozen_of_them_at_their_cells():
    """100 values on an axis: at most a dozen ticks, each at the centre of the value it names."""
    xs = [round(0.1 * i, 1) for i in range(1, 101)]
    figure = heatmap(_rows(xs, DELAYS), "cap", "delay")
    locs, labels = _ticks(figure.axes[0].xaxis)
    assert 2 <= len(locs) <= MAX_TICKS
    for loc, label in zip(locs, labels, strict=True):
        assert float(label) == xs[int(loc - 0.5)]
        assert loc % 1 == 0.5


def test_heatmap_has_a_title_when_none_is_given():
    """A heatmap drawn from Python says what it shows: the checks and the two axes."""
    figure = heatmap(_rows(CAPS, DELAYS), "cap", "delay")
    assert figure.get_suptitle() == "where count miss: cap × delay (other axes pooled)"


def test_facet_map_ticks_every_panel_at_the_sampled_values():
    """Each small map of a four-axis figure is ticked at its x and y values, nothing else."""
    rows = [dict(r, profile=p, boot=b) for r in _rows(CAPS, DELAYS) for p in ("a", "b")
            for b in (0.2, 1.0)]
    figure = facet_map(rows, "count", axes={"cap": CAPS, "delay": DELAYS, "profile": ["a", "b"],
                                            "boot": [0.2, 1.0]},
                       keys=("cap", "delay", "profile", "boot"))
    panels = [a for a in figure.axes if a.get_label() != "<colorbar>"]
    assert len(panels) == 4
    for panel in panels:
        assert _ticks(panel.xaxis)[1] == ["1", "2", "3", "5", "10"]
        assert _ticks(panel.yaxis)[1] == ["5", "10", "30"]
        assert _cell_sizes(panel) == {1.0}


def test_the_api_heatmap_is_titled_and_ticked_at_the_sweeps_values():
    """api.heatmap(api.sweep(...)): the sweep's name in the title, ticks at the swept caps."""
    result = api.sweep({"name": "caps", "scenario": "sept25-crash-loop", "checks": ["count"],
                        "seeds": 1, "axes": {"platform.event_log_cap": CAPS,
                                             "check.look_delay_s": DELAYS}})
    figure = api.heatmap(result)
    assert figure.get_suptitle().startswith("caps: where count miss")
    assert _ticks(figure.axes[0].xaxis)[1] == ["1", "2", "3", "5", "10"]
    with pytest.raises(api.BadInput, match="heatmap: x 'nope' is not one of the axes"):
        api.heatmap(result, x="nope")


def test_api_timeline_draws_and_writes_the_compared_checks(tmp_path):
    """api.timeline(scenario, checks): one figure, a lane per check, written to path if given."""
    path = tmp_path / "t.png"
    figure = api.timeline("sept25-crash-loop", ["count", "timestamp"], path=path)
    assert isinstance(figure, Figure)
    assert path.stat().st_size > 0
    [ax] = figure.axes
    gids = {a.get_gid() for a in ax.get_children()}
    assert {"verdict:count", "verdict:timestamp"} <= gids
    with pytest.raises(api.BadInput, match="unknown image format"):
        api.timeline("sept25-crash-loop", "count", path=tmp_path / "t.nope")


# --- legends: what they list is drawn ---------------------------------------------------------

SHIPPED = sorted(scenario.shipped())


@cache
def _runs(name: str, *checks: str) -> tuple[RunResult, ...]:
    return tuple(traced_runs(scenario.load(name), checks))


def _legend_labels(figure: Figure) -> set[str]:
    legends = figure.legends or [a.get_legend() for a in figure.axes if a.get_legend()]
    return {t.get_text() for legend in legends for t in legend.get_texts()}


def _expected(runs: tuple[RunResult, ...]) -> dict[str, bool]:
    """The oracle, from the runs' data (not the artists): which data-driven entries belong."""
    timelines = [from_result(r) for r in runs]
    lanes = timelines[world_run(timelines)[0]].lanes[:MAX_LANES]
    marks = {m.kind for lane in lanes for m in lane.marks}
    expected = {label: any(MARKS[k][3] == label for k in marks) for _, _, _, label in MARKS.values()}
    expected["platform gave up"] = any(lane.gave_up_at_s is not None for lane in lanes)
    expected["verdict: pass"] = any(t.verdict is not None and t.verdict.ok for t in timelines)
    expected["verdict: fail"] = any(t.verdict is not None and not t.verdict.ok for t in timelines)
    expected["reconciler late failure"] = any(t.late_failure_at_s is not None for t in timelines)
    states = {i.state for t in timelines for i in t.site}
    expected |= {label: state in states for state, label in SITE_LABELS.items()}
    return expected


@pytest.mark.parametrize("name", SHIPPED)
def test_the_legend_lists_what_the_figure_draws(name):
    """Every shipped scenario's timeline: a legend entry for each thing drawn, none for the rest."""
    runs = _runs(name)
    labels = _legend_labels(compare_timelines(name, runs))
    for label, drawn in _expected(runs).items():
        assert (label in labels) == drawn, (label, drawn)


def test_a_healthy_release_lists_no_crash_no_failure_no_404():
    """count and timestamp pass a release that never crashes: no crash marker, no fail, no 404.

    (Every built-in would draw a fail: restart-counter fails safe, blind, on this platform.)
    """
    runs = _runs("healthy-release", "count", "timestamp")
    labels = _legend_labels(compare_timelines("healthy-release", runs))
    assert "exit: crash" not in labels
    assert "verdict: fail" not in labels
    assert "site: 404" not in labels
    assert "platform gave up" not in labels
    assert {"verdict: pass", "site: served", "a look the check took (L1, L2, …)"} <= labels


def test_a_single_timeline_legend_lists_only_what_it_draws():
    """crash_timeline's own legend: the count check's run passed, so no "verdict: fail"."""
    [count] = [r for r in _runs("sept25-crash-loop") if r.check == "count"]
    labels = _legend_labels(crash_timeline(count).figure)
    assert "verdict: pass" in labels
    assert "verdict: fail" not in labels
    assert "exit: crash" in labels
