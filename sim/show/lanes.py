"""One Axes, one time axis, horizontal lanes: the machines of the world, then one per check.

Every check runs in the same world, so the machines are drawn once (``world_run`` says
which run); each check's lane holds only what is that check's: its looks as a rug of
ticks, the event list each look saw (when there are few enough looks to read), its
verdict with the word and the time, and what the site served under it. Any number of
checks stays readable because no check's marks ever share a band with another's.

Every artist a test or a reader may look for carries a ``gid``: ``lane:<machine>``,
``check-lane:<check>``, ``looks:<check>``, ``verdict:<check>``, ``window:<check>:<n>:<machine>``, …
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from platform_testbed.sim.show.focus import Focus
from platform_testbed.sim.show.timeline import (
    CLEAN,
    CRASH,
    OOM,
    STOP,
    Interval,
    Lane,
    Timeline,
    Window,
    world_run,
)

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
# The built-in checks keep their colour in every figure (the two-check and six-check
# timelines agree); other checks take the rest in order. None is green or red (those mean
# pass and fail) nor orange (502s, restarts).
BUILTIN_COLOURS = {
    "count": "#6a3d9a",
    "timestamp": "#1f78b4",
    "flyctl-smoke": "#8c510a",
    "min-healthy-time": "#01665e",
    "restart-counter": "#c51b7d",
    "circuit-breaker": "#404040",
}
OTHER_COLOURS = ("#3f007d", "#08589e", "#7f2704", "#00441b", "#67000d", "#6b6ecf")
ROLLBACK_LABELS = {
    "restored": "previous image restored",
    "deleted": "machines deleted, nothing left to serve",
    "none": "none, the machines are left as they are",
}
PASS_COLOUR, FAIL_COLOUR, NONE_COLOUR = "#238b45", "#cb181d", "#737373"
KEPT_OTHER = "#525252"  # an event a look's list kept that is not a crash

# Heights in data units (one unit is drawn INCH_PER_UNIT inches tall by plot.py).
HEADER_H = 0.85  # above the first lane: the publish label, the world note
MACHINE_H, BAR_TOP, BAR_H = 0.6, 0.1, 0.4
CHECK_PAD = 0.12  # above each check lane's look row and below its site strip
LOOK_H = 0.7
ROW_H, ROW_GAP = 0.26, 0.04
SITE_TOP, SITE_H = 0.04, 0.26
#: Past this many rows (looks × machines) a check's event lists are not drawn, only its looks.
MAX_WINDOW_ROWS = 6
#: Look numbers are written over the ticks at least this share of the axis apart.
LABEL_GAP = 0.018
#: The drawn axis is about this wide (the figure's width less the lane labels), and a
#: character of bold text about this share of its font size: enough to keep labels inside.
AXIS_IN, CHAR_EM = 11.4, 0.6


def check_colours(names: Sequence[str]) -> dict[str, str]:
    """One colour per check: fixed for the built-ins, the others in order."""
    others = iter(c for c in OTHER_COLOURS if c not in BUILTIN_COLOURS.values())
    out = {}
    for index, name in enumerate(names):
        out[name] = BUILTIN_COLOURS.get(name) or next(
            others, OTHER_COLOURS[index % len(OTHER_COLOURS)]
        )
    return out


@dataclass(frozen=True, slots=True)
class CheckBand:
    """Where one check's lane sits: its top, look row, event-list rows, site strip, bottom."""

    top: float
    looks_y: float
    windows: bool
    rows_top: float
    site_top: float
    bottom: float


def window_rows(timeline: Timeline, machines: int) -> int:
    """Rows of event lists a check's lane holds: one per look and machine, or 0 if too many."""
    rows = len(timeline.looks) * machines
    return rows if 0 < rows <= MAX_WINDOW_ROWS else 0


def layout(timelines: Sequence[Timeline], machines: int) -> tuple[float, list[CheckBand]]:
    """The top of the first check lane, and each check's band, top to bottom."""
    y = machines * MACHINE_H + 0.25
    first = y
    bands = []
    for timeline in timelines:
        rows = window_rows(timeline, machines)
        looks_y = y + CHECK_PAD + LOOK_H / 2
        rows_top = y + CHECK_PAD + LOOK_H
        site_top = rows_top + rows * ROW_H + SITE_TOP
        bottom = site_top + SITE_H + CHECK_PAD
        bands.append(CheckBand(y, looks_y, rows > 0, rows_top, site_top, bottom))
        y = bottom
    return first, bands


