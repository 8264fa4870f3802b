"""Notebook helpers: traced runs, the layered looks, the event-list table, the detection grid."""

from __future__ import annotations

import matplotlib

from platform_testbed.checks import BUILTIN_CHECKS

matplotlib.use("Agg")

import pytest

from platform_testbed.sim.config import scenario
from platform_testbed.sim.show.explore import (
    detection_grid,
    event_lists,
    layered_looks,
    markdown_table,
    traced_runs,
    with_sets,
)
from platform_testbed.sim.show.gridplot import detection_grid_figure


def test_traced_runs_trace_every_builtin_check_in_one_world() -> None:
    """One traced result per built-in check, all in the scenario's seed."""
    results = traced_runs(scenario.load("sept25-crash-loop"))
    assert [r.check for r in results] == list(BUILTIN_CHECKS)
    assert all(r.trace is not None and r.seed == 1 for r in results)


def test_layered_looks_start_at_the_first_all_started_look() -> None:
    """Look 1 is the first look at which every machine reads started; 2 and 3 follow it."""
    result = traced_runs(scenario.load("sept25-crash-loop"), ["count"])[0]
    looks = layered_looks(result)
    assert sorted(looks) == [1, 2, 3]
    assert all(m.state == "started" for m in looks[1].look.machines)
    # The looks at +0, +1 and +2 s saw it still booting (2.09 s): look 1 is the fourth.
    assert result.looks.index(looks[1]) == 3
    assert looks[3] is result.looks[-1]


def test_sept25_event_lists_have_equal_counts_and_later_newest_crash() -> None:
    """At looks 2 and 3 the crash counts are equal while the newest crash moved later."""
    result = traced_runs(scenario.load("sept25-crash-loop"), ["count"])[0]
    rows = {row[0]: row[1:] for row in event_lists(result)}
    count2, count3 = rows["crashes since publish (count)"]
    assert count2 == count3 == "2"  # the write-up's "two crashes", at looks 2 and 3
    newest2, newest3 = (float(v.removesuffix(" s")) for v in rows["newest crash (timestamp)"])
    assert newest3 > newest2
    assert len(rows["newest"]) == 2


def test_markdown_table_has_a_header_rule_and_one_line_per_row() -> None:
    """A table of n rows renders as n + 1 Markdown lines, the second a rule."""
    text = markdown_table([["", "a"], ["x", "1"], ["y", "2"]])
    lines = text.splitlines()
    assert len(lines) == 4
    assert lines[1] == "|---|---|"


def test_with_sets_validates_like_the_cli() -> None:
    """Overrides go through the scenario's validation: an out-of-range cap is bad input."""
    loaded = scenario.load("sept25-crash-loop")
    assert with_sets(loaded, ["platform.event_log_cap=2"]).platform.event_log_cap == 2
    with pytest.raises(scenario.BadInput, match="event_log_cap"):
        with_sets(loaded, ["platform.event_log_cap=0"])


def test_detection_grid_shows_count_blind_and_timestamp_needs_one_crash_cycle() -> None:
    """In the incident's world the count check misses at cap 5; timestamp misses below cap 2,
    the events one crash cycle writes under the shipped profile (exit, start)."""
    grid = detection_grid(
        scenario.load("sept25-crash-loop"), caps=[1, 2, 3, 5], periods=[2.5],
        checks=["count", "timestamp"],
    )
    assert grid.outcome("count", 2.5, 5) == "missed"
    assert grid.outcome("timestamp", 2.5, 5) == "caught"
    assert grid.outcome("timestamp", 2.5, 1) == "missed"
    assert grid.outcome("timestamp", 2.5, 2) == "caught"
    assert grid.smallest_cap_that_catches("timestamp") == {2.5: 2}
    assert grid.smallest_cap_that_catches("count") == {2.5: None}


def test_detection_grid_figure_has_one_panel_and_cell_per_world() -> None:
    """The grid figure has a panel per check and a labelled cell per cap and period."""
    grid = detection_grid(
        scenario.load("sept25-crash-loop"), caps=[1, 5], periods=[2.5, 4.0],
        checks=["count", "timestamp"],
    )
    figure = detection_grid_figure(grid)
    assert len(figure.axes) == len(grid.outcomes) == 2
    for ax, name in zip(figure.axes, grid.outcomes, strict=True):
        cells = [t for t in ax.texts if (t.get_gid() or "").startswith(f"cell:{name}:")]
        assert len(cells) == 4
        first = next(t for t in cells if t.get_gid() == f"cell:{name}:0:0")
        assert first.get_text().startswith(grid.outcome(name, 2.5, 1))
