"""Whole-run properties over generated timings, traffic and seeds."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from platform_testbed.checks.timing import all_hold, check_timing
from platform_testbed.sim.rollout import RolloutScenario, run
from platform_testbed.sim.rollout.config import validate

# Each example is a whole simulated deploy (a few ms); the profile decides how many.
SIM = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

seeds = st.integers(0, 2**32 - 1)


def _scenario(raw: dict[str, Any]) -> RolloutScenario:
    return validate({"name": "generated", **raw}, "generated")


@st.composite
def side_settings(draw: st.DrawFn) -> dict[str, Any]:
    """Watchdog, compose source, lock and verification: anything goes."""
    return {
        "watchdog": {
            "enabled": draw(st.booleans()),
            "interval_s": draw(st.floats(5, 120)),
            "consecutive_failures": draw(st.integers(1, 6)),
            "lock": draw(st.booleans()),
        },
        "compose": {
            "source": draw(st.sampled_from(["published", "per-server"])),
            "drift_probability": draw(st.floats(0, 1)),
        },
    }


@st.composite
def sound_configs(draw: st.DrawFn) -> dict[str, Any]:
    """Configurations that satisfy all the timing invariants (and have 2+ servers), under
    either check schedule, with or without HAProxy's spread-checks."""
    interval = draw(st.floats(1, 30))
    spread = draw(st.one_of(st.just(0.0), st.floats(0, 50)))
    longest = interval * (1 + spread / 100)  # the rules' intervals at their longest
    unhealthy = draw(st.integers(1, 5))
    healthy = draw(st.integers(1, max(1, int(60 // longest))))
    # A millisecond of margin: below that, float sums of probe times decide, not the rule.
    serve = longest * unhealthy + draw(st.floats(0.001, 30))
    shutdown = draw(st.floats(0, 20))
    start_min = draw(st.floats(0, 60))
    return {
        "fleet": {"servers": draw(st.integers(2, 5))},
        "balancer": {
            "interval_s": interval,
            "unhealthy_threshold": unhealthy,
            "healthy_threshold": healthy,
            "check_schedule": draw(st.sampled_from(["random", "staggered"])),
            "spread_checks_pct": spread,
        },
        "deploy": {
            "serve_after_drain_s": serve,
            "shutdown_s": shutdown,
            "stop_grace_period_s": serve + shutdown + draw(st.floats(0, 30)),
            "start_min_s": start_min,
            "start_max_s": start_min + draw(st.floats(0, 60)),
            "lock": draw(st.booleans()),
            "verify": draw(st.booleans()),
        },
        "traffic": {"rps": draw(st.floats(0.5, 5))},
        **draw(side_settings()),
    }


@SIM
@given(raw=sound_configs(), seed=seeds)
@example(
    raw={
        "fleet": {"servers": 3},
        "balancer": {"interval_s": 5, "unhealthy_threshold": 2, "healthy_threshold": 2},
        "deploy": {"serve_after_drain_s": 10.001, "shutdown_s": 5, "stop_grace_period_s": 15.001},
    },
    seed=0,
)
def test_configs_satisfying_the_invariants_give_no_502(raw: dict[str, Any], seed: int) -> None:
    """Whenever the timing invariants hold, a deploy produces zero 502s and no kill."""
    scenario = _scenario(raw)
    assert all_hold(check_timing(scenario.drain_timing(), scenario.timing.max_reheal_s))
    result = run(scenario, seed)
    note(f"steps={result.trace.steps}")
    assert result.bad_gateway == 0
    assert not any(s.force_killed for s in result.servers)


@st.composite
def drain_too_short(draw: st.DrawFn) -> dict[str, Any]:
    """Configs whose server stops listening before the balancer's earliest possible detection.

    ``serve + margin <= interval x (unhealthy - 1)``: the first failed probe may come right
    after the drain starts, so this is the only breach that guarantees a 502 window of at
    least ``margin`` on every server, whatever the probe phase. The margin is sized for
    about 12 expected 502s per server, and containers take longer than that to come back.
    """
    servers = draw(st.integers(2, 4))
    rps = draw(st.floats(1, 5))
    margin = 12 * servers / rps
    unhealthy = draw(st.integers(2, 5))
    serve = draw(st.floats(0, 10))
    interval = (serve + margin + draw(st.floats(0, 20))) / (unhealthy - 1)
    return {
        "fleet": {"servers": servers},
        "balancer": {"interval_s": interval, "unhealthy_threshold": unhealthy},
        "deploy": {
            "serve_after_drain_s": serve,
            "shutdown_s": 0,
            "stop_grace_period_s": serve,
            "start_min_s": margin + 1,
            "start_max_s": margin + 60,
        },
        "traffic": {"rps": rps},
        **draw(side_settings()),
    }


@SIM
@given(raw=drain_too_short(), seed=seeds)
def test_breaking_the_drain_invariant_by_a_margin_gives_502s(
    raw: dict[str, Any], seed: int
) -> None:
    """When serving stops a margin before the earliest detection, some requests get 502."""
    scenario = _scenario(raw)
    assert not check_timing(scenario.drain_timing())[0].ok
    result = run(scenario, seed)
    assert result.bad_gateway > 0


@st.composite
def locked_configs(draw: st.DrawFn) -> dict[str, Any]:
    """Any timings, with the deploy and the watchdog sharing the lock; drift as likely as not."""
    interval = draw(st.floats(1, 30))
    serve = draw(st.floats(0, 60))
    start_min = draw(st.floats(0, 60))
    return {
        "fleet": {"servers": draw(st.integers(1, 4))},
        "balancer": {
            "interval_s": interval,
            "unhealthy_threshold": draw(st.integers(1, 5)),
            "healthy_threshold": draw(st.integers(1, 5)),
        },
        "deploy": {
            "serve_after_drain_s": serve,
            "shutdown_s": draw(st.floats(0, 20)),
            "stop_grace_period_s": draw(st.floats(0, 90)),
            "start_min_s": start_min,
            "start_max_s": start_min + draw(st.floats(0, 120)),
            "lock": True,
            "verify": draw(st.booleans()),
        },
        "watchdog": {
            "interval_s": draw(st.floats(1, 120)),
            "consecutive_failures": draw(st.integers(1, 6)),
            "lock": True,
            "repair_s": draw(st.floats(0, 30)),
        },
        "compose": {"source": "per-server", "drift_probability": draw(st.floats(0.5, 1))},
        "traffic": {"rps": 0},
    }


@SIM
@given(raw=locked_configs(), seed=seeds)
def test_watchdog_sharing_the_lock_never_changes_a_server_mid_deploy(
    raw: dict[str, Any], seed: int
) -> None:
    """With the shared lock, no watchdog repair lands while the deploy works on that server."""
    result = run(_scenario(raw), seed)
    assert result.repairs_mid_deploy == 0
    assert not result.silent_breakage
    for step in result.trace.steps:
        end = step.healthy_at_s if step.healthy_at_s is not None else result.deploy_finished_s
        assert not any(
            r.server == step.server and step.drain_at_s <= r.at_s <= end
            for r in result.trace.repairs
        )


@st.composite
def patient_watchdogs(draw: st.DrawFn) -> dict[str, Any]:
    """No lock, but a threshold whose span outlasts the server's whole failing window."""
    serve = draw(st.floats(0, 30))
    shutdown = draw(st.floats(0, 10))
    start_max = draw(st.floats(0, 120))
    failing_s = serve + shutdown + start_max
    failures = draw(st.integers(2, 6))
    interval = failing_s / (failures - 1) + draw(st.floats(0.01, 60))
    return {
        "fleet": {"servers": draw(st.integers(1, 4))},
        "balancer": {"interval_s": 5, "unhealthy_threshold": 2, "healthy_threshold": 2},
        "deploy": {
            "serve_after_drain_s": serve,
            "shutdown_s": shutdown,
            "stop_grace_period_s": serve + shutdown,
            "start_min_s": 0,
            "start_max_s": start_max,
        },
        "watchdog": {"interval_s": interval, "consecutive_failures": failures, "lock": False},
        "compose": {"source": "per-server", "drift_probability": 1},
        "traffic": {"rps": 0},
    }


@SIM
@given(raw=patient_watchdogs(), seed=seeds)
def test_watchdog_threshold_longer_than_the_drain_never_acts_mid_deploy(
    raw: dict[str, Any], seed: int
) -> None:
    """Without the lock, failures-in-a-row spanning more than the failing window suffice."""
    result = run(_scenario(raw), seed)
    assert result.repairs_mid_deploy == 0
    assert not result.silent_breakage


@SIM
@given(seed=seeds)
def test_one_failure_and_no_lock_does_repair_mid_deploy(seed: int) -> None:
    """The original watchdog (1 failure, no lock, every 60 s) fires during a 150 s-long deploy."""
    raw = {
        "deploy": {"start_min_s": 130, "start_max_s": 140},
        "watchdog": {"interval_s": 60, "consecutive_failures": 1, "lock": False},
        "traffic": {"rps": 0},
    }
    result = run(_scenario(raw), seed)
    assert all(s.repairs_mid_deploy > 0 for s in result.servers)


@SIM
@given(raw=sound_configs(), seed=seeds)
def test_same_config_and_seed_give_the_same_run(raw: dict[str, Any], seed: int) -> None:
    """Determinism: two runs of a generated config with one seed agree in every field."""
    scenario = _scenario(raw)
    first, second = run(scenario, seed), run(scenario, seed)
    assert first.summary() == second.summary()
    assert first.trace == second.trace
