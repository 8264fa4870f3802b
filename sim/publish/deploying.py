"""The publish driven by a check that deploys: it says which machines to update, and when.

A check that rolls the release out itself (``checks.protocol.Deploying``, e.g.
``flyctl-smoke``, which updates a pool of machines at a time as flyctl's ``plan.go``
does) gets a world whose roll left every machine as it was before the publish. Its
first look is that fleet; on ``Update(machine_ids)`` the world updates those machines
at once (the rule ``world.update_machines`` applies to every publish) and takes the
next look in the same instant; on ``Wait`` it waits and looks, as for any check. So each
machine's wait timeout, listen wait and smoke window count from its own update.

A deploying check never shares a world with other checks (``run_checks`` runs it
alone): its updates change the world the others would see.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol

import simpy

from platform_testbed.checks import Look, Verdict
from platform_testbed.checks.drive import CheckFailed
from platform_testbed.checks.model import Update
from platform_testbed.sim.config.scenario import Scenario
from platform_testbed.sim.platform.machine import Machine
from platform_testbed.sim.publish.runresult import RecordedLook


class Publishing(Protocol):
    """What this driver reads and writes of ``world.World`` (which imports this module)."""

    env: simpy.Environment
    machines: list[Machine]
    scenario: Scenario
    looks: list[RecordedLook]
    error: str | None
    error_detail: str | None

__all__ = ["Failing", "Publishing", "drive_publish", "record_failure", "unknown_machines"]


def unknown_machines(step: Update, known: Sequence[str]) -> str | None:
    """A one-line reason when an Update names a machine the app does not have."""
    missing = [m for m in step.machine_ids if m not in known]
    if not missing:
        return None
    return f"check asked to update {', '.join(missing)}, which is not a machine of this app"


def drive_publish(
    world: Publishing,
    steps: Generator[float | Update, Look, Verdict],
    *,
    look: Callable[[], RecordedLook],
    update: Callable[[Sequence[Machine]], None],
    conclude: Callable[[Verdict], None],
) -> Generator[Any, Any, None]:
    """Drive a check's ``steps`` (``checks.drive``'s) in ``world`` to its verdict: wait, look,
    and carry out each update it asks (only ``drive_deploying``'s steps ask one)."""
    env = world.env
    by_id = {m.id: m for m in world.machines}
    try:
        step = next(steps)
        while True:
            if isinstance(step, Update):
                refused = unknown_machines(step, list(by_id))
                if refused is not None:
                    raise CheckFailed(refused)
                update([by_id[m] for m in step.machine_ids])
            elif step:
                yield env.timeout(step)
            recorded = look()
            world.looks.append(recorded)
            step = steps.send(recorded.look)
    except StopIteration as done:
        verdict: Verdict = done.value
    except CheckFailed as failed:
        record_failure(world, failed)
        return
    conclude(verdict)


class Failing(Protocol):
    """Whatever keeps a run's error: a world, or a check riding a shared world."""

    error: str | None
    error_detail: str | None


def record_failure(run: Failing, failed: CheckFailed) -> None:
    """The run's ``error`` outcome: the message, and the check's own traceback (``--debug``)."""
    run.error = str(failed)
    cause = failed.__cause__
    if cause is not None:
        run.error_detail = "".join(traceback.format_exception(cause))
