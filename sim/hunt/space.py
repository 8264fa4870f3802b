"""The space of worlds a hunt searches: scenario overrides drawn from lists of round values.

A world is the base scenario plus a few overrides (dotted keys, as ``--set`` spells them).
Every axis is a ``sampled_from`` list whose first entry is the base scenario's own value,
so hypothesis, which shrinks a choice towards the first entry, shrinks a world towards the
base: the smallest world that fools a check differs from the base in as few keys as it
can, each set to a round value a person can read.

The values are round numbers spanning what the model accepts and what a deploy meets;
none is measured. Keys the platform does not publish are listed in ``ASSUMED``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

from platform_testbed.sim.config.profiles import PROFILES
from platform_testbed.sim.config.scenario import BEHAVIORS, Scenario, validate

#: One world: the overrides on the base scenario, in the order they were drawn.
World = tuple[tuple[str, Any], ...]

#: Values each axis may take besides the base's (assumed: round values over the ranges a
#: Fly deploy plausibly meets, from a fast crash loop to one slower than any look).
CRASH_AFTER_S = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
CRASH_ON_BOOT_S = (0.1, 0.5, 1.0, 5.0)
CRASH_AFTER_STARTS = (1, 2, 3, 5)
CRASH_PROBABILITY = (0.1, 0.5, 1.0)
FLAKY_INTERVAL_S = (1.0, 10.0, 60.0)
SLOW_BOOT_S = (5.0, 10.0, 30.0, 60.0, 120.0)
#: 0 is a clean exit (not a crash; on-failure does not restart it), 137 what a kill gives.
EXIT_CODES = (1, 0, 2, 137, 255)
MACHINES = (1, 2, 3, 4)
BOOT_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
RESTART_DELAY_S = (0.0, 0.5, 1.0, 5.0, 10.0, 30.0)
RESTART_POLICIES = ("on-failure", "always", "no")
MAX_RETRIES = (0, 1, 2, 3, 5, 10)
EVENT_LOG_CAPS = (1, 2, 3, 4, 5, 10, 20)
JITTER = (0.0, 0.05, 0.1, 0.2)
LOOK_DELAY_S = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0)
POLL_S = (0.5, 1.0, 2.0, 5.0, 10.0)

#: Which of the release's keys each behaviour reads (sim/platform/behavior.py).
BEHAVIOR_KEYS: dict[str, tuple[str, ...]] = {
    "healthy": (),
    "crash_after": ("crash_after_s", "exit_code"),
    "crash_on_boot": ("crash_on_boot_s", "exit_code"),
    "crash_after_starts": ("crash_after_starts", "crash_after_s", "exit_code"),
    "flaky": ("crash_probability", "flaky_interval_s", "exit_code"),
    "slow_boot": ("slow_boot_s",),
    "oom": ("crash_after_s",),
}

#: Keys a found world may set whose real value on Fly is not public (sim/config/scenario.py
#: PlatformTable and docs/fidelity.md give the evidence for each).
ASSUMED = (
    "platform.event_log_cap",
    "platform.events",
    "platform.restart_delay_s",
    "platform.boot_s",
    "platform.jitter",
)


def base_first(base: Any, values: Sequence[Any]) -> list[Any]:
    """The axis as hypothesis sees it: the base's value first, then the others in order."""
    return [base, *[v for v in values if v != base]]


def lookup(scenario: Scenario, key: str) -> Any:
    """The value of a dotted key (``release.crash_after_s``) in a scenario."""
    table, _, field = key.partition(".")
    return getattr(getattr(scenario, table), field) if field else getattr(scenario, table)


#: Every axis, in the order hypothesis draws it (the behaviour first, as it matters most).
AXES: tuple[tuple[str, Sequence[Any]], ...] = (
    ("release.behavior", BEHAVIORS),
    ("release.crash_after_s", CRASH_AFTER_S),
    ("release.crash_on_boot_s", CRASH_ON_BOOT_S),
    ("release.crash_after_starts", CRASH_AFTER_STARTS),
    ("release.crash_probability", CRASH_PROBABILITY),
    ("release.flaky_interval_s", FLAKY_INTERVAL_S),
    ("release.slow_boot_s", SLOW_BOOT_S),
    ("release.exit_code", EXIT_CODES),
    ("release.machines", MACHINES),
    ("platform.restart_policy", RESTART_POLICIES),
    ("platform.max_retries", MAX_RETRIES),
    ("platform.event_log_cap", EVENT_LOG_CAPS),
    ("platform.events", tuple(PROFILES)),
    ("platform.restart_delay_s", RESTART_DELAY_S),
    ("platform.boot_s", BOOT_S),
    ("platform.jitter", JITTER),
    ("check.look_delay_s", LOOK_DELAY_S),
    ("check.poll_s", POLL_S),
)


#: The release's keys only some behaviours read.
_RELEASE_APP_KEYS = frozenset(k for keys in BEHAVIOR_KEYS.values() for k in keys)


def _read_by(values: dict[str, Any], key: str) -> bool:
    """Does a world with these values read ``key``? (Keys no rule reads are not written.)"""
    table, _, field = key.partition(".")
    if table == "release" and field in _RELEASE_APP_KEYS:
        return field in BEHAVIOR_KEYS[values["release.behavior"]]
    if key == "platform.max_retries":
        return bool(values["platform.restart_policy"] == "on-failure")
    return True


def worlds(base: Scenario, any_behavior: bool = True) -> st.SearchStrategy[World]:
    """Hypothesis' strategy for worlds around ``base`` (with the base's behaviour only, if asked).

    A world lists the keys it reads: the release's behaviour and the keys that behaviour
    reads, ``max_retries`` only under ``on-failure``, and every platform and check axis.
    """
    strategies = {
        key: st.sampled_from(base_first(lookup(base, key), values))
        for key, values in AXES
    }
    if not any_behavior:
        strategies["release.behavior"] = st.just(base.release.behavior)

    @st.composite
    def world(draw: Callable[[st.SearchStrategy[Any]], Any]) -> World:
        # Every axis is drawn, in one fixed order, whatever the behaviour and policy: a
        # change of behaviour then leaves the other choices where they were, which lets the
        # shrinker move between behaviours. Only the keys the world reads are kept.
        values = {key: draw(strategy) for key, strategy in strategies.items()}
        return tuple((key, value) for key, value in values.items() if _read_by(values, key))

    strategy: st.SearchStrategy[World] = world()
    return strategy


def changes(base: Scenario, world: World) -> World:
    """The overrides of ``world`` whose value differs from the base's: what the hunt changed."""
    return tuple((key, value) for key, value in world if lookup(base, key) != value)


def shown(value: Any) -> str:
    """A world's value as the hunt prints it: floats without trailing zeros."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def changes_text(base: Scenario, world: World, equals: str = "=") -> str:
    """``key=value, ...`` of what the hunt changed (empty for the base itself)."""
    return ", ".join(f"{k}{equals}{shown(v)}" for k, v in changes(base, world))


def apply(base: Scenario, world: World, name: str | None = None) -> Scenario:
    """The base scenario with the world's overrides, validated; no ``[expect]`` carried over."""
    raw = base.model_dump()
    raw["expect"] = {}
    if name is not None:
        raw["name"] = name
    for key, value in world:
        table, _, field = key.partition(".")
        raw[table][field] = value
    return validate(raw, f"hunt world {name or base.name}")
