"""The shipped scenarios reproduce the incident and its fixes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from platform_testbed.checks import CountCheck, TimestampCheck, make_check
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish import world

ROOT = Path(__file__).resolve().parent.parent


def _run(name: str, check_cls, sets: list[str] | None = None, seed: int | None = None):
    loaded = scenario.load(name, sets)
    check = check_cls(**loaded.check.model_dump())
    return world.run(loaded, loaded.seed if seed is None else seed, check)


def test_sept25_count_misses_and_the_reconciler_fails_it_late():
    """sept25: count passes the crash loop, the reconciler fails it later, the site serves 404."""
    result = _run("sept25-crash-loop", CountCheck)
    assert result.outcome == "missed"
    assert result.rollback is None
    assert result.late_failure_at_s is not None
    assert result.late_failure_at_s > result.decided_at_s
    assert result.site.down_s > 0
    assert result.site.not_found > 0


def test_sept25_timestamp_catches_and_restores_with_no_downtime():
    """sept25: timestamp fails the publish on time, the previous image is back, 0 s of 404."""
    result = _run("sept25-crash-loop", TimestampCheck)
    assert result.outcome == "caught"
    assert result.rollback == "restored"
    assert result.late_failure_at_s is None
    assert result.site.down_s == 0
    assert result.site.not_found == 0


def test_sept25_count_misses_because_the_full_window_holds_the_same_mix():
    """At count's looks 2 and 3 the five-event window is full of post-publish events, same count."""
    result = _run("sept25-crash-loop", CountCheck)
    look2, look3 = (r.look.machines[0] for r in result.looks[-2:])
    publish_ms = scenario.load("sept25-crash-loop").platform.epoch_ms + 30_000
    assert all(e.timestamp >= publish_ms for e in look2.events + look3.events)
    assert len(look2.events) == len(look3.events) == 5
    assert result.looks[-1].dropped[0] > result.looks[-2].dropped[0]
    assert sum(1 for _ in look2.crashes_since(publish_ms)) == sum(
        1 for _ in look3.crashes_since(publish_ms)
    )


def test_sept25_with_delete_rollback_is_caught_but_the_site_goes_down():
    """The legacy delete rollback fails on time yet deletes the working backend: 404s follow."""
    result = _run("sept25-crash-loop", TimestampCheck, ["publish.rollback=delete"])
    assert result.outcome == "caught"
    assert result.rollback == "deleted"
    assert result.site.down_s > 0


@pytest.mark.parametrize("check_cls", [CountCheck, TimestampCheck])
def test_healthy_release_is_passed_by_both(check_cls):
    """A release that stays up is passed and the site never serves 404."""
    result = _run("healthy-release", check_cls)
    assert result.outcome == "passed"
    assert result.site.down_s == 0


@pytest.mark.parametrize("check_cls", [CountCheck, TimestampCheck])
def test_gives_up_is_caught_by_both_through_layer_2(check_cls):
    """When the platform exhausts max_retries, both checks fail the publish on the gave-up rule."""
    result = _run("gives-up", check_cls)
    assert result.outcome == "caught"
    assert result.verdict.layer == "gave-up"
    assert result.rollback == "restored"


@pytest.mark.parametrize("name", sorted(scenario.shipped()))
def test_shipped_scenario_expectations_hold_over_seeds(name):
    """Every shipped scenario's [expect] holds for its own seed and the next four."""
    loaded = scenario.load(name)
    for seed in range(loaded.seed, loaded.seed + 5):
        for check_name, expected in loaded.expect.items():
            check = make_check(check_name, loaded.check.model_dump())
            outcome = world.run(loaded, seed, check).outcome
            assert outcome == expected, (name, seed, check_name)


@pytest.mark.parametrize(
    "script", [ROOT / "scenarios" / f"{name}.py" for name in sorted(scenario.shipped())]
)
def test_scenario_script_output_matches_its_saved_out(script: Path):
    """Like SimPy's examples: each scenario script's printed result is diffed against its .out."""
    expected = script.with_suffix(".out").read_text(encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected


def test_sleep_alone_changes_no_verdict_when_the_pipeline_starts_the_machine():
    """sleeping-api-crash-on-boot: asleep or awake before the publish, every check's outcome is
    the same, but flyctl-smoke's: flyctl skips a machine stopped before the update (issue 19)."""
    loaded = scenario.load("sleeping-api-crash-on-boot")
    awake = scenario.load("sleeping-api-crash-on-boot", ["previous.asleep=false"])
    for name in ("count", "timestamp", "min-healthy-time", "circuit-breaker"):
        for seed in range(3, 8):
            check = make_check(name, loaded.check.model_dump())
            assert world.run(loaded, seed, check).outcome == world.run(awake, seed, check).outcome


def test_flyctl_leaves_a_sleeping_machine_unchecked_and_autostart_wakes_it_into_a_crash_loop():
    """sleeping-api-flyctl: flyctl-smoke skips the stopped machine and passes at once; it then crash-loops."""
    loaded = scenario.load("sleeping-api-flyctl")
    check = make_check("flyctl-smoke", loaded.check.model_dump())
    result = world.run(loaded, loaded.seed, check, trace=True)
    assert result.outcome == "missed"
    assert result.decided_at_s == 0.0
    assert result.trace is not None
    events = result.trace.machines[0].events
    publish_ms = loaded.publish_started_ms
    assert any(e.is_crash and e.timestamp > publish_ms for e in events)


def test_the_three_publishes_series_tallies_late_failures_per_check():
    """sept25-three-publishes: count lets all three publishes go live and fail late; timestamp none."""
    from platform_testbed.sim.publish.series import run_series  # noqa: PLC0415

    result = run_series(str(ROOT / "scenarios" / "series" / "sept25-three-publishes.toml"),
                        ["count", "timestamp"])
    assert result.outcomes("timestamp") == ["caught", "caught", "caught"]
    assert result.outcomes("count") == ["missed", "missed", "missed"]
    assert result.late_failures("count") == 3
    assert result.late_failures("timestamp") == 0
    assert not result.failed_expectations
