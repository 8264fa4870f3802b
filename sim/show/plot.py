"""Crash timelines with matplotlib: machine lanes, looks, the event window each look saw, verdicts.

Built on ``matplotlib.figure.Figure`` only, never pyplot: no global state leaks between
calls, and figures render under any backend (Agg for files). Every artist a test or a
reader may want to find carries a ``gid`` (``lane:<machine>``, ``look:<n>``,
``window:<n>:<machine>``, …).

The x axis lives in ``sim.show.focus`` and the detection grid figure in ``sim.show.gridplot``;
both stay importable from here (``__all__``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from sim.publish.world import RunResult
from sim.scenario import BadInput
from sim.show.focus import BEFORE_PUBLISH_S, Focus
from sim.show.gridplot import detection_grid_figure
from sim.show.timeline import CLEAN, CRASH, OOM, STOP, Lane, Timeline, Window, from_result

__all__ = [
    "BEFORE_PUBLISH_S", "Focus", "compare_timelines", "crash_timeline", "detection_grid_figure",
    "legend_handles", "save_timeline",
]

STATE_COLOURS = {
    ("started", "release"): "#2ca02c",
    ("started", "previous"): "#6baed6",
    ("starting", "release"): "#fdd49e",
    ("starting", "previous"): "#c6dbef",
    ("stopped", "release"): "#e6e6e6",
    ("stopped", "previous"): "#e6e6e6",
    ("stopping", "release"): "#e6e6e6",
    ("stopping", "previous"): "#e6e6e6",
    ("destroyed", ""): "#525252",
}
# marker, colour, size, legend label
MARKS: dict[str, tuple[str, str, float, str]] = {
    CRASH: ("X", "#d62728", 9, "exit: crash"),
    OOM: ("X", "#9467bd", 9, "exit: OOM killed"),
    STOP: ("s", "#737373", 6, "exit: requested stop"),
    CLEAN: ("o", "#737373", 6, "exit: clean (code 0)"),
    "start": ("^", "#006d2c", 7, "start"),
    "restart": ("^", "#fd8d3c", 7, "restart (after a crash)"),
    "launch": ("|", "#08519c", 12, "launch / image update"),
    "update": ("|", "#08519c", 12, "launch / image update"),
    "destroy": ("D", "#000000", 7, "destroyed"),
}
SITE_COLOURS = {"served": "#c7e9c0", "bad_gateway": "#fdae6b", "not_found": "#ef3b2c"}
SITE_LABELS = {"served": "site: served", "bad_gateway": "site: 502", "not_found": "site: 404"}
CHECK_COLOURS = ("#3f007d", "#08589e", "#7f2704", "#00441b", "#67000d")
ROLLBACK_LABELS = {
    "restored": "previous image restored",
    "deleted": "machines deleted, nothing left to serve",
}
PASS_COLOUR, FAIL_COLOUR = "#238b45", "#cb181d"

HEADER_H = 1.35  # data units above the first lane for look labels and the verdict
BAR_TOP, BAR_H = 0.1, 0.4
ROW_TOP, ROW_H, ROW_GAP = 0.62, 0.24, 0.04
LANE_GAP = 0.25
SITE_H = 0.45
# Beyond this many machines a figure stops being readable: the rest are counted, not drawn.
MAX_LANES = 12


def _lane_layout(lanes: Sequence[Lane]) -> tuple[list[float], float]:
    """The top y of each machine lane, and the top of the site lane."""
    tops = []
    y = 0.0
    for lane in lanes:
        tops.append(y)
        y += ROW_TOP + lane.rows * ROW_H + LANE_GAP
    return tops, y


def _check_colour(index: int) -> str:
    return CHECK_COLOURS[index % len(CHECK_COLOURS)]


def _draw_lane(ax: Axes, lane: Lane, top: float, colour: str, focus: Focus) -> None:
    bars = [(i.start_s, i.end_s - i.start_s) for i in lane.intervals]
    colours = [STATE_COLOURS.get((i.state, i.image), "#ffffff") for i in lane.intervals]
    ax.broken_barh(bars, (top + BAR_TOP, BAR_H), facecolors=colours,
                                edgecolor="none", gid=f"lane:{lane.machine}")
    for interval in lane.intervals:
        if interval.state == "destroyed":
            ax.add_patch(Rectangle((interval.start_s, top + BAR_TOP),
                                   interval.end_s - interval.start_s, BAR_H, fill=False,
                                   hatch="////", edgecolor="#bdbdbd", linewidth=0))
    centre = top + BAR_TOP + BAR_H / 2
    kinds = dict.fromkeys(m.kind for m in lane.marks)
    for kind in kinds:
        marker, mark_colour, size, _ = MARKS[kind]
        xs = [m.at_s for m in lane.marks if m.kind == kind]
        ax.plot(xs, [centre] * len(xs), linestyle="none", marker=marker, color=mark_colour,
                markersize=size, markeredgecolor="white" if marker in "X^sD" else mark_colour,
                markeredgewidth=0.6, zorder=4, gid=f"marks:{kind}:{lane.machine}")
    if lane.gave_up_at_s is not None:
        ax.plot([lane.gave_up_at_s], [centre], linestyle="none", marker="X", markersize=15,
                color="#000000", markeredgecolor="#d62728", markeredgewidth=1.5, zorder=5,
                gid=f"gave-up:{lane.machine}")
        ax.annotate("platform gave up restarting", (lane.gave_up_at_s, centre),
                    xytext=(8, -10), textcoords="offset points", fontsize=8, fontweight="bold",
                    va="top", gid=f"gave-up-label:{lane.machine}")
    for window in lane.windows:
        _draw_window(ax, window, top, colour, focus)


def _draw_window(ax: Axes, window: Window, top: float, colour: str, focus: Focus) -> None:
    """The list one look saw: a shaded span over the kept events, ghosts for the dropped."""
    y = top + ROW_TOP + window.row * ROW_H
    height = ROW_H - ROW_GAP
    centre = y + height / 2
    tag = f"{window.look}:{window.machine}"
    ax.add_patch(Rectangle((window.start_s, y), window.at_s - window.start_s, height,
                           facecolor=colour, alpha=0.16, edgecolor=colour, linewidth=0.8,
                           gid=f"window:{tag}"))
    crash = [e.is_crash for e in window.kept_events]
    ax.scatter(window.kept, [centre] * len(window.kept), s=14, zorder=4,
               c=[MARKS[CRASH][1] if c else "#525252" for c in crash],
               marker="o", linewidths=0, gid=f"window-events:{tag}")
    visible = [t for t in window.dropped if t >= focus.start_s]
    ax.scatter(visible, [centre] * len(visible), s=14, zorder=3, facecolors="none",
               edgecolors="#bdbdbd", linewidths=0.8, marker="o", gid=f"window-dropped:{tag}")
    crashes = window.crashes
    text = f" L{window.look} saw {len(window.kept)} events, {len(window.dropped)} dropped"
    if crashes:
        text += (f" · {len(crashes)} crash{'es' if len(crashes) != 1 else ''} since publish,"
                 f" newest {max(crashes):+.1f} s")
    ax.text(window.at_s, centre, text, fontsize=6.5, va="center", ha="left", color=colour,
            zorder=5, gid=f"window-label:{tag}", clip_on=True)


def _draw_site(ax: Axes, timeline: Timeline, top: float, focus: Focus) -> None:
    bars = [(i.start_s, i.end_s - i.start_s) for i in timeline.site]
    colours = [SITE_COLOURS.get(i.state, "#ffffff") for i in timeline.site]
    ax.broken_barh(bars, (top + 0.05, SITE_H), facecolors=colours, edgecolor="none", gid="site")
    was_up = False
    for interval in timeline.site:
        if interval.state != "not_found":
            was_up = True
            continue
        if not was_up:
            continue  # a first publish's wait is not an outage
        ax.axvspan(interval.start_s, interval.end_s, color=SITE_COLOURS["not_found"], alpha=0.07,
                   linewidth=0, gid="site-404")
        lo = max(interval.start_s, focus.start_s)
        hi = min(interval.end_s, focus.end_s)
        mid = float(focus.inverse((focus.forward(lo) + focus.forward(hi)) / 2))
        ax.text(mid, top + 0.05 + SITE_H / 2,
                f"site serves 404 ({interval.end_s - interval.start_s:.0f} s)",
                ha="center", va="center", fontsize=8, color="white", fontweight="bold",
                gid="site-404-label", clip_on=True)


def _draw_moments(ax: Axes, timeline: Timeline, colour: str) -> None:
    header = ax.get_xaxis_transform()
    ax.axvline(0.0, color="#000000", linewidth=1.2, gid="publish")
    ax.text(0.0, 0.995, "publish ", transform=header, ha="right", va="top", fontsize=8,
            fontweight="bold")
    for number, at_s in enumerate(timeline.looks, start=1):
        ax.axvline(at_s, color=colour, linewidth=0.9, linestyle=(0, (4, 2)), alpha=0.9,
                   gid=f"look:{number}", zorder=2)
        ax.text(at_s, -0.05, f"{timeline.check} L{number}", rotation=90,
                ha="right", va="bottom", fontsize=6.5, color=colour, gid=f"look-label:{number}",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5, "alpha": 0.8})
    verdict = timeline.verdict
    if verdict is not None and timeline.decided_at_s is not None:
        at_s = timeline.decided_at_s
        verdict_colour = PASS_COLOUR if verdict.ok else FAIL_COLOUR
        ax.axvline(at_s, color=verdict_colour, linewidth=2.2, gid="verdict", zorder=3)
        text = f" {timeline.check}: {'PASS' if verdict.ok else 'FAIL'} at {at_s:+.1f} s"
        text += f" → {timeline.outcome.replace('_', ' ').upper()}"
        if timeline.rollback:
            text += f"\n rollback: {ROLLBACK_LABELS.get(timeline.rollback, timeline.rollback)}"
        ax.text(at_s, 0.995, text, transform=header, ha="left", va="top", fontsize=8.5,
                color=verdict_colour, fontweight="bold", gid="verdict-label", zorder=6,
                bbox={"facecolor": "white", "edgecolor": verdict_colour, "pad": 2,
                      "alpha": 0.9})
    if timeline.late_failure_at_s is not None:
        at_s = timeline.late_failure_at_s
        ax.axvline(at_s, color=FAIL_COLOUR, linewidth=2, linestyle="--", gid="late-failure")
        ax.text(at_s, 0.995, f" reconciler fails the\n live release at {at_s:+.1f} s",
                transform=header, ha="left", va="top", fontsize=8, color=FAIL_COLOUR,
                fontweight="bold", gid="late-failure-label",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1, "alpha": 0.85})


def _draw(ax: Axes, timeline: Timeline, focus: Focus, colour: str, max_lanes: int) -> None:
    lanes = timeline.lanes[:max_lanes]
    tops, site_top = _lane_layout(lanes)
    for lane, top in zip(lanes, tops, strict=True):
        _draw_lane(ax, lane, top, colour, focus)
    if hidden := len(timeline.lanes) - len(lanes):
        ax.text(0.0, site_top - LANE_GAP / 2, f"… and {hidden} more machine(s), not drawn",
                transform=ax.get_yaxis_transform(), fontsize=8, va="center", ha="left",
                color="#525252", gid="lanes-hidden")
    _draw_site(ax, timeline, site_top, focus)
    _draw_moments(ax, timeline, colour)
    focus.apply(ax)
    ax.set_ylim(site_top + SITE_H + 0.15, -HEADER_H)
    ax.set_yticks([top + BAR_TOP + BAR_H / 2 for top in tops] + [site_top + 0.05 + SITE_H / 2],
                  [lane.machine for lane in lanes] + ["site"])
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel(focus.label())
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="x", color="#f0f0f0", linewidth=0.8)
    ax.set_axisbelow(True)


def legend_handles(colour: str = CHECK_COLOURS[0]) -> list[Any]:
    """Proxy artists explaining every colour and marker of a timeline."""
    handles: list[Any] = [
        Patch(color=STATE_COLOURS[("starting", "release")], label="booting (release)"),
        Patch(color=STATE_COLOURS[("started", "release")], label="started (release)"),
        Patch(color=STATE_COLOURS[("started", "previous")], label="started (previous image)"),
        Patch(color=STATE_COLOURS[("stopped", "release")], label="stopped"),
    ]
    seen = set()
    for marker, mark_colour, size, label in MARKS.values():
        if label in seen:
            continue
        seen.add(label)
        handles.append(Line2D([], [], linestyle="none", marker=marker, color=mark_colour,
                              markersize=size * 0.8, label=label))
    handles += [
        Line2D([], [], linestyle="none", marker="X", color="#000000", markeredgecolor="#d62728",
               markersize=10, label="platform gave up"),
        Line2D([], [], color=colour, linestyle=(0, (4, 2)), label="look (L1, L2, …)"),
        Patch(facecolor=colour, alpha=0.25, edgecolor=colour,
              label="event list that look saw (capped)"),
        Line2D([], [], linestyle="none", marker="o", color=MARKS[CRASH][1], markersize=4,
               label="kept in the list: crash"),
        Line2D([], [], linestyle="none", marker="o", color="#525252", markersize=4,
               label="kept in the list: other event"),
        Line2D([], [], linestyle="none", marker="o", markerfacecolor="none",
               markeredgecolor="#bdbdbd", markersize=4, label="dropped (fell off the list)"),
        Line2D([], [], color=PASS_COLOUR, linewidth=2.2, label="verdict: pass"),
        Line2D([], [], color=FAIL_COLOUR, linewidth=2.2, label="verdict: fail"),
        Line2D([], [], color=FAIL_COLOUR, linewidth=2, linestyle="--",
               label="reconciler late failure"),
    ]
    handles += [Patch(color=SITE_COLOURS[k], label=v) for k, v in SITE_LABELS.items()]
    return handles


def _panel_height(timeline: Timeline, max_lanes: int) -> float:
    _, site_top = _lane_layout(timeline.lanes[:max_lanes])
    return 0.55 * (HEADER_H + site_top + SITE_H) + 0.9


def _new_figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def crash_timeline(
    result: RunResult,
    ax: Axes | None = None,
    *,
    scenario: str | None = None,
    focus: Focus | None = None,
    before_s: float = BEFORE_PUBLISH_S,
    colour: str = CHECK_COLOURS[0],
    legend: bool = True,
    max_lanes: int = MAX_LANES,
) -> Axes:
    """Draw one traced run (``run(..., trace=True)``) on ``ax`` (a new figure if None).

    The x axis runs from ``before_s`` before the publish (or ``focus``, to share one);
    one lane per machine, up to ``max_lanes`` (a note says how many more there are).
    """
    timeline = from_result(result)
    if ax is None:
        extra = 1.6 if legend else 0.0
        ax = _new_figure(13, _panel_height(timeline, max_lanes) + extra).add_subplot()
    focus = focus or Focus.around([timeline], before_s)
    _draw(ax, timeline, focus, colour, max_lanes)
    where = f"{scenario} · " if scenario else ""
    ax.set_title(f"{where}seed {timeline.seed} · check: {timeline.check}", loc="left",
                 fontsize=10, fontweight="bold")
    if legend:
        ax.legend(handles=legend_handles(colour), loc="upper center", ncol=6, fontsize=7.5,
                  bbox_to_anchor=(0.5, -0.2), frameon=False)
    return ax


def compare_timelines(
    scenario: Any,
    results: Sequence[RunResult],
    before_s: float = BEFORE_PUBLISH_S,
    max_lanes: int = MAX_LANES,
) -> Figure:
    """One panel per check's traced run of the same world, on a shared time axis.

    ``scenario`` is a ``Scenario`` or its name, for the title; the axis starts ``before_s``
    before the publish.
    """
    if not results:
        raise ValueError("compare_timelines needs at least one traced run")
    name = getattr(scenario, "name", str(scenario))
    timelines = [from_result(r) for r in results]
    focus = Focus.around(timelines, before_s)
    heights = [_panel_height(t, max_lanes) for t in timelines]
    figure = _new_figure(13, sum(heights) + 2.3)
    axes = figure.subplots(len(results), 1, sharex=True, squeeze=False,
                           height_ratios=heights)[:, 0]
    for index, (ax, result) in enumerate(zip(axes, results, strict=True)):
        crash_timeline(result, ax, focus=focus, colour=_check_colour(index), legend=False,
                       max_lanes=max_lanes)
        verdict = result.verdict
        said = "no verdict" if verdict is None else ("PASS" if verdict.ok else "FAIL")
        ax.set_title(f"check: {result.check} — {said}, outcome {result.outcome}", loc="left",
                     fontsize=10, fontweight="bold")
        if verdict is not None:
            ax.set_title(textwrap.shorten(verdict.reason, 150, placeholder=" …"), loc="right",
                         fontsize=8, style="italic", color="#525252")
        if index < len(results) - 1:
            ax.set_xlabel("")
    seeds = sorted({r.seed for r in results})
    checks = ", ".join(r.check for r in results)
    figure.suptitle(f"{name} · seed {', '.join(map(str, seeds))} · checks: {checks}",
                    fontsize=12, fontweight="bold", x=0.01, ha="left")
    figure.legend(handles=legend_handles(_check_colour(0)), loc="outside lower center", ncol=6,
                  fontsize=7.5, frameon=False)
    return figure


def save_timeline(path: str | Path, scenario: Any, results: Sequence[RunResult]) -> Path:
    """Write ``compare_timelines`` to ``path`` (format from its suffix); BadInput if it can't."""
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
        figure.savefig(target, dpi=110)
    except OSError as error:
        raise BadInput(f"--timeline {path}: cannot write ({error.strerror or error})") from None
    return target
