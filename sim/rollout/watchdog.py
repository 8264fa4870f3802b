"""The per-server watchdog: health-check on a timer, "repair" after enough failures in a row."""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import simpy

from platform_testbed.sim.rollout.server import Server


@dataclass(frozen=True, slots=True)
class WatchdogRules:
    """How often the watchdog looks, how many failures it waits for, and whether it locks."""

    interval_s: float
    consecutive_failures: int
    lock: bool
    repair_s: float


@dataclass(frozen=True, slots=True)
class Repair:
    """One repair: rewrite the compose file from the watchdog's copy, then ``compose up``."""

    at_s: float
    server: str
    changed: bool
    mid_deploy: bool


def looks_broken(server: Server) -> bool:
    """The watchdog's check: health endpoint not OK, or a service of the compose file not running.

    A draining server answers 503, so to this check it looks exactly like a dead one.
    """
    return server.health() != "ok" or any(s not in server.running for s in server.compose.services)


class Watchdog:
    """Looks every ``interval_s``; after ``consecutive_failures`` it repairs.

    With ``lock`` it takes the server's lock without waiting (like ``flock -n``): while the
    deploy holds it, the pass is skipped.
    """

    def __init__(
        self,
        env: simpy.Environment,
        server: Server,
        rules: WatchdogRules,
        rng: random.Random,
        *,
        start_delay: Callable[[random.Random], float],
        deploying: Callable[[Server], bool],
    ) -> None:
        self.env = env
        self.server = server
        self.rules = rules
        self.rng = rng
        self.start_delay = start_delay
        self.deploying = deploying
        self.repairs: list[Repair] = []
        self.skipped = 0
        env.process(self._run(rng.uniform(0, rules.interval_s)))

    def _run(self, phase: float) -> Generator[simpy.Event, Any, None]:
        yield self.env.timeout(phase)
        failures = 0
        while True:
            request = None
            if self.rules.lock:
                if self.server.lock.count or self.server.lock.queue:
                    self.skipped += 1
                    yield self.env.timeout(self.rules.interval_s)
                    continue
                request = self.server.lock.request()
                yield request
            failures = failures + 1 if looks_broken(self.server) else 0
            if failures >= self.rules.consecutive_failures:
                failures = 0
                self._repair()
                if request is not None:
                    yield self.env.timeout(self.rules.repair_s)
            if request is not None:
                self.server.lock.release(request)
            yield self.env.timeout(self.rules.interval_s)

    def _repair(self) -> None:
        server = self.server
        mid_deploy = self.deploying(server)
        server.write_compose(server.template)
        changed = server.compose_up(server.release, self.start_delay(self.rng))
        self.repairs.append(Repair(self.env.now, server.name, changed, mid_deploy))