def height(timelines: Sequence[Timeline], machines: int) -> float:
    """The data height of the whole drawing, header included."""
    first, bands = layout(timelines, machines)
    return HEADER_H + (bands[-1].bottom if bands else first)


def _share(focus: Focus, x: float) -> float:
    """Where ``x`` sits along the drawn axis, 0 at the left edge and 1 at the right."""
    left, right = focus.forward(focus.start_s), focus.forward(focus.end_s)
    return float((focus.forward(x) - left) / (right - left))


def _text_beside(ax: Axes, focus: Focus, x: float, y: float, text: str, *, fontsize: float,
                 **style: object) -> None:
    """Text right of ``x`` (after it, where this lane is empty), or left if it would not fit."""
    longest = max(len(line) for line in text.splitlines())
    width = longest * fontsize * CHAR_EM / 72 / AXIS_IN
    left = _share(focus, x) + width > 0.99
    # Offset in points, so a marker at x stays visible beside the text's box.
    ax.annotate(text, (x, y), xytext=(-7 if left else 7, 0), textcoords="offset points",
                ha="right" if left else "left", va="center", zorder=7, fontsize=fontsize,
                **style)  # type: ignore[arg-type]


def draw_machine(ax: Axes, lane: Lane, top: float) -> float:
    """A machine's state bar and its events; returns the bar's centre."""
    bars = [(i.start_s, i.end_s - i.start_s) for i in lane.intervals]
    colours = [STATE_COLOURS.get((i.state, i.image), "#ffffff") for i in lane.intervals]
    ax.broken_barh(bars, (top + BAR_TOP, BAR_H), facecolors=colours, edgecolor="none",
                   gid=f"lane:{lane.machine}")
    for interval in lane.intervals:
        if interval.state == "destroyed":
            ax.add_patch(Rectangle((interval.start_s, top + BAR_TOP),
                                   interval.end_s - interval.start_s, BAR_H, fill=False,
                                   hatch="////", edgecolor="#bdbdbd", linewidth=0))
    centre = top + BAR_TOP + BAR_H / 2
    for kind in dict.fromkeys(m.kind for m in lane.marks):
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
                    xytext=(10, 0), textcoords="offset points", fontsize=8, fontweight="bold",
                    va="center", gid=f"gave-up-label:{lane.machine}", zorder=6,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5, "alpha": 0.8})
    return centre


def _draw_window(ax: Axes, window: Window, y: float, *, colour: str, focus: Focus, tag: str,
                 name_machine: bool) -> None:
    """The list one look saw: a shaded span over the kept events, ghosts for the dropped."""
    height = ROW_H - ROW_GAP
    centre = y + height / 2
    ax.add_patch(Rectangle((window.start_s, y), window.at_s - window.start_s, height,
                           facecolor=colour, alpha=0.16, edgecolor=colour, linewidth=0.8,
                           gid=f"window:{tag}"))
    crash = [e.is_crash for e in window.kept_events]
    ax.scatter(window.kept, [centre] * len(window.kept), s=14, zorder=4,
               c=[MARKS[CRASH][1] if c else KEPT_OTHER for c in crash],
               marker="o", linewidths=0, gid=f"window-events:{tag}")
    visible = [t for t in window.dropped if t >= focus.start_s]
    ax.scatter(visible, [centre] * len(visible), s=14, zorder=3, facecolors="none",
               edgecolors="#bdbdbd", linewidths=0.8, marker="o", gid=f"window-dropped:{tag}")
    crashes = window.crashes
    who = f"{window.machine} " if name_machine else ""
    text = f"{who}L{window.look} saw {len(window.kept)} events, {len(window.dropped)} dropped"
    if crashes:
        text += (f" · {len(crashes)} crash{'es' if len(crashes) != 1 else ''} since publish,"
                 f" newest {max(crashes):+.1f} s")
    _text_beside(ax, focus, window.at_s, centre, text, fontsize=6.5, color=colour,
                 gid=f"window-label:{tag}", clip_on=True)


def _draw_site(ax: Axes, timeline: Timeline, band: CheckBand, focus: Focus) -> None:
    """What the site served while this check's run went on, and its 404 outage."""
    tag = timeline.check
    top = band.site_top
    bars = [(i.start_s, i.end_s - i.start_s) for i in timeline.site]
    colours = [SITE_COLOURS.get(i.state, "#ffffff") for i in timeline.site]
    ax.broken_barh(bars, (top, SITE_H), facecolors=colours, edgecolor="none", gid=f"site:{tag}")
    was_up = False
    for interval in timeline.site:
        if interval.state != "not_found":
            was_up = True
            continue
        if not was_up:
            continue  # a first publish's wait is not an outage
        _outage(ax, interval, band, focus, tag)


