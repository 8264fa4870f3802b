"""A traced run laid out for a timeline: lanes, marks, look windows; seconds after the publish.

Pure data derived from a ``RunResult`` with a trace; ``sim.show.plot`` only draws it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from platform_testbed.checks import Event, Verdict
from platform_testbed.checks.model import to_ms, to_s
from platform_testbed.sim.publish.world import RecordedLook, RunResult, Trace

# Exit causes, in the order a legend lists them.
CRASH, OOM, STOP, CLEAN = "crash", "oom", "requested stop", "clean exit"


@dataclass(frozen=True, slots=True)
class Interval:
    """A machine state held from ``start_s`` to ``end_s``, and which image it ran."""

    start_s: float
    end_s: float
    state: str
    image: str  # "previous", "release" or "" (no image)


@dataclass(frozen=True, slots=True)
class Mark:
    """One event on a lane: ``kind`` is start, restart, an exit cause, launch, update or destroy."""

    at_s: float
    kind: str
    event: Event


@dataclass(frozen=True, slots=True)
class Window:
    """The capped event list one look saw on one machine.

    ``kept`` are the times of the events still in the list (the snapshot), ``dropped`` the
    times of the events that had fallen off by then.
    """

    look: int
    machine: str
    at_s: float
    kept: tuple[float, ...]
    kept_events: tuple[Event, ...]
    dropped: tuple[float, ...]

    @property
    def crashes(self) -> tuple[float, ...]:
        """Times of the kept crashes since the publish began (what layer 3 compares)."""
        return tuple(t for t, e in zip(self.kept, self.kept_events, strict=True)
                     if e.is_crash and t >= 0)

    @property
    def start_s(self) -> float:
        """The oldest event still in the list (the look itself when the list is empty)."""
        return min(self.kept, default=self.at_s)


@dataclass(frozen=True, slots=True)
class Lane:
    """Everything drawn on one machine's lane."""

    machine: str
    intervals: tuple[Interval, ...]
    marks: tuple[Mark, ...]
    windows: tuple[Window, ...]
    gave_up_at_s: float | None


@dataclass(frozen=True, slots=True)
class Timeline:
    """One check's run, every time in seconds after the publish began."""

    check: str
    seed: int
    lanes: tuple[Lane, ...]
    looks: tuple[float, ...]
    verdict: Verdict | None
    outcome: str
    decided_at_s: float | None
    rollback: str | None
    late_failure_at_s: float | None
    site: tuple[Interval, ...]
    start_s: float
    end_s: float

    @property
    def last_moment_s(self) -> float:
        """The last moment the check or the platform did something a reader must see."""
        moments = [*self.looks, 0.0]
        moments += [t for t in (self.decided_at_s,) if t is not None]
        moments += [lane.gave_up_at_s for lane in self.lanes if lane.gave_up_at_s is not None]
        return max(moments)


def exit_cause(event: Event) -> str:
    """Why a machine exited: crash, OOM, requested stop or a clean exit."""
    if event.requested_stop:
        return STOP
    if event.oom_killed:
        return OOM
    return CRASH if event.is_crash else CLEAN


def _marks(trace_events: Sequence[Event], publish_ms: int) -> tuple[tuple[Mark, ...], float | None]:
    marks = []
    gave_up = None
    restarting = False
    for event in trace_events:
        at_s = to_s(event.timestamp - publish_ms)
        if event.type == "exit":
            kind = exit_cause(event)
            restarting = event.is_crash and event.restarting
            if event.is_crash and not event.restarting:
                gave_up = at_s
        elif event.type == "start":
            kind = "restart" if restarting else "start"
            restarting = False
        else:
            kind = event.type
            restarting = False
        marks.append(Mark(at_s, kind, event))
    return tuple(marks), gave_up


def _image_at(t_s: float, rollback: str | None, decided_at_s: float | None) -> str:
    if t_s < 0:
        return "previous"
    if rollback == "restored" and decided_at_s is not None and t_s >= decided_at_s:
        return "previous"
    return "release"


