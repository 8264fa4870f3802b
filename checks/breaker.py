"""Amazon ECS's deployment circuit breaker: failed tasks against a threshold, reset by health."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from checks.failsafe import lost_machines
from checks.minhealthy import newest_start_ms
from checks.model import Look, MachineSnapshot, Verdict, Wait
from checks.protocol import Step
from checks.reasons import describe
from checks.started import wait_at_least

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


def healthy_tasks(
    looks: Sequence[Look], publish_started_ms: int, healthy_after_ms: float
) -> list[tuple[float, str]]:
    """When each run since the publish was seen healthy: (time it turned healthy, machine).

    A run (a machine's start since the publish) turned healthy ``healthy_after_ms`` after
    its start if some look at or after that time still read the machine started with that
    same newest start; a run that crashed sooner, or that no look saw through, never did.
    """
    seen: dict[tuple[str, int], float] = {}
    for look in looks:
        for machine in look.machines:
            if machine.state != "started":
                continue
            start = newest_start_ms(machine)
            if start is None or start < publish_started_ms:
                continue
            if machine.at_ms - start >= healthy_after_ms:
                seen.setdefault((machine.id, start), start + healthy_after_ms)
    return sorted((at, machine_id) for (machine_id, _), at in seen.items())


@dataclass(frozen=True)
class CircuitBreakerCheck:
    """Fail once failed tasks reach the threshold; pass once every task is healthy.

    Models the Amazon ECS deployment circuit breaker as AWS documents it:

    - Threshold: ECS API reference ``ServiceDeploymentCircuitBreaker.threshold`` and
      ``ThresholdConfiguration``: ``0.5 * desired task count``, at least 3 and at most 200
      (``BOUNDED_PERCENT`` 50, the default); ``threshold`` set to a number is the ``COUNT``
      type. A machine's crash exit after the publish is a failed task.
    - Reset: ``DeploymentCircuitBreaker.resetOnHealthyTask`` (default true): "a task that
      reaches a healthy state resets the failure count to 0"; false counts cumulatively.
      Failures and healthy moments are replayed in time order; the breaker trips when the
      count reaches the threshold.
    - Completion: the developer guide ("How the Amazon ECS deployment circuit breaker
      detects failures"): the deployment completes when the service reaches a steady
      state; here, when every machine reads started with a start since the publish that
      has turned healthy. Only then does the check pass.
    - Rollback: ``DeploymentCircuitBreaker.rollback`` (``rolls_back`` reports it).

    When a task turns healthy is not public for a task with no health check; assumed:
    ``healthy_after_s`` = 30 s after its start, one interval of an ECS container health
    check at its default ``interval`` of 30 s. ECS has no deployment deadline (a failing
    deployment stalls); the testbed needs a verdict, so an incomplete deployment fails
    after ``completion_timeout_s`` (assumed 600 s). The check sees only capped event lists:
    crashes that fall off between looks are lost (each distinct exit seen counts once).

    Blind spots: with one or two machines the threshold is 3; with the reset on, a crash
    loop whose runs last longer than ``healthy_after_s`` resets the count at every run and
    never trips, and passes if it happens to read healthy everywhere at one look. A
    machine the platform gave up on fails at once: nothing would ever complete it.
    """

    threshold: int | None = None
    failure_percent: int = 50
    reset_on_healthy_task: bool = True
    healthy_after_s: float = 30.0
    completion_timeout_s: float = 600.0
    rollback: bool = True
    poll_s: float = 1.0
    name = "circuit-breaker"

    @property
    def rolls_back(self) -> bool:
        """Whether a failed deployment is rolled back (ECS ``rollback``)."""
        return self.rollback

    def threshold_for(self, machines: int) -> int:
        """The number of failed tasks that trips the breaker for this many machines."""
        if self.threshold is not None:
            return self.threshold
        return ecs_threshold(machines, self.failure_percent)

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Return the next wait, or trip the breaker, or pass once every task is healthy."""
        if not looks:
            return Wait(0.0)
        if lost := lost_machines(self.name, looks):
            return lost
        latest = looks[-1]
        threshold = self.threshold_for(len(latest.machines))
        failures = failed_starts(looks, publish_started_ms)
        healthy_after_ms = self.healthy_after_s * 1000
        healthy = healthy_tasks(looks, publish_started_ms, healthy_after_ms)
        # Replay in time order; at one instant a reset goes first, so the failure counts.
        timeline = sorted(
            [(at, 0, machine_id) for at, machine_id in healthy]
            + [(float(at), 1, machine_id) for machine_id, at in failures]
        )
        count = 0
        counted: list[str] = []
        for _, kind, machine_id in timeline:
            if kind == 0:
                if self.reset_on_healthy_task:
                    count, counted = 0, []
                continue
            count += 1
            counted.append(machine_id)
            if count >= threshold:
                return self._tripped(counted, threshold, len(latest.machines))
        for machine in latest.machines:
            if machine.gave_up:
                # ECS would replace the stopped task; here nothing will restart it, so the
                # deployment can never complete (assumed: fail now rather than stall).
                return Verdict(
                    False,
                    f"machine {machine.id} was given up on by the platform "
                    f"({describe(machine, publish_started_ms)}) with {count} failed task(s) "
                    f"counted (threshold {threshold}): nothing will restart it, so the "
                    "deployment cannot complete",
                    machine.id,
                    layer="gave-up",
                )
        waiting = [m for m in latest.machines if not self._healthy(m, publish_started_ms)]
        if not waiting:
            return Verdict(
                True,
                f"every machine reads started and healthy ({self.healthy_after_s:g} s since "
                f"a start after the publish) with {count} failed task(s) counted, below "
                f"the threshold of {threshold}: the deployment completed",
                layer="completed",
            )
        elapsed_ms = latest.at_ms - publish_started_ms
        if elapsed_ms >= self.completion_timeout_s * 1000:
            machine = waiting[0]
            return Verdict(
                False,
                f"the deployment did not complete within {self.completion_timeout_s:g} s: "
                f"machine {machine.id} is not healthy ({describe(machine, publish_started_ms)}) "
                f"with {count} failed task(s) counted (threshold {threshold})",
                machine.id,
                layer="not-completed",
            )
        wait_ms = self.poll_s * 1000
        return wait_at_least(min(wait_ms, self.completion_timeout_s * 1000 - elapsed_ms) / 1000)

    def _healthy(self, machine: MachineSnapshot, publish_started_ms: int) -> bool:
        start = newest_start_ms(machine)
        return (
            machine.state == "started"
            and start is not None
            and start >= publish_started_ms
            and machine.at_ms - start >= self.healthy_after_s * 1000
        )

    def _tripped(self, counted: list[str], threshold: int, machines: int) -> Verdict:
        per_machine: dict[str, int] = {}
        for machine_id in counted:
            per_machine[machine_id] = per_machine.get(machine_id, 0) + 1
        worst = max(sorted(per_machine), key=lambda m: per_machine[m])
        since_reset = " since the last healthy task" if self.reset_on_healthy_task else ""
        return Verdict(
            False,
            f"circuit breaker tripped: {len(counted)} failed task(s){since_reset} reached "
            f"the threshold of {threshold} for {machines} machine(s) "
            f"({', '.join(f'{m} {n}' for m, n in sorted(per_machine.items()))}); "
            "the new release crashes after starting: check its logs for the exit cause",
            worst,
            layer="circuit-breaker",
        )
