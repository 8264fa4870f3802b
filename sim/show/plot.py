"""Crash timelines with matplotlib: the world's machines, then one lane per check.

Built on ``matplotlib.figure.Figure`` only, never pyplot: no global state leaks between
calls, and figures render under any backend (Agg for files). The lanes are drawn by
``sim.show.lanes`` (every artist carries a ``gid``), the x axis lives in
``sim.show.focus`` and the detection grid figure in ``sim.show.gridplot``; all stay
importable from here (``__all__``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import Collection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from platform_testbed.sim.config.scenario import BadInput
from platform_testbed.sim.publish.world import RunResult
from platform_testbed.sim.runtime.outputs import save_figure
from platform_testbed.sim.show import lanes
from platform_testbed.sim.show.focus import BEFORE_PUBLISH_S, Focus
from platform_testbed.sim.show.gridplot import detection_grid_figure
from platform_testbed.sim.show.lanes import (
    FAIL_COLOUR,
    KEPT_OTHER,
    MARKS,
    PASS_COLOUR,
    SITE_COLOURS,
    SITE_LABELS,
    STATE_COLOURS,
    check_colours,
)
from platform_testbed.sim.show.timeline import CRASH, Timeline, from_result

__all__ = [
    "BEFORE_PUBLISH_S", "Focus", "check_colours", "compare_timelines", "crash_timeline",
    "detection_grid_figure", "drawn_keys", "legend_handles", "save_timeline",
]

INCH_PER_UNIT = 0.5  # inches per data unit of lane height
WIDTH_IN = 13.0
# Beyond this many machines a figure stops being readable: the rest are counted, not drawn.
MAX_LANES = 12


def legend_handles(colour: str = "#404040", drawn: Axes | None = None) -> list[Any]:
    """Proxy artists explaining the colours and markers of a timeline.

    With ``drawn``, only those of what that Axes shows (a run with no crash lists no
    crash marker, one that passed no "verdict: fail"); without it, every one.
    """
    keyed = _keyed_handles(colour)
    if drawn is None:
        return [handle for _, handle in keyed]
    shown = drawn_keys(drawn)
    return [handle for key, handle in keyed if key in shown]


def _keyed_handles(colour: str) -> list[tuple[str, Any]]:
    """Every legend entry with the key ``drawn_keys`` gives what it explains."""
    keyed: list[tuple[str, Any]] = [
        (f"state:{STATE_COLOURS[(state, image)]}", Patch(color=STATE_COLOURS[(state, image)], label=label))
        for state, image, label in (("starting", "release", "booting (release)"),
                                    ("started", "release", "started (release)"),
                                    ("started", "previous", "started (previous image)"),
                                    ("stopped", "release", "stopped"))
    ]
    for marker, mark_colour, size, label in MARKS.values():
        if any(key == f"mark:{label}" for key, _ in keyed):
            continue  # launch and update share one entry
        keyed.append((f"mark:{label}", Line2D([], [], linestyle="none", marker=marker,
                                              color=mark_colour, markersize=size * 0.8,
                                              label=label)))
    keyed += [
        ("gave-up", Line2D([], [], linestyle="none", marker="X", color="#000000",
                           markeredgecolor="#d62728", markersize=10, label="platform gave up")),
        ("looks", Line2D([], [], linestyle="none", marker="|", color=colour, markersize=10,
                         markeredgewidth=1.3, label="a look the check took (L1, L2, …)")),
        ("window", Patch(facecolor=colour, alpha=0.25, edgecolor=colour,
                         label="event list that look saw (capped)")),
        ("kept:crash", Line2D([], [], linestyle="none", marker="o", color=MARKS[CRASH][1],
                              markersize=4, label="kept in the list: crash")),
        ("kept:other", Line2D([], [], linestyle="none", marker="o", color=KEPT_OTHER,
                              markersize=4, label="kept in the list: other event")),
        ("dropped", Line2D([], [], linestyle="none", marker="o", markerfacecolor="none",
                           markeredgecolor="#bdbdbd", markersize=4,
                           label="dropped (fell off the list)")),
        ("verdict:pass", Line2D([], [], color=PASS_COLOUR, linewidth=1.6, marker="o",
                                markeredgecolor="white", label="verdict: pass")),
        ("verdict:fail", Line2D([], [], color=FAIL_COLOUR, linewidth=1.6, marker="o",
                                markeredgecolor="white", label="verdict: fail")),
        ("late-failure", Line2D([], [], color=FAIL_COLOUR, linewidth=1.8, linestyle="--",
                                label="reconciler late failure")),
    ]
    keyed += [(f"site:{SITE_COLOURS[k]}", Patch(color=SITE_COLOURS[k], label=v))
              for k, v in SITE_LABELS.items()]
    return keyed


def drawn_keys(ax: Axes) -> set[str]:
    """What ``ax`` shows, by the ``gid`` each lane artist carries: the legend's keys."""
    keys: set[str] = set()
    for artist in ax.get_children():
        gid = artist.get_gid() or ""
        kind = gid.split(":", 1)[0]
        if kind in ("lane", "site") and isinstance(artist, Collection):
            prefix = "state" if kind == "lane" else "site"
            keys |= {f"{prefix}:{c}" for c in _face_hexes(artist)}
        elif kind == "marks":
            keys.add(f"mark:{MARKS[gid.split(':')[1]][3]}")
        elif kind in ("gave-up", "looks", "window", "late-failure"):
            keys.add(kind)
        elif kind == "window-events" and isinstance(artist, Collection) and \
                np.asarray(artist.get_offsets()).size:
            crash = to_hex(MARKS[CRASH][1])
            keys |= {"kept:crash" if c == crash else "kept:other" for c in _face_hexes(artist)}
        elif kind == "window-dropped" and isinstance(artist, Collection):
            if np.asarray(artist.get_offsets()).size:  # an empty scatter draws nothing
                keys.add("dropped")
        elif kind == "verdict" and isinstance(artist, Line2D):
            keys.add("verdict:pass" if to_hex(artist.get_color()) == PASS_COLOUR else "verdict:fail")
    return keys