def _intervals(
    changes: Sequence[tuple[float, str]], end_s: float, rollback: str | None,
    decided_at_s: float | None,
) -> tuple[Interval, ...]:
    out = []
    for (start, state), (end, _) in pairwise([*changes, (end_s, "")]):
        if end > start:
            image = "" if state in ("created", "destroyed") else _image_at(
                start, rollback, decided_at_s
            )
            out.append(Interval(start, end, state, image))
    return tuple(out)


def _windows(
    machine_index: int,
    machine_id: str,
    trace_events: Sequence[Event],
    looks: Sequence[RecordedLook],
    *,
    publish_ms: int,
) -> tuple[Window, ...]:
    """Each look's window on one machine."""
    windows = []
    for number, recorded in enumerate(looks, start=1):
        snapshot = recorded.look.machines[machine_index]
        dropped_count = recorded.dropped[machine_index]
        # The log appends in trace order: the first `dropped` events fell off, the next ones
        # are the list the API returned (oldest first).
        kept_events = tuple(reversed(snapshot.events))
        at_s = to_s(recorded.look.at_ms - publish_ms)
        kept = tuple(to_s(e.timestamp - publish_ms) for e in kept_events)
        dropped = tuple(to_s(e.timestamp - publish_ms) for e in trace_events[:dropped_count])
        windows.append(Window(number, machine_id, at_s, kept, kept_events, dropped))
    return tuple(windows)


def _publish_ms(trace: Trace) -> int:
    return trace.epoch_ms + to_ms(trace.publish_at_s)


def from_result(result: RunResult) -> Timeline:
    """Lay out a traced run (``run(..., trace=True)``) for plotting."""
    trace = result.trace
    if trace is None:
        raise ValueError("the run has no trace: call sim.publish.world.run(..., trace=True)")
    publish_ms = _publish_ms(trace)
    start_s = -trace.publish_at_s
    end_s = trace.horizon_s - trace.publish_at_s
    lanes = []
    for index, machine in enumerate(trace.machines):
        changes = [(t - trace.publish_at_s, state) for t, state in machine.states]
        marks, gave_up = _marks(machine.events, publish_ms)
        windows = _windows(index, machine.id, machine.events, result.looks, publish_ms=publish_ms)
        intervals = _intervals(changes, end_s, result.rollback, result.decided_at_s)
        lanes.append(Lane(machine.id, intervals, marks, windows, gave_up))
    site_bounds = [(t - trace.publish_at_s, outcome) for t, outcome in trace.site]
    site = tuple(
        Interval(a, b, outcome, "")
        for (a, outcome), (b, _) in pairwise([*site_bounds, (end_s, "")])
        if b > a
    )
    return Timeline(
        check=result.check,
        seed=result.seed,
        lanes=tuple(lanes),
        looks=tuple(to_s(r.look.at_ms - publish_ms) for r in result.looks),
        verdict=result.verdict,
        outcome=result.outcome,
        decided_at_s=result.decided_at_s,
        rollback=result.rollback,
        late_failure_at_s=result.late_failure_at_s,
        site=site,
        start_s=start_s,
        end_s=end_s,
    )


def world_run(timelines: Sequence[Timeline]) -> tuple[int, str]:
    """Which run's machines a shared figure draws, and why, in a few words.

    Every check runs in the same world, identical until a check decides; after that a
    rollback changes it. The machine lanes show the first run whose check passed (nothing
    rolled back: the release as it really went), else the run whose check decided last
    (undecided counts as last), so the crash loop is shown for as long as any check watched.
    """
    for index, timeline in enumerate(timelines):
        if timeline.verdict is not None and timeline.verdict.ok and timeline.rollback is None:
            return index, "it passed: nothing was rolled back"
    ends = [t.end_s if t.decided_at_s is None else t.decided_at_s for t in timelines]
    index = ends.index(max(ends))
    last = timelines[index]
    if last.decided_at_s is None:
        return index, "it never decided"
    return index, f"it decided last, at {last.decided_at_s:+.1f} s"