def _outage(ax: Axes, interval: Interval, band: CheckBand, focus: Focus, tag: str) -> None:
    ax.add_patch(Rectangle((interval.start_s, band.top), interval.end_s - interval.start_s,
                           band.bottom - band.top, facecolor=SITE_COLOURS["not_found"],
                           alpha=0.07, linewidth=0, gid=f"site-404:{tag}"))
    lo = max(interval.start_s, focus.start_s)
    hi = min(interval.end_s, focus.end_s)
    mid = float(focus.inverse((focus.forward(lo) + focus.forward(hi)) / 2))
    ax.text(mid, band.site_top + SITE_H / 2,
            f"site serves 404 ({interval.end_s - interval.start_s:.0f} s)", ha="center",
            va="center", fontsize=7.5, color="white", fontweight="bold",
            gid=f"site-404-label:{tag}", clip_on=True)


def _labelled_looks(looks: Sequence[float], focus: Focus) -> list[int]:
    """Which looks get their number written: the first, then each far enough from the last."""
    chosen: list[int] = []
    for index, at_s in enumerate(looks):
        if not chosen or _share(focus, at_s) - _share(focus, looks[chosen[-1]]) >= LABEL_GAP:
            chosen.append(index)
    return chosen


def verdict_text(timeline: Timeline) -> str:
    """The verdict in words: PASS or FAIL, when, the outcome, and the rollback (a second line)."""
    if timeline.verdict is None or timeline.decided_at_s is None:
        return f"no verdict → {timeline.outcome}"
    word = "PASS" if timeline.verdict.ok else "FAIL"
    text = f"{word} at {timeline.decided_at_s:+.1f} s → {timeline.outcome.replace('_', ' ')}"
    if timeline.rollback:
        text += f"\nrollback: {ROLLBACK_LABELS.get(timeline.rollback, timeline.rollback)}"
    return text


def draw_check(ax: Axes, timeline: Timeline, band: CheckBand, *, colour: str, focus: Focus,
               machines: Sequence[Lane]) -> None:
    """One check's lane: looks as ticks, event lists, the verdict, the site under it."""
    tag = timeline.check
    ax.add_patch(Rectangle((focus.start_s, band.top), focus.end_s - focus.start_s,
                           band.bottom - band.top, facecolor=colour, alpha=0.045, linewidth=0,
                           zorder=0, gid=f"check-lane:{tag}"))
    ax.axhline(band.top, color="#d9d9d9", linewidth=0.8, zorder=1)
    looks = list(timeline.looks)
    ax.plot(looks, [band.looks_y] * len(looks), linestyle="none", marker="|",
            markersize=13, markeredgewidth=1.3, color=colour, zorder=4, gid=f"looks:{tag}")
    for index in _labelled_looks(looks, focus):
        ax.text(looks[index], band.looks_y - LOOK_H * 0.3, f"L{index + 1}", ha="center",
                va="bottom", fontsize=6, color=colour, gid=f"look-label:{tag}:{index + 1}")
    if band.windows:
        row = 0
        # The check's own run: its looks saw its world (the same as the drawn one until it
        # decided).
        for lane in timeline.lanes[:len(machines)]:
            for window in lane.windows:
                y = band.rows_top + row * ROW_H
                _draw_window(ax, window, y, colour=colour, focus=focus,
                             tag=f"{tag}:{window.look}:{lane.machine}",
                             name_machine=len(machines) > 1)
                row += 1
    _draw_site(ax, timeline, band, focus)
    _draw_verdict(ax, timeline, band, focus)


