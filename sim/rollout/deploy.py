"""The rolling deploy: drain, stop, start, wait healthy, one server at a time; then verify."""

from __future__ import annotations

import random
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import simpy

from platform_testbed.sim.rollout.balancer import LoadBalancer
from platform_testbed.sim.rollout.drain import stop_plan
from platform_testbed.sim.rollout.server import FULL_COMPOSE, Server

DeployStatus = Literal["running", "succeeded", "failed"]


@dataclass(frozen=True, slots=True)
class DeployRules:
    """The deploy job's numbers and switches."""

    at_s: float
    serve_after_drain_s: float
    shutdown_s: float
    stop_grace_period_s: float
    start_min_s: float
    start_max_s: float
    healthy_timeout_s: float
    lock: bool
    verify: bool


@dataclass(frozen=True, slots=True)
class ServerStep:
    """When each phase of one server's update happened (seconds of simulated time)."""

    server: str
    drain_at_s: float
    stop_listening_at_s: float
    exited_at_s: float
    force_killed: bool
    compose_up_at_s: float
    healthy_at_s: float | None


@dataclass
class RollingDeploy:
    """Drives the deploy; its status and steps are read after the run."""

    env: simpy.Environment
    servers: Sequence[Server]
    balancer: LoadBalancer
    rules: DeployRules
    release: str
    rng: random.Random
    status: DeployStatus = "running"
    reason: str = ""
    started_s: float | None = None
    finished_s: float | None = None
    active: Server | None = None
    steps: list[ServerStep] = field(default_factory=list)

    def start_delay(self, rng: random.Random) -> float:
        """How long containers take to come up (image pull, boot) after ``compose up``."""
        return rng.uniform(self.rules.start_min_s, self.rules.start_max_s)

    def deploying(self, server: Server) -> bool:
        """True while the deploy is working on this server."""
        return self.active is server

    def run(self) -> Generator[simpy.Event, Any, None]:
        """The deploy job from start to its reported status."""
        yield self.env.timeout(self.rules.at_s)
        self.started_s = self.env.now
        for target, server in enumerate(self.servers):
            request = server.lock.request() if self.rules.lock else None
            if request is not None:
                yield request
            self.active = server
            step = yield from self._update(target, server)
            self.active = None
            if request is not None:
                server.lock.release(request)
            self.steps.append(step)
            if step.healthy_at_s is None:
                timeout = self.rules.healthy_timeout_s
                self._finish("failed", f"{server.name} not healthy {timeout:g} s after start")
                return
        if self.rules.verify:
            broken = [
                f"{s.name} missing {', '.join(m)}"
                for s in self.servers
                if (m := s.missing(self.release))
            ]
            if broken:
                self._finish("failed", "verification: " + "; ".join(broken))
                return
            self._finish("succeeded", "verified all components on every server")
            return
        self._finish("succeeded", "every command returned (not verified)")

    def _finish(self, status: DeployStatus, reason: str) -> None:
        self.status = status
        self.reason = reason
        self.finished_s = self.env.now

    def _update(self, target: int, server: Server) -> Generator[simpy.Event, Any, ServerStep]:
        env = self.env
        rules = self.rules
        drain_at = env.now
        plan = stop_plan(rules.serve_after_drain_s, rules.shutdown_s, rules.stop_grace_period_s)
        server.begin_drain()
        yield env.timeout(plan.stop_listening_s)
        server.stop_listening()
        yield env.timeout(plan.exit_s - plan.stop_listening_s)
        server.stop_all()
        exited_at = env.now
        server.release = self.release
        server.write_compose(FULL_COMPOSE)
        server.compose_up(self.release, self.start_delay(self.rng))
        healthy = self.balancer.wait_healthy(target)
        outcome = yield healthy | env.timeout(rules.healthy_timeout_s)
        return ServerStep(
            server=server.name,
            drain_at_s=drain_at,
            stop_listening_at_s=drain_at + plan.stop_listening_s,
            exited_at_s=exited_at,
            force_killed=plan.force_killed,
            compose_up_at_s=exited_at,
            healthy_at_s=env.now if healthy in outcome else None,
        )
