"""What one simulated rolling deploy produced: the deploy's report, the traffic, the servers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from platform_testbed.sim.rollout.balancer import Probe, Transition
from platform_testbed.sim.rollout.deploy import ServerStep
from platform_testbed.sim.rollout.traffic import Segment
from platform_testbed.sim.rollout.watchdog import Repair


@dataclass(frozen=True, slots=True)
class ServerOutcome:
    """One server at the end of the run."""

    name: str
    drifted: bool
    missing: tuple[str, ...]
    force_killed: bool
    bad_gateway: int
    watchdog_repairs: int
    repairs_mid_deploy: int


@dataclass(frozen=True, slots=True)
class Trace:
    """Everything that happened, for plots and per-step tests (not part of the JSON report)."""

    probes: tuple[Probe, ...]
    transitions: tuple[Transition, ...]
    steps: tuple[ServerStep, ...]
    repairs: tuple[Repair, ...]
    segments: tuple[Segment, ...]


@dataclass(frozen=True, slots=True)
class RolloutResult:
    """One run: the deploy's status, what users got, what each server ended up running."""

    scenario: str
    seed: int
    deploy_status: str
    deploy_reason: str
    deploy_started_s: float
    deploy_finished_s: float
    end_s: float
    requests: int
    served: int
    bad_gateway: int
    health_ok: int
    draining_503: int
    servers: tuple[ServerOutcome, ...]
    trace: Trace

    @property
    def answered(self) -> int:
        """Every response in the access log: user requests plus answered health checks."""
        return self.requests + self.health_ok + self.draining_503

    @property
    def non_200(self) -> int:
        """The naive count: every non-200 response, the health endpoint's 503s included."""
        return self.bad_gateway + self.draining_503

    @property
    def silent_breakage(self) -> bool:
        """The deploy reported success while a server is missing a component."""
        return self.deploy_status == "succeeded" and any(s.missing for s in self.servers)

    @property
    def repairs_mid_deploy(self) -> int:
        """Watchdog repairs on a server while the deploy was working on it."""
        return sum(s.repairs_mid_deploy for s in self.servers)

    def summary(self) -> dict[str, Any]:
        """The run as a JSON-ready mapping (times rounded to the millisecond)."""
        return {
            "seed": self.seed,
            "deploy": {
                "status": self.deploy_status,
                "reason": self.deploy_reason,
                "started_s": round(self.deploy_started_s, 3),
                "finished_s": round(self.deploy_finished_s, 3),
            },
            "requests": self.requests,
            "served": self.served,
            "bad_gateway": self.bad_gateway,
            "health_ok": self.health_ok,
            "draining_503": self.draining_503,
            "non_200": self.non_200,
            "answered": self.answered,
            # Both rates are shares of the whole access log, so they compare directly.
            "non_200_rate": _rate(self.non_200, self.answered),
            "bad_gateway_rate": _rate(self.bad_gateway, self.answered),
            "silent_breakage": self.silent_breakage,
            "repairs_mid_deploy": self.repairs_mid_deploy,
            "servers": [
                {
                    "name": s.name,
                    "drifted": s.drifted,
                    "missing": list(s.missing),
                    "force_killed": s.force_killed,
                    "bad_gateway": s.bad_gateway,
                    "watchdog_repairs": s.watchdog_repairs,
                    "repairs_mid_deploy": s.repairs_mid_deploy,
                }
                for s in self.servers
            ],
        }


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0
