"""An ALB-like load balancer: periodic health checks, thresholds, routing to healthy targets."""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

import simpy

from platform_testbed.sim.rollout.server import HealthAnswer, Server


@dataclass(frozen=True, slots=True)
class HealthRules:
    """How often the balancer probes and how many results in a row flip its opinion."""

    interval_s: float
    unhealthy_threshold: int
    healthy_threshold: int


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
    """Probes every target every ``interval_s`` (each at its own phase) and routes by opinion.

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
        # Phases drawn in target order so the stream's use never depends on timing.
        phases = [rng.uniform(0, rules.interval_s) for _ in self.servers]
        for target, phase in enumerate(phases):
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
            yield self.env.timeout(self.rules.interval_s)

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
