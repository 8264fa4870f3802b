"""A quiet restart (no SimPy event at a restart that writes nothing) changes nothing a reader sees.

Under ``always`` with a profile that writes no restart event, the machine merges a
restart's delay into the next boot (``Machine._quiet``): a crashed machine already reads
starting, so nothing changes at the restart. The property: over random machines,
policies, profiles and interventions (updates, autostop, autostart, destroy) at random
times, every look reads the same as with a restart that is its own event.
"""

from __future__ import annotations

import random
from collections.abc import Generator
from typing import Any

import simpy
from hypothesis import example, given
from hypothesis import strategies as st

from platform_testbed.checks import MachineSnapshot
from platform_testbed.sim.config.profiles import PROFILES
from platform_testbed.sim.config.scenario import AppTable, PlatformTable
from platform_testbed.sim.platform.machine import Image, Machine

ACTIONS = ("update", "update-stopped", "sleep", "wake", "destroy")

worlds = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32),
        # Only ``always`` merges a restart (the other policies run the same code twice).
        "policy": st.just("always"),
        "events": st.sampled_from(sorted(PROFILES)),
        "delay": st.sampled_from([0.0, 0.3, 1.0, 2.5]),
        "boot": st.sampled_from([0.0, 0.4, 1.0]),
        "crash_after": st.sampled_from([0.5, 1.0, 2.5]),
        "jitter": st.sampled_from([0.0, 0.05, 0.3]),
        "max_retries": st.integers(0, 6),
        "behavior": st.sampled_from(["crash_after", "oom", "flaky", "crash_after_starts"]),
        "actions": st.lists(
            st.tuples(st.floats(0.0, 40.0), st.sampled_from(ACTIONS)), max_size=6
        ),
        "looks": st.lists(st.floats(0.0, 45.0), min_size=1, max_size=30),
    }
)


def _run(world: dict[str, Any], quiet: bool) -> list[tuple[MachineSnapshot, int, int]]:
    env = simpy.Environment()
    platform = PlatformTable(
        restart_policy=world["policy"], events=world["events"],
        restart_delay_s=world["delay"], boot_s=world["boot"], jitter=world["jitter"],
        max_retries=world["max_retries"],
    )
    app = AppTable(behavior=world["behavior"], crash_after_s=world["crash_after"],
                   crash_probability=0.5, flaky_interval_s=1.0, crash_after_starts=1)
    images = [Image("app:v1", app), Image("app:v2", app)]
    machine = Machine(env, "m1", platform, random.Random(world["seed"]))
    machine._quiet = machine._quiet and quiet
    machine.launch(images[0])
    seen: list[tuple[MachineSnapshot, int, int]] = []

    def act() -> Generator[Any, Any, None]:
        for n, (at, action) in enumerate(sorted(world["actions"])):
            yield env.timeout(max(0.0, at - env.now))
            image = images[n % 2]
            if action == "update":
                machine.update(image)
            elif action == "update-stopped":
                machine.update(image, start=False)
            elif action == "sleep":
                machine.sleep()
            elif action == "wake":
                machine.wake()
            elif machine.state != "destroyed":
                machine.destroy()

    def look() -> Generator[Any, Any, None]:
        for at in sorted(world["looks"]):
            yield env.timeout(max(0.0, at - env.now))
            seen.append((machine.snapshot(), len(machine.crash_times), machine.log.dropped))

    env.process(act())
    env.process(look())
    env.run(until=50)
    return seen


# An update inside a merged restart's delay: that boot never began, so the new image's
# first boot takes its jitter draw, as it would have drawn it itself.
STOPPED_IN_A_DELAY = {
    "seed": 1, "policy": "always", "events": "minimal", "delay": 2.5, "boot": 0.4,
    "crash_after": 1.0, "jitter": 0.3, "max_retries": 6, "behavior": "crash_after",
    "actions": [(2.0, "update")], "looks": [1.0, 2.1, 3.0, 5.0, 10.0],
}


@given(worlds)
@example(STOPPED_IN_A_DELAY)
def test_a_quiet_restart_reads_the_same_as_a_restart_event(world: dict[str, Any]) -> None:
    """Every look at a machine with quiet restarts equals the look with restart events."""
    assert _run(world, quiet=True) == _run(world, quiet=False)
