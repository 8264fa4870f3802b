"""App behaviours per image: when, and how, the app exits after each start."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Literal

BehaviorName = Literal[
    "healthy", "crash_after", "crash_on_boot", "crash_after_starts", "flaky", "slow_boot", "oom"
]
BEHAVIORS: tuple[str, ...] = BehaviorName.__args__  # type: ignore[attr-defined]

OOM_EXIT_CODE = 137


@dataclass(frozen=True, slots=True)
class Crash:
    """The app exits ``after_s`` seconds after it read started."""

    after_s: float
    exit_code: int
    oom_killed: bool = False


@dataclass(frozen=True, slots=True)
class Behavior:
    """What an image's app does on each start; jitter is applied by the caller's rng."""

    name: BehaviorName = "healthy"
    crash_after_s: float = 2.5
    crash_on_boot_s: float = 0.5
    crash_after_starts: int = 0
    crash_probability: float = 0.1
    flaky_interval_s: float = 10.0
    slow_boot_s: float = 30.0
    exit_code: int = 1

    def boot_s(self, platform_boot_s: float) -> float:
        """How long a start takes before the machine reads started."""
        return self.slow_boot_s if self.name == "slow_boot" else platform_boot_s

    def steady_crash(self) -> Crash | None:
        """The exit every start ends in, before jitter, if it is the same for all starts.

        ``after_s`` is the base that ``crash`` jitters with one ``uniform`` draw: the
        machine's hot loop applies it inline, with the very same draw and arithmetic,
        instead of calling ``crash`` and building a ``Crash`` per cycle.
        """
        if self.name in ("crash_after", "oom"):
            oom = self.name == "oom"
            return Crash(self.crash_after_s, OOM_EXIT_CODE if oom else self.exit_code, oom)
        if self.name == "crash_on_boot":
            return Crash(self.crash_on_boot_s, self.exit_code)
        return None

    def crash(self, start_number: int, rng: random.Random, jitter: float) -> Crash | None:
        """The exit that ends start number ``start_number`` (1-based), or None if it stays up."""
        name = self.name
        if name in ("healthy", "slow_boot"):
            return None
        if name == "crash_after_starts" and start_number <= self.crash_after_starts:
            return None
        if name == "flaky":
            # Geometric number of intervals until the first crash, drawn in one step so a
            # small probability costs no more than a large one.
            p = self.crash_probability
            intervals = 1 if p >= 1 else 1 + int(math.log(1.0 - rng.random()) / math.log(1.0 - p))
            return Crash(intervals * self.flaky_interval_s, self.exit_code)
        base = self.crash_on_boot_s if name == "crash_on_boot" else self.crash_after_s
        after = base * (1.0 + rng.uniform(-jitter, jitter))
        if name == "oom":
            return Crash(after, OOM_EXIT_CODE, oom_killed=True)
        return Crash(after, self.exit_code)
