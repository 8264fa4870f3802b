"""Bounded by construction: loops have floors, rollouts estimate their work before they start."""

from __future__ import annotations

import time

import pytest

from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.rollout.config import load, shipped
from platform_testbed.sim.rollout.world import (
    MAX_ROLLOUT_EVENTS,
    ROLLOUT_EVENTS_ENV,
    check_work,
    estimate_work,
    run,
)

#: The issue's world: every value inside its documented limit, a billion watchdog looks.
HUGE = ["fleet.servers=100", "watchdog.interval_s=0.01", "settle_s=86400"]


@pytest.mark.parametrize(
    ("key", "value", "floor"),
    [
        ("balancer.interval_s", "1e-9", r"0\.1 s: each target is probed once per interval"),
        ("balancer.interval_s", "0.001", r"0\.1 s: each target is probed once per interval"),
        ("balancer.interval_s", "-1", r"0\.1 s"),
        ("watchdog.interval_s", "0.001", r"0\.01 s: each server's watchdog looks once"),
    ],
)
def test_every_loop_interval_has_a_floor_with_its_reason(key: str, value: str, floor: str) -> None:
    """An interval below its floor is refused at load, naming the field, the floor and why."""
    with pytest.raises(BadInput, match=rf"{key}: must be at least {floor}"):
        load("fixed", [f"{key}={value}"])


def test_the_floors_themselves_are_accepted() -> None:
    """The floor is a floor, not a bound just above it."""
    scenario = load("fixed", ["balancer.interval_s=0.1", "watchdog.interval_s=0.01"])
    assert scenario.balancer.interval_s == 0.1
    assert scenario.watchdog.interval_s == 0.01


def test_a_rollout_past_the_event_limit_is_refused_before_it_starts() -> None:
    """The issue's 25 s world is refused at once, naming the estimate, the limit and its variable."""
    scenario = load("original", HUGE)
    started = time.perf_counter()
    with pytest.raises(BadInput, match=rf"past the limit of {MAX_ROLLOUT_EVENTS:,} .*"
                                       rf"set {ROLLOUT_EVENTS_ENV}\)$") as refused:
        run(scenario, 0)
    assert time.perf_counter() - started < 1.0
    assert "watchdog looks over" in str(refused.value)


def test_the_estimate_counts_each_loop_per_server_over_the_horizon() -> None:
    """Probes = servers x horizon / interval, watchdog looks likewise, requests = rps x horizon."""
    scenario = load("original", HUGE)
    estimate = estimate_work(scenario)
    assert estimate.horizon_s > 86_400
    assert estimate.watchdog_looks == pytest.approx(100 * estimate.horizon_s / 0.01)
    assert estimate.probes == pytest.approx(100 * estimate.horizon_s / scenario.balancer.interval_s)
    assert estimate.requests == pytest.approx(scenario.traffic.rps * estimate.horizon_s)
    off = load("original", [*HUGE, "watchdog.enabled=false"])
    assert estimate_work(off).watchdog_looks == 0


@pytest.mark.parametrize("name", sorted(shipped()))
def test_the_estimate_is_not_below_what_a_shipped_rollout_does(name: str) -> None:
    """An independent count (the probes the run recorded, its end) stays within the estimate."""
    scenario = load(name)
    estimate = estimate_work(scenario)
    result = run(scenario, 0)
    assert result.end_s <= estimate.horizon_s
    assert len(result.trace.probes) <= estimate.probes
    assert estimate.events < MAX_ROLLOUT_EVENTS / 100  # far inside the limit


def test_the_event_limit_can_be_raised_or_lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    """TESTBED_MAX_ROLLOUT_EVENTS moves the limit; a bad value is refused by the env rule."""
    scenario = load("original")
    monkeypatch.setenv(ROLLOUT_EVENTS_ENV, "10")
    with pytest.raises(BadInput, match=r"past the limit of 10 "):
        check_work(scenario)
    monkeypatch.setenv(ROLLOUT_EVENTS_ENV, "nan")
    with pytest.raises(BadInput, match=rf"^{ROLLOUT_EVENTS_ENV}: must be a whole number from 1"):
        check_work(scenario)
