"""Helpers for tests and notebooks: event histories and looks made by hand, and a pure driver.

Like ``structlog.testing``: shipped in the package so users testing their own checks get
the same tools the project's tests use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

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
    check: Check, publish_started_ms: int, observe: Callable[[int], Look], max_looks: int = 1000
) -> tuple[Verdict, list[Look]]:
    """Run a check the way any driver does, with ``observe(at_ms)`` taking each look."""
    looks: list[Look] = []
    now = publish_started_ms
    while len(looks) < max_looks:
        step = check.next(publish_started_ms, looks)
        if isinstance(step, Verdict):
            return step, looks
        assert isinstance(step, Wait)
        now += round(step.seconds * 1000)
        looks.append(observe(now))
    raise AssertionError(f"{check.name} took {max_looks} looks without a verdict")
