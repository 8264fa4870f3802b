"""An ALB-like load balancer: periodic health checks, thresholds, routing to healthy targets.

When the checks fall is a choice (``[balancer] check_schedule``): by default each target's
first check comes at a uniform random phase, then every ``interval_s``. ``staggered`` is
HAProxy's schedule, read from its source (src/check.c, ``start_check_task``: the check of
the server at position ``srvpos`` of ``nbcheck`` first expires ``mininter * srvpos /
nbcheck`` after start, "as far as possible from each other"), where a drained server's next
check always comes the same time after its drain (docs/rollout.md measured 1.72-1.77 s
from close to DOWN, scaled). ``spread_checks_pct`` is HAProxy's global ``spread-checks``
("add some randomness in the check interval between 0 and +/- 50%", HAProxy Configuration
Manual; src/check.c adds ``inter * spread_checks / 100`` times a uniform draw in -1..1 to
each interval).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import simpy

from platform_testbed.sim.rollout.server import HealthAnswer, Server


@dataclass(frozen=True, slots=True)
class HealthRules:
    """How often the balancer probes and how many results in a row flip its opinion."""

    interval_s: float
    unhealthy_threshold: int
    healthy_threshold: int
    #: ``random``: a uniform phase per target; ``staggered``: HAProxy's (see the module).
    schedule: Literal["random", "staggered"] = "random"
    #: Each interval varied by up to +/- this percent of it (HAProxy's ``spread-checks``).
    spread_pct: float = 0.0


def first_probes(rules: HealthRules, count: int, rng: random.Random) -> list[float]:
    """When each of ``count`` targets is first probed, in target order.

    The random phases are drawn under either schedule, so the balancer's stream, and with
    it a seed's every later draw, is the same: a seed's runs pair across schedules.
    """
    phases = [rng.uniform(0, rules.interval_s) for _ in range(count)]
    if rules.schedule == "staggered":
        # When the balancer started, relative to the run, is not known: one drawn phase for
        # all (the first target's), the others k/n of an interval after it.
        start = phases[0]
        return [(start + rules.interval_s * k / count) % rules.interval_s for k in range(count)]
    return phases


def next_interval(rules: HealthRules, rng: random.Random) -> float:
    """The wait until a target's next probe: ``interval_s``, spread by ``spread_pct``."""
    if rules.spread_pct <= 0:
        return rules.interval_s  # no draw: the default's stream is as it always was
    spread = rules.interval_s * rules.spread_pct / 100
    return rules.interval_s + rng.uniform(-spread, spread)


@dataclass(frozen=True, slots=True)
class Probe:
    """One health check of one target and what the server answered."""

    at_s: float
    target: int
    answer: HealthAnswer


@dataclass(frozen=True, slots=True)
class Transition:
    """The balancer changed its opinion of a target."""

    at_s: float
    target: int
    healthy: bool


def judge(healthy: bool, streak: int, ok: bool, rules: HealthRules) -> tuple[bool, int]:
    """The target's health and streak after one probe result.

    ``streak`` counts results in a row that contradict the current opinion; the opinion
    flips when it reaches the threshold for that direction.
    """
    if ok == healthy:
        return healthy, 0
    streak += 1
    threshold = rules.unhealthy_threshold if healthy else rules.healthy_threshold
    if streak >= threshold:
        return not healthy, 0
    return healthy, streak


def in_rotation(healthy: Sequence[bool]) -> tuple[bool, ...]:
    """Targets that get traffic: the healthy ones, or all of them when none is (ALB fails open)."""
    if any(healthy):
        return tuple(healthy)
    return tuple(True for _ in healthy)


class LoadBalancer:
    """Probes every target every ``interval_s`` (each at its own phase: ``first_probes``) and
    routes by opinion.

    Every target starts healthy: the deploy begins from a fleet in steady state.
    """

    def __init__(
        self,
        env: simpy.Environment,
        servers: Sequence[Server],
        rules: HealthRules,
        rng: random.Random,
        on_change: Callable[[], None],
    ) -> None:
        self.env = env
        self.servers = list(servers)
        self.rules = rules
        self.healthy = [True for _ in self.servers]
        self._streak = [0 for _ in self.servers]
        self.probes: list[Probe] = []
        self.transitions: list[Transition] = []
        self._waiters: list[tuple[int, simpy.Event]] = []
        self._on_change = on_change
        self._rng = rng  # the balancer's own stream: spread draws shift no other part's
        # Phases drawn in target order so the stream's use never depends on timing.
        for target, phase in enumerate(first_probes(rules, len(self.servers), rng)):
            env.process(self._probe_loop(target, phase))

    def rotation(self) -> tuple[bool, ...]:
        """Which targets requests may be routed to right now."""
        return in_rotation(self.healthy)

    def wait_healthy(self, target: int) -> simpy.Event:
        """An event that fires at the first probe from now on that finds the target serving
        and leaves it marked healthy."""
        event = self.env.event()
        self._waiters.append((target, event))
        return event

    def _probe_loop(self, target: int, phase: float) -> Generator[simpy.Event, Any, None]:
        yield self.env.timeout(phase)
        while True:
            self._probe(target)
            yield self.env.timeout(next_interval(self.rules, self._rng))

    def _probe(self, target: int) -> None:
        answer = self.servers[target].health()
        now = self.env.now
        self.probes.append(Probe(now, target, answer))
        was = self.healthy[target]
        healthy, self._streak[target] = judge(was, self._streak[target], answer == "ok", self.rules)
        if healthy != was:
            self.healthy[target] = healthy
            self.transitions.append(Transition(now, target, healthy))
            self._on_change()
        if healthy and answer == "ok":
            waiting = [w for w in self._waiters if w[0] == target]
            self._waiters = [w for w in self._waiters if w[0] != target]
            for _, event in waiting:
                event.succeed()
