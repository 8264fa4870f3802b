"""App behaviours per image: how long a start takes, and when and how the app exits.

The behaviour's parameters are the scenario's ``[previous]``/``[release]`` table itself
(``sim.config.scenario.AppTable``): declared once, read here.
"""

from __future__ import annotations

import math
import random

from platform_testbed.sim.config.scenario import AppTable

#: The exit code of a process the kernel's OOM killer ended (128 + SIGKILL).
OOM_EXIT_CODE = 137

#: An exit: (seconds after the machine read started, exit code, OOM-killed).
Exit = tuple[float, int, bool]


def boot_s(app: AppTable, platform_boot_s: float) -> float:
    """How long a start takes before the machine reads started."""
    return app.slow_boot_s if app.behavior == "slow_boot" else platform_boot_s


def stays_up(app: AppTable) -> bool:
    """True when the app never exits on its own: ``next_exit`` is None, and draws nothing."""
    return app.behavior in ("healthy", "slow_boot")


def steady_exit(app: AppTable) -> Exit | None:
    """The exit every start ends in, before jitter, when it is the same for every start.

    The crash loops: the machine jitters ``after`` with one ``uniform`` draw per start.
    """
    name = app.behavior
    if name == "crash_after":
        return (app.crash_after_s, app.exit_code, False)
    if name == "oom":
        return (app.crash_after_s, OOM_EXIT_CODE, True)
    if name == "crash_on_boot":
        return (app.crash_on_boot_s, app.exit_code, False)
    return None


def next_exit(app: AppTable, start_number: int, rng: random.Random, jitter: float) -> Exit | None:
    """The exit that ends start number ``start_number`` (1-based), or None if it stays up."""
    name = app.behavior
    steady = steady_exit(app)
    if steady is not None:
        after, code, oom = steady
        return (after * (1.0 + rng.uniform(-jitter, jitter)), code, oom)
    if name == "crash_after_starts":
        if start_number <= app.crash_after_starts:
            return None
        return (app.crash_after_s * (1.0 + rng.uniform(-jitter, jitter)), app.exit_code, False)
    if name == "flaky":
        # Geometric number of intervals until the first crash, drawn in one step so a
        # small probability costs no more than a large one.
        p = app.crash_probability
        intervals = 1 if p >= 1 else 1 + int(math.log(1.0 - rng.random()) / math.log(1.0 - p))
        return (intervals * app.flaky_interval_s, app.exit_code, False)
    return None  # healthy, slow_boot