def _draw_verdict(ax: Axes, timeline: Timeline, band: CheckBand, focus: Focus) -> None:
    tag = timeline.check
    verdict, at_s = timeline.verdict, timeline.decided_at_s
    if verdict is None or at_s is None:
        where = timeline.looks[-1] if timeline.looks else 0.0
        _text_beside(ax, focus, where, band.looks_y, verdict_text(timeline), fontsize=8,
                     color=NONE_COLOUR, fontweight="bold", gid=f"verdict-label:{tag}")
        return
    colour = PASS_COLOUR if verdict.ok else FAIL_COLOUR
    ax.vlines(at_s, band.top, band.bottom, color=colour, linewidth=1.6, zorder=3,
              gid=f"verdict-line:{tag}")
    ax.plot([at_s], [band.looks_y], linestyle="none", marker="o", markersize=9, color=colour,
            markeredgecolor="white", markeredgewidth=1.0, zorder=6, gid=f"verdict:{tag}")
    _text_beside(ax, focus, at_s, band.looks_y, verdict_text(timeline), fontsize=8.5,
                 color=colour, fontweight="bold", gid=f"verdict-label:{tag}",
                 bbox={"facecolor": "white", "edgecolor": colour, "pad": 1.5, "alpha": 0.9})
    if timeline.late_failure_at_s is not None:
        late = timeline.late_failure_at_s
        ax.vlines(late, band.top, band.bottom, color=FAIL_COLOUR, linewidth=1.8,
                  linestyle="--", zorder=3, gid=f"late-failure:{tag}")
        _text_beside(ax, focus, late, band.looks_y,
                     f"reconciler fails the\nlive release at {late:+.1f} s", fontsize=7.5,
                     color=FAIL_COLOUR, fontweight="bold", gid=f"late-failure-label:{tag}",
                     bbox={"facecolor": "white", "edgecolor": "none", "pad": 1, "alpha": 0.85})


def draw(ax: Axes, timelines: Sequence[Timeline], focus: Focus, colours: Sequence[str],
         max_lanes: int) -> None:
    """The machines of the world, then one lane per check, on ``ax``."""
    world, why = world_run(timelines)
    lanes = timelines[world].lanes[:max_lanes]
    centres = [draw_machine(ax, lane, i * MACHINE_H) for i, lane in enumerate(lanes)]
    first, bands = layout(timelines, len(lanes))
    header = ax.get_yaxis_transform()
    if hidden := len(timelines[world].lanes) - len(lanes):
        ax.text(0.0, first - 0.12, f"… and {hidden} more machine(s), not drawn", transform=header,
                fontsize=8, va="center", ha="left", color="#525252", gid="lanes-hidden")
    under = timelines[world].check
    note = (f"machines: the world as it ran under {under}; below, the check's lane: its looks,"
            " its verdict and what the site served" if len(timelines) == 1 else
            f"machines: the world as it ran under {under} ({why}); below, one lane per check:"
            " its looks, its verdict and what the site served under it")
    ax.text(0.0, -HEADER_H + 0.08, note,
            transform=header, fontsize=7.5, style="italic", color="#525252", va="top",
            ha="left", gid="world-note")
    for timeline, band, colour in zip(timelines, bands, colours, strict=True):
        draw_check(ax, timeline, band, colour=colour, focus=focus, machines=lanes)
    ax.axvline(0.0, color="#000000", linewidth=1.2, gid="publish", zorder=2)
    ax.text(0.0, -0.05, "publish ", ha="right", va="bottom", fontsize=8, fontweight="bold")
    focus.apply(ax)
    bottom = bands[-1].bottom if bands else first
    ax.set_ylim(bottom, -HEADER_H)
    _label_lanes(ax, timelines, lanes=lanes, centres=centres, bands=bands, colours=colours)
    ax.set_xlabel(focus.label())
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="x", color="#f0f0f0", linewidth=0.8)
    ax.set_axisbelow(True)


def _label_lanes(ax: Axes, timelines: Sequence[Timeline], *, lanes: Sequence[Lane],
                 centres: Sequence[float], bands: Sequence[CheckBand],
                 colours: Sequence[str]) -> None:
    """Y labels: each machine, each check (with its look count) and its site strip."""
    ticks = list(centres)
    labels = [lane.machine for lane in lanes]
    styles: list[tuple[str, float, str]] = [("#000000", 9, "normal")] * len(lanes)
    for timeline, band, colour in zip(timelines, bands, colours, strict=True):
        count = len(timeline.looks)
        ticks += [band.looks_y, band.site_top + SITE_H / 2]
        labels += [f"{timeline.check}\n{count} look{'s' if count != 1 else ''}", "site"]
        styles += [(colour, 9, "bold"), ("#737373", 7, "normal")]
    ax.set_yticks(ticks, labels)
    for label, (colour, size, weight) in zip(ax.get_yticklabels(), styles, strict=True):
        label.set_color(colour)
        label.set_fontsize(size)
        label.set_fontweight(weight)
    ax.tick_params(axis="y", length=0)
