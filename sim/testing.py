"""Helpers for tests and notebooks: event histories and looks made by hand, and a pure driver.

Like ``structlog.testing``: shipped in the package so users testing their own checks get
the same tools the project's tests use.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from checks import Check, Event, Look, MachineSnapshot, Verdict, Wait

STATE_AFTER = {"launch": "starting", "update": "starting", "start": "started", "destroy": "destroyed"}


def crash_loop(
    first_start_ms: int, crash_after_ms: int, restart_ms: int, cycles: int, exit_code: int = 1
) -> list[Event]:
    """Oldest-first events of a crash loop: each cycle a start, then a crash, then a restart."""
    events: list[Event] = []
    t = first_start_ms
    for n in range(cycles):
        events.append(Event("start", "started", t))
        t += crash_after_ms
        events.append(
            Event("exit", "stopped", t, exit_code=exit_code, restarting=True, restart_count=n)
        )
        t += restart_ms
    return events


def state_after(events: Sequence[Event]) -> str:
    """The machine state that the newest event implies (oldest-first input)."""
    if not events:
        return "created"
    newest = events[-1]
    if newest.type == "exit":
        return "stopped"
    return STATE_AFTER.get(newest.type, "started")


def snapshot_at(
    events: Sequence[Event], at_ms: int, cap: int, machine_id: str = "m1", image: str = "app:new"
) -> MachineSnapshot:
    """What the API shows at ``at_ms``: events up to then, the newest ``cap`` of them, newest first."""
    seen = [e for e in events if e.timestamp <= at_ms]
    return MachineSnapshot(
        id=machine_id,
        state=state_after(seen),
        image=image,
        events=tuple(reversed(seen[-cap:])),
        at_ms=at_ms,
    )


def look_at(events: Sequence[Event], at_ms: int, cap: int) -> Look:
    """A one-machine look at ``at_ms``."""
    return Look(at_ms, (snapshot_at(events, at_ms, cap),))


def drive(
    check: Check,
    publish_started_ms: int,
    observe: Callable[[int], Look],
    max_looks: int = 1000,
    until_ms: int | None = None,
) -> tuple[Verdict | None, list[Look]]:
    """Run a check the way any driver does, with ``observe(at_ms)`` taking each look.

    Without ``until_ms`` a check must decide within ``max_looks``; with it, a look due
    after ``until_ms`` ends the drive with no verdict (the horizon).
    """
    looks: list[Look] = []
    now = publish_started_ms
    while len(looks) < max_looks:
        step = check.next(publish_started_ms, looks)
        if isinstance(step, Verdict):
            return step, looks
        if not isinstance(step, Wait) or not step.seconds >= 0:
            raise AssertionError(f"{check.name} returned {step!r}")
        now += round(step.seconds * 1000)
        if until_ms is not None and now > until_ms:
            return None, looks
        looks.append(observe(now))
    if until_ms is not None:
        return None, looks
    raise AssertionError(f"{check.name} took {max_looks} looks without a verdict")


# --- whole machine histories laid out in time (pure; no simpy) --------------------------
#
# A ``World`` computes each machine's whole event history up front (starts, crashes,
# restarts, the platform giving up) and answers a look at any time with the capped,
# newest-first list, the state and the restart counter the platform would show.

PUBLISH_MS = 100_000


@dataclass(frozen=True)
class App:
    """How one machine runs the new release: boot, when it crashes, how the platform restarts."""

    boot_ms: int = 400
    #: Crash this long after every start; None: the app stays up.
    crash_after_ms: int | None = 2_500
    restart_delay_ms: int = 300
    #: Fly's on-failure ``max_retries``; None: restart forever (policy ``always``).
    max_retries: int | None = 10
    exit_code: int = 1
    #: True: the publish updates a machine that ran the previous release (no new launch).
    updated: bool = True
    cap: int = 5
    restart_counter: bool = False


@dataclass(frozen=True)
class Step:
    """One entry of a machine's full history: an event, the state it leaves, the counter."""

    event: Event
    state: str
    restarts: int


@dataclass(frozen=True)
class MachineHistory:
    """One machine's whole history from before the publish to the horizon."""

    id: str
    app: App
    steps: tuple[Step, ...]
    #: Times at which the machine leaves ``stopped`` for ``starting`` with no event (reboot).
    reboots: tuple[int, ...] = ()
    times: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "times", tuple(s.event.timestamp for s in self.steps))

    def snapshot(self, at_ms: int) -> MachineSnapshot:
        """What an API read at ``at_ms`` returns (events at exactly ``at_ms`` included)."""
        seen = bisect.bisect_right(self.times, at_ms)
        last = self.steps[seen - 1] if seen else None
        state = last.state if last else "created"
        reboot = bisect.bisect_right(self.reboots, at_ms)
        if last and reboot and self.reboots[reboot - 1] > last.event.timestamp:
            state = "starting"
        visible = self.steps[max(0, seen - self.app.cap) : seen]
        return MachineSnapshot(
            id=self.id,
            state=state,
            image="registry.fly.io/app:release",
            events=tuple(s.event for s in reversed(visible)),
            at_ms=at_ms,
            restart_counter=(last.restarts if last else 0) if self.app.restart_counter else None,
        )

    @property
    def crashes_after_publish(self) -> int:
        """Ground truth: how many times the new release crashed (uncapped)."""
        return sum(1 for s in self.steps if s.event.is_crash and s.event.timestamp >= PUBLISH_MS)


