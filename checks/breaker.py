"""An ECS-style deployment circuit breaker: fail once failed starts reach a threshold."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from checks.model import Look, Verdict, Wait
from checks.protocol import Step
from checks.started import await_started, wait_at_least

#: ECS clamps its computed threshold to this range.
ECS_MIN_THRESHOLD = 3
ECS_MAX_THRESHOLD = 200


def ecs_threshold(desired: int, percent: int = 50) -> int:
    """ECS's default threshold: ``percent`` of the desired count, rounded up, clamped 3..200."""
    return min(ECS_MAX_THRESHOLD, max(ECS_MIN_THRESHOLD, math.ceil(desired * percent / 100)))


def failed_starts(looks: Sequence[Look], publish_started_ms: int) -> list[tuple[str, int]]:
    """Every distinct crash exit since the publish seen in any look: (machine, timestamp).

    A crash is identified by machine and timestamp, so the same exit seen in several
    looks counts once. Crashes that came and went between two looks (more events than
    the list's cap) are never seen and never counted.
    """
    seen = {
        (machine.id, event.timestamp)
        for look in looks
        for machine in look.machines
        for event in machine.crashes_since(publish_started_ms)
    }
    return sorted(seen)


@dataclass(frozen=True)
class CircuitBreakerCheck:
    """Fail once the crashes seen since the publish reach the threshold; else pass when steady.

    Models the Amazon ECS deployment circuit breaker (ECS API reference,
    ``ServiceDeploymentCircuitBreaker.threshold`` and ``ThresholdConfiguration``): the
    deployment fails once the number of failed tasks reaches a threshold of
    ``0.5 * desired task count`` with a minimum of 3 and a maximum of 200
    (``BOUNDED_PERCENT`` 50, the default); ``threshold`` set to a number is ECS's ``COUNT``
    type. A machine's crash exit after the publish is a failed start.

    ECS counts failures itself; this check only sees the capped event lists it reads,
    so crashes that fall off between looks are lost (it counts each distinct exit seen
    in any look). ECS's success condition (steady state) is approximated: every machine
    reads started (polled every ``poll_s`` up to ``start_timeout_s``) and still reads
    started ``look_delay_s`` later with fewer failures than the threshold.

    Blind spots: with one or two machines the threshold is 3, so a release that crashes
    once or twice per machine within the window passes; so does any crash after the window.
    """

    threshold: int | None = None
    failure_percent: int = 50
    look_delay_s: float = 5.0
    start_timeout_s: float = 60.0
    poll_s: float = 1.0
    name = "circuit-breaker"

    def threshold_for(self, machines: int) -> int:
        """The number of failed starts that trips the breaker for this many machines."""
        if self.threshold is not None:
            return self.threshold
        return ecs_threshold(machines, self.failure_percent)

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Return the next wait, or trip the breaker, or pass once steady."""
        if not looks:
            return Wait(0.0)
        latest = looks[-1]
        threshold = self.threshold_for(len(latest.machines))
        failures = failed_starts(looks, publish_started_ms)
        if len(failures) >= threshold:
            per_machine: dict[str, int] = {}
            for machine_id, _ in failures:
                per_machine[machine_id] = per_machine.get(machine_id, 0) + 1
            worst = max(sorted(per_machine), key=lambda m: per_machine[m])
            return Verdict(
                False,
                f"circuit breaker tripped: {len(failures)} failed start(s) since the publish "
                f"reached the threshold of {threshold} for {len(latest.machines)} machine(s) "
                f"({', '.join(f'{m} {n}' for m, n in sorted(per_machine.items()))}); "
                "the new release crashes after starting: check its logs for the exit cause",
                worst,
                layer="circuit-breaker",
            )
        found = await_started(self, publish_started_ms, looks)
        if not isinstance(found, int):
            return found
        watched_s = (latest.at_ms - looks[found].at_ms) / 1000
        if watched_s < self.look_delay_s:
            return wait_at_least(min(self.poll_s, self.look_delay_s - watched_s))
        down = [m for m in latest.machines if m.state != "started"]
        if down and self._before_timeout(latest, publish_started_ms):
            # Steady state means every machine up at once: keep polling until it is.
            return wait_at_least(self.poll_s)
        if down:
            return Verdict(
                False,
                f"machine {down[0].id} is not steady: it reads {down[0].state} "
                f"{self.start_timeout_s:g} s after the publish began, with "
                f"{len(failures)} failed start(s) seen (threshold {threshold})",
                down[0].id,
                layer="not-steady",
            )
        return Verdict(
            True,
            f"every machine read started {self.look_delay_s:g} s apart with "
            f"{len(failures)} failed start(s) seen since the publish, below the threshold "
            f"of {threshold}",
            layer="circuit-breaker",
        )

    def _before_timeout(self, look: Look, publish_started_ms: int) -> bool:
        return (look.at_ms - publish_started_ms) / 1000 < self.start_timeout_s
