"""Rollout scenarios: TOML validated into typed settings, with ``--set`` overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from platform_testbed.checks.timing import DEFAULT_MAX_REHEAL_S, DrainTiming
from platform_testbed.sim.config.numbers import Seed, Table
from platform_testbed.sim.config.scenario import scenarios_dir
from platform_testbed.sim.config.settings import load_settings, validated
from platform_testbed.sim.config.shipped import shipped_rollouts


class _Table(Table, BaseModel):  # Table: no true for a number, no "yes" for true
    # Times and counts must be finite: inf or NaN would make a rollout run without end.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, allow_inf_nan=False)


#: The longest any rollout time may be (seconds): a day. Assumed: no deploy step or health
#: check interval of interest is longer, and it keeps every run's simulated span bounded.
DAY_S = 86_400.0
#: The shortest watchdog interval (seconds). Assumed: no self-healing job polls faster than
#: every 10 ms; microsecond intervals make a run's events grow without useful bound.
MIN_WATCHDOG_INTERVAL_S = 0.01
#: The shortest health-check interval (seconds): each target is probed once per interval,
#: so the interval drives the balancer's loop and 1e-9 meant a billion probes a second
#: (0.001 took 30 s). Not public for Fly: assumed. Public floors are far above it: AWS
#: ALB's HealthCheckIntervalSeconds is 5 to 300, a Kubernetes probe's periodSeconds at
#: least 1; 100 ms leaves room to study probes faster than any of them.
MIN_BALANCER_INTERVAL_S = 0.1


def _floor(value: float, floor: float, why: str) -> float:
    """``value`` if it is at least ``floor``; else the rule and its reason (a loop's interval)."""
    if value < floor:
        raise ValueError(f"must be at least {floor:g} s: {why}, and a shorter interval "
                         "makes the run's events grow without useful bound")
    return value


class FleetTable(_Table):
    """``[fleet]``: the servers behind the balancer."""

    servers: int = Field(3, ge=1, le=100)
    #: How long a server keeps an idle keep-alive connection open. Not public for the
    #: write-up's servers: assumed 75 s, nginx's default ``keepalive_timeout``
    #: (nginx.org, ngx_http_core_module). Only the keep-alive invariant reads it: the model
    #: routes requests, not connections.
    keepalive_timeout_s: float = Field(75.0, gt=0, le=DAY_S)


class BalancerTable(_Table):
    """``[balancer]``: target health checks; the defaults are AWS ALB's (30 s, 2, 5)."""

    interval_s: float = Field(30.0, le=3600)  # its floor: _interval_floor
    unhealthy_threshold: int = Field(2, ge=1, le=100)
    healthy_threshold: int = Field(5, ge=1, le=100)
    #: When each target's checks fall (sim.rollout.balancer.first_probes): ``random``, a
    #: uniform phase per target (the model's own, and the default); ``staggered``,
    #: HAProxy's: target k of n first at ``interval_s x k / n``, then every interval.
    check_schedule: Literal["random", "staggered"] = "random"
    #: HAProxy's ``spread-checks`` (0..50 %): each interval varied by up to +/- this
    #: percent of it. 0 (HAProxy's default): exact intervals.
    spread_checks_pct: float = Field(0.0, ge=0, le=50)
    #: How long the balancer keeps an idle connection to a target: ALB's default
    #: connection idle timeout, 60 s (Elastic Load Balancing, "Edit attributes for your
    #: Application Load Balancer"). Only the keep-alive invariant reads it.
    idle_timeout_s: float = Field(60.0, gt=0, le=DAY_S)

    @field_validator("interval_s")
    @classmethod
    def _interval_floor(cls, value: float) -> float:
        return _floor(value, MIN_BALANCER_INTERVAL_S, "each target is probed once per interval")


#: AWS Application Load Balancer target-group defaults.
ALB_PRESET = BalancerTable()


class DeployTable(_Table):
    """``[deploy]``: the rolling deploy, one server at a time."""

    at_s: float = Field(120.0, ge=0, le=DAY_S)
    serve_after_drain_s: float = Field(5.0, ge=0, le=DAY_S)
    shutdown_s: float = Field(3.0, ge=0, le=DAY_S)
    stop_grace_period_s: float = Field(10.0, ge=0, le=DAY_S)
    start_min_s: float = Field(20.0, ge=0, le=DAY_S)
    start_max_s: float = Field(60.0, ge=0, le=DAY_S)
    healthy_timeout_s: float = Field(900.0, gt=0, le=DAY_S)
    lock: bool = False
    verify: bool = False

    @field_validator("start_max_s")
    @classmethod
    def _start_range(cls, value: float, info: ValidationInfo) -> float:
        low = info.data.get("start_min_s")
        if low is not None and value < low:
            raise ValueError(f"must be at least start_min_s ({low:g})")
        return value


class WatchdogTable(_Table):
    """``[watchdog]``: the per-server self-healing job."""

    enabled: bool = True
    interval_s: float = Field(60.0, le=DAY_S)  # its floor: _interval_floor
    consecutive_failures: int = Field(1, ge=1, le=1000)
    lock: bool = False
    repair_s: float = Field(2.0, ge=0, le=DAY_S)

    @field_validator("interval_s")
    @classmethod
    def _interval_floor(cls, value: float) -> float:
        return _floor(value, MIN_WATCHDOG_INTERVAL_S, "each server's watchdog looks once per interval")


class ComposeTable(_Table):
    """``[compose]``: where each server's compose file comes from."""

    source: Literal["published", "per-server"] = "published"
    #: Per-server copies only: the chance that a server's copy has lost the gateway.
    drift_probability: float = Field(0.0, ge=0, le=1)


class TrafficTable(_Table):
    """``[traffic]``: open-loop user requests through the balancer."""

    rps: float = Field(2.0, ge=0, le=10_000)


class TimingTable(_Table):
    """``[timing]``: bounds the invariants are checked against."""

    max_reheal_s: float = Field(DEFAULT_MAX_REHEAL_S, gt=0, le=DAY_S)


class ExpectTable(_Table):
    """``[expect]``: what the runs must show; ``testbed rollout`` exits 1 when it does not."""

    #: ``zero``: no run has a 502; ``every-run``: each run has at least one.
    bad_gateway: Literal["zero", "every-run"] | None = None
    #: ``never``: no run reports success with a component missing.
    silent_breakage: Literal["never"] | None = None


class RolloutScenario(_Table):
    """One rolling deploy: fleet, balancer, deploy, watchdog, compose source, traffic."""

    name: str
    description: str = ""
    seed: Seed = 0
    settle_s: float = Field(60.0, ge=0, le=DAY_S)
    fleet: FleetTable = FleetTable()
    balancer: BalancerTable = BalancerTable()
    deploy: DeployTable = DeployTable()
    watchdog: WatchdogTable = WatchdogTable()
    compose: ComposeTable = ComposeTable()
    traffic: TrafficTable = TrafficTable()
    timing: TimingTable = TimingTable()
    expect: ExpectTable = ExpectTable()

    def drain_timing(self) -> DrainTiming:
        """The numbers the timing invariants are about."""
        return DrainTiming(
            interval_s=self.balancer.interval_s,
            unhealthy_threshold=self.balancer.unhealthy_threshold,
            healthy_threshold=self.balancer.healthy_threshold,
            serve_after_drain_s=self.deploy.serve_after_drain_s,
            shutdown_s=self.deploy.shutdown_s,
            stop_grace_period_s=self.deploy.stop_grace_period_s,
            keepalive_timeout_s=self.fleet.keepalive_timeout_s,
            idle_timeout_s=self.balancer.idle_timeout_s,
            spread_checks_pct=self.balancer.spread_checks_pct,
        )


def rollouts_dir() -> Path:
    """Where the shipped rollout scenarios live (under ``TESTBED_SCENARIOS`` if set)."""
    return scenarios_dir() / "rollouts"


def shipped() -> dict[str, Path]:
    """The shipped rollout scenarios by name, sorted."""
    return shipped_rollouts()


def validate(raw: dict[str, Any], source: str) -> RolloutScenario:
    """Validate a raw mapping, or raise BadInput with one line naming the field and rule."""
    return validated(RolloutScenario, raw, source)


def load(name_or_path: str, sets: list[str] | None = None) -> RolloutScenario:
    """Load a shipped rollout scenario by name, or a TOML file by path, then apply overrides."""
    return load_settings(RolloutScenario, name_or_path, shipped, "rollout scenario", sets or ())