def history(machine_id: str, app: App, horizon_ms: int) -> MachineHistory:
    """Lay out a machine's events from before the publish up to ``horizon_ms``."""
    steps: list[Step] = []
    reboots: list[int] = []
    t = PUBLISH_MS
    if app.updated:
        steps.append(Step(Event("launch", "created", 1_000, "user"), "starting", 0))
        steps.append(Step(Event("start", "started", 1_000 + app.boot_ms), "started", 0))
        steps.append(
            Step(Event("exit", "stopped", t, exit_code=0, requested_stop=True), "stopped", 0)
        )
        steps.append(Step(Event("update", "replaced", t, "user"), "starting", 0))
    else:
        steps.append(Step(Event("launch", "created", t, "user"), "starting", 0))
    restarts = 0
    while True:
        t += app.boot_ms
        if t > horizon_ms:
            break
        steps.append(Step(Event("start", "started", t), "started", restarts))
        if app.crash_after_ms is None:
            break
        t += app.crash_after_ms
        if t > horizon_ms:
            break
        restarting = app.max_retries is None or restarts < app.max_retries
        exit_event = Event(
            "exit",
            "stopped",
            t,
            exit_code=app.exit_code,
            restarting=restarting,
            restart_count=restarts,
        )
        if not restarting:
            steps.append(Step(exit_event, "stopped", restarts))
            break
        restarts += 1
        steps.append(Step(exit_event, "stopped", restarts))
        t += app.restart_delay_ms
        reboots.append(t)
    return MachineHistory(machine_id, app, tuple(steps), tuple(reboots))


@dataclass(frozen=True)
class World:
    """Machines laid out to a horizon; looks at any time after the publish."""

    machines: tuple[MachineHistory, ...]
    horizon_ms: int

    def __repr__(self) -> str:
        apps = ", ".join(repr(m.app) for m in self.machines)
        return f"world({apps}, horizon_s={(self.horizon_ms - PUBLISH_MS) / 1000:g})"

    def look(self, at_ms: int) -> Look:
        """Every machine read at ``at_ms``."""
        return Look(at_ms, tuple(m.snapshot(at_ms) for m in self.machines))

    @property
    def bad(self) -> bool:
        """Ground truth: some machine crashed after the publish began."""
        return any(m.crashes_after_publish for m in self.machines)


def world(*apps: App, horizon_s: float = 600.0) -> World:
    """A world of one machine per app, laid out to ``horizon_s`` after the publish."""
    horizon_ms = PUBLISH_MS + round(horizon_s * 1000)
    return World(
        tuple(history(f"m{i}", app, horizon_ms) for i, app in enumerate(apps, start=1)),
        horizon_ms,
    )


@dataclass(frozen=True)
class Run:
    """What a check concluded in a world and the looks it took."""

    verdict: Verdict | None
    looks: tuple[Look, ...]

    @property
    def decided_at_ms(self) -> int | None:
        """When the verdict came: the time of the last look."""
        return self.looks[-1].at_ms if self.looks and self.verdict else None


def drive_world(check: Check, w: World, max_looks: int = 2_000) -> Run:
    """Run a check against a world as the simulator would, until a verdict or the horizon."""
    verdict, looks = drive(check, PUBLISH_MS, w.look, max_looks=max_looks, until_ms=w.horizon_ms)
    return Run(verdict, tuple(looks))


def incident_looks(count: int, cap: int = 5) -> list[Look]:
    """The brief's platform: every look adds a crash and a start, the list trimmed to ``cap``.

    Cycle k (from 0) crashes at +1000k+300 ms and starts again at +1000k+600 ms after the
    publish; look k is taken at +1000k+900 ms, when the machine reads started. Once the
    list is full, every look holds the same mix of starts and crashes.
    """
    events: list[Event] = [
        Event("update", "replaced", PUBLISH_MS, "user"),
        Event("start", "started", PUBLISH_MS + 100),
    ]
    looks: list[Look] = []
    for k in range(count):
        base = PUBLISH_MS + 1000 * k
        events.append(
            Event("exit", "stopped", base + 300, exit_code=1, restarting=True, restart_count=k)
        )
        events.append(Event("start", "started", base + 600))
        at_ms = base + 900
        visible = tuple(reversed(events[-cap:]))
        machine = MachineSnapshot("m1", "started", "registry.fly.io/app:release", visible, at_ms)
        looks.append(Look(at_ms, (machine,)))
    return looks
