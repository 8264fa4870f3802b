"""Kubernetes ``minReadySeconds`` / Nomad ``min_healthy_time``: stay up T seconds in a row."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from checks.model import Look, MachineSnapshot, Verdict, Wait
from checks.protocol import Step
from checks.reasons import describe, since
from checks.started import wait_at_least


def newest_start_ms(machine: MachineSnapshot) -> int | None:
    """The timestamp of the newest ``start`` event still in the list."""
    return next((e.timestamp for e in machine.events if e.type == "start"), None)


def healthy_since(machine_id: str, looks: Sequence[Look], publish_started_ms: int) -> int | None:
    """When the machine's current run of ``started`` began, if the looks show one unbroken.

    The run begins at the newest start in the latest look. It counts only if that start is
    after the publish began, and every look taken since it read the machine ``started``
    with that same newest start: a crash and restart between two looks moves the newest
    start, which restarts the timer.
    """
    latest = looks[-1].machine(machine_id)
    if latest is None or latest.state != "started":
        return None
    start = newest_start_ms(latest)
    if start is None or start < publish_started_ms:
        return None
    for look in looks:
        seen = look.machine(machine_id)
        # A look in the same millisecond as the start cannot tell which came first.
        if seen is None or seen.at_ms <= start:
            continue
        if seen.state != "started" or newest_start_ms(seen) != start:
            return None
    return start


@dataclass(frozen=True)
class MinHealthyTimeCheck:
    """Pass once every machine has stayed ``started`` for ``min_healthy_s`` in a row.

    Models Kubernetes' Deployment ``minReadySeconds`` (a new pod counts as available
    only after it has been ready that long without a container crashing) and Nomad's
    ``update.min_healthy_time`` (an allocation must stay healthy that long before it is
    marked healthy), both with their deadlines: Kubernetes' ``progressDeadlineSeconds``
    and Nomad's ``healthy_deadline`` (5 m, the default used here). The timer starts at the
    machine's newest ``start`` event after the publish began and restarts whenever the
    newest start changes or a look reads the machine in any other state; looks are
    polled every ``poll_s``. "Healthy" here is "reads started": the testbed has no
    readiness probe, so an app that is up but not serving passes.

    Guarantee: it never passes a machine whose newest start is younger than
    ``min_healthy_s`` at the deciding look, whatever the event-list cap, because the
    newest start is the event a capped list keeps. Blind spot: an app that crashes more
    than ``min_healthy_s`` after each start passes.
    """

    min_healthy_s: float = 10.0
    healthy_deadline_s: float = 300.0
    poll_s: float = 1.0
    name = "min-healthy-time"

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Return the next poll, or the verdict once all are healthy or the deadline passed."""
        if not looks:
            return Wait(0.0)
        latest = looks[-1]
        need_ms = self.min_healthy_s * 1000
        shortest: tuple[float, MachineSnapshot] | None = None
        for machine in latest.machines:
            start = healthy_since(machine.id, looks, publish_started_ms)
            up_ms = -1.0 if start is None else float(machine.at_ms - start)
            if shortest is None or up_ms < shortest[0]:
                shortest = (up_ms, machine)
        if shortest is None or shortest[0] >= need_ms:
            return Verdict(
                True,
                f"every machine has stayed started for at least {self.min_healthy_s:g} s "
                "since its newest start",
                layer="min-healthy-time",
            )
        elapsed_s = (latest.at_ms - publish_started_ms) / 1000
        up_ms, machine = shortest
        if elapsed_s >= self.healthy_deadline_s:
            return self._deadline(machine, up_ms, looks, publish_started_ms)
        wait_s = self.poll_s
        if up_ms >= 0:
            # No need to look before the least-up machine could reach the minimum.
            wait_s = min(wait_s, (need_ms - up_ms) / 1000)
        return wait_at_least(min(wait_s, self.healthy_deadline_s - elapsed_s))

    def _deadline(
        self, machine: MachineSnapshot, up_ms: float, looks: Sequence[Look], publish_started_ms: int
    ) -> Verdict:
        starts = sorted(
            {
                e.timestamp
                for look in looks
                if (seen := look.machine(machine.id)) is not None
                for e in seen.events
                if e.type == "start" and e.timestamp >= publish_started_ms
            }
        )
        if up_ms >= 0:
            newest = since(int(machine.at_ms - up_ms), publish_started_ms)
            state = f"its newest start at {newest} is only {up_ms / 1000:.1f} s old"
        else:
            state = describe(machine, publish_started_ms)
        return Verdict(
            False,
            f"machine {machine.id} did not stay started for {self.min_healthy_s:g} s in a row "
            f"within the {self.healthy_deadline_s:g} s deadline ({state}; {len(starts)} "
            "start(s) seen since the publish): the app keeps restarting or never comes up; "
            "check its logs for the exit cause",
            machine.id,
            layer="healthy-deadline",
        )