def _face_hexes(collection: Collection) -> set[str]:
    """The face colours a collection draws, as ``#rrggbb``."""
    hexes = set()
    for row in np.asarray(collection.get_facecolor(), dtype=float).reshape(-1, 4):
        red, green, blue, _ = (float(v) for v in row)
        hexes.add(to_hex((red, green, blue)))
    return hexes


def _height_in(timelines: Sequence[Timeline], max_lanes: int) -> float:
    """Inches for the lanes: grows with the machines drawn and each check's rows."""
    machines = min(max(len(t.lanes) for t in timelines), max_lanes)
    return INCH_PER_UNIT * lanes.height(timelines, machines) + 0.7


def _new_figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def crash_timeline(
    result: RunResult,
    ax: Axes | None = None,
    *,
    scenario: str | None = None,
    focus: Focus | None = None,
    before_s: float = BEFORE_PUBLISH_S,
    colour: str | None = None,
    legend: bool = True,
    max_lanes: int = MAX_LANES,
) -> Axes:
    """Draw one traced run (``run(..., trace=True)``) on ``ax`` (a new figure if None).

    The machine lanes, then the check's own lane. The x axis runs from ``before_s`` before
    the publish (or ``focus``, to share one); one lane per machine, up to ``max_lanes`` (a
    note says how many more there are).
    """
    timeline = from_result(result)
    if ax is None:
        extra = 1.4 if legend else 0.0
        ax = _new_figure(WIDTH_IN, _height_in([timeline], max_lanes) + extra).add_subplot()
    focus = focus or Focus.around([timeline], before_s)
    lanes.draw(ax, [timeline], focus, [colour or check_colours([timeline.check])[timeline.check]],
               max_lanes)
    where = f"{scenario} · " if scenario else ""
    ax.set_title(f"{where}seed {timeline.seed} · check: {timeline.check}", loc="left",
                 fontsize=10, fontweight="bold")
    if legend:
        ax.legend(handles=legend_handles(drawn=ax), loc="upper center", ncol=6, fontsize=7.5,
                  bbox_to_anchor=(0.5, -0.2), frameon=False)
    return ax


def compare_timelines(
    scenario: Any,
    results: Sequence[RunResult],
    before_s: float = BEFORE_PUBLISH_S,
    max_lanes: int = MAX_LANES,
) -> Figure:
    """Every check's traced run of the same world on one time axis, one lane per check.

    ``scenario`` is a ``Scenario`` or its name, for the title; the axis starts ``before_s``
    before the publish. The figure grows with the machines and the checks.
    """
    if not results:
        raise ValueError("compare_timelines needs at least one traced run")
    name = getattr(scenario, "name", str(scenario))
    timelines = [from_result(r) for r in results]
    focus = Focus.around(timelines, before_s)
    colours = check_colours([t.check for t in timelines])
    figure = _new_figure(WIDTH_IN, _height_in(timelines, max_lanes) + 1.9)
    ax = figure.add_subplot()
    lanes.draw(ax, timelines, focus, [colours[t.check] for t in timelines], max_lanes)
    seeds = sorted({r.seed for r in results})
    checks = ", ".join(r.check for r in results)
    figure.suptitle(f"{name} · seed {', '.join(map(str, seeds))} · checks: {checks}",
                    fontsize=12, fontweight="bold", x=0.01, ha="left")
    figure.legend(handles=legend_handles(drawn=ax), loc="outside lower center", ncol=6,
                  fontsize=7.5, frameon=False)
    return figure


def save_timeline(path: str | Path, scenario: Any, results: Sequence[RunResult]) -> Path:
    """Write ``compare_timelines`` to ``path`` (format from its suffix); BadInput if it can't.

    The file carries no date (``save_figure``: none, or SOURCE_DATE_EPOCH's), so the same
    runs give the same bytes in every format.
    """
    target = Path(path)
    figure = compare_timelines(scenario, results)
    formats = figure.canvas.get_supported_filetypes()
    suffix = target.suffix.lstrip(".").lower()
    if suffix not in formats:
        raise BadInput(
            f"--timeline {path}: unknown image format {suffix!r} (use one of: "
            f"{', '.join(sorted(formats))})"
        )
    try:
        save_figure(figure, target, dpi=110)
    except OSError as error:
        raise BadInput(f"--timeline {path}: cannot write ({error.strerror or error})") from None
    return target
