"""The drain timing invariants: pure arithmetic, each reporting the numbers that break it."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from platform_testbed.checks.timing import (
    DEFAULT_MAX_REHEAL_S,
    KEEPALIVE_RULE,
    DrainTiming,
    TimingResult,
    all_hold,
    check_timing,
    drain_fits_grace,
    drain_outlasts_detection,
    keepalive_outlasts_idle,
    reheal_is_short,
)

FIXED = DrainTiming(
    interval_s=5,
    unhealthy_threshold=2,
    healthy_threshold=2,
    serve_after_drain_s=15,
    shutdown_s=5,
    stop_grace_period_s=30,
)
ORIGINAL = DrainTiming(
    interval_s=30,
    unhealthy_threshold=2,
    healthy_threshold=5,
    serve_after_drain_s=5,
    shutdown_s=3,
    stop_grace_period_s=10,
)


def test_fixed_configuration_satisfies_all_three() -> None:
    """The write-up's fixed numbers (5 s x 2, 15 s of serving, 30 s grace) hold every rule."""
    results = check_timing(FIXED)
    assert [r.ok for r in results] == [True, True, True]
    assert all_hold(results)


def test_original_configuration_breaks_drain_and_reheal() -> None:
    """The original numbers (5 s of serving, ALB 30 s x 2, healthy 5) break two rules."""
    results = check_timing(ORIGINAL)
    assert [r.ok for r in results] == [False, False, True]
    assert not all_hold(results)


def test_check_timing_order_and_rules() -> None:
    """check_timing gives drain, re-heal, grace in that order, each the result of its own rule."""
    # A configuration that breaks exactly one rule at a time tells the results apart.
    only_drain = DrainTiming(5, 2, 2, serve_after_drain_s=10, shutdown_s=5, stop_grace_period_s=30)
    only_reheal = DrainTiming(5, 2, 20, serve_after_drain_s=15, shutdown_s=5, stop_grace_period_s=30)
    only_grace = DrainTiming(5, 2, 2, serve_after_drain_s=15, shutdown_s=20, stop_grace_period_s=30)
    assert [r.ok for r in check_timing(only_drain)] == [False, True, True]
    assert [r.ok for r in check_timing(only_reheal)] == [True, False, True]
    assert [r.ok for r in check_timing(only_grace)] == [True, True, False]
    assert [r.name for r in check_timing(FIXED)] == [
        "drain outlasts detection",
        "re-healthy time is short",
        "drain fits the stop grace period",
    ]
    # Each result carries the text of its own inequality (named here, not from the module).
    drain, reheal, grace = (r.rule for r in check_timing(FIXED))
    assert "serve_after_drain_s >" in drain
    assert "unhealthy_threshold" in drain
    assert "healthy_threshold <= max_reheal_s" in reheal
    assert "shutdown_s <= stop_grace_period_s" in grace


def test_drain_rule_reports_detection_and_margin() -> None:
    """A broken drain rule names the serving time, the detection time and the negative margin."""
    result = drain_outlasts_detection(5, 30, 2)
    assert not result.ok
    assert dict(result.numbers) == {
        "serve_after_drain_s": 5,
        "interval_s": 30,
        "unhealthy_threshold": 2,
        "detection_s": 60,
        "margin_s": -55,
    }


def test_drain_equal_to_detection_is_broken() -> None:
    """Serving exactly interval x threshold is not enough: the rule is strict."""
    assert not drain_outlasts_detection(10, 5, 2).ok
    assert drain_outlasts_detection(10.001, 5, 2).ok


def test_drain_rule_uses_the_threshold_not_just_the_interval() -> None:
    """Serving longer than one interval but not interval x threshold breaks the rule."""
    assert not drain_outlasts_detection(12, 5, 3).ok
    assert drain_outlasts_detection(16, 5, 3).ok


def test_reheal_rule_reports_its_numbers() -> None:
    """The re-heal rule reports interval, threshold, the product and the bound."""
    result = reheal_is_short(30, 5)
    assert not result.ok
    assert dict(result.numbers) == {
        "interval_s": 30,
        "healthy_threshold": 5,
        "reheal_s": 150,
        "max_reheal_s": DEFAULT_MAX_REHEAL_S,
    }


def test_reheal_bound_is_inclusive_and_a_parameter() -> None:
    """Re-healing in exactly the bound is fine; one step over is not; the bound can be set."""
    assert reheal_is_short(30, 2, max_reheal_s=60).ok
    assert not reheal_is_short(30, 2, max_reheal_s=59.9).ok
    assert reheal_is_short(30, 5, max_reheal_s=150).ok
    assert DEFAULT_MAX_REHEAL_S == 60.0


def test_grace_rule_reports_its_numbers() -> None:
    """The grace rule reports serving, shutdown, their sum and the grace period."""
    result = drain_fits_grace(15, 20, 30)
    assert not result.ok
    assert dict(result.numbers) == {
        "serve_after_drain_s": 15,
        "shutdown_s": 20,
        "needed_s": 35,
        "stop_grace_period_s": 30,
    }


def test_grace_bound_is_inclusive() -> None:
    """Drain plus shutdown may use the whole grace period, not a moment more."""
    assert drain_fits_grace(15, 15, 30).ok
    assert not drain_fits_grace(15, 15.001, 30).ok
    assert not drain_fits_grace(30.5, 0, 30).ok


def test_check_timing_passes_the_reheal_bound_through() -> None:
    """check_timing checks re-heal against the bound it is given."""
    assert not check_timing(FIXED, max_reheal_s=9)[1].ok
    assert check_timing(ORIGINAL, max_reheal_s=150)[1].ok


def test_explain_is_one_line_with_verdict_rule_and_numbers() -> None:
    """explain() starts with the verdict and lists every number."""
    text = drain_outlasts_detection(5, 30, 2).explain()
    assert text == (
        "BROKEN: drain outlasts detection: serve_after_drain_s > interval_s x unhealthy_threshold "
        "(serve_after_drain_s=5, interval_s=30, unhealthy_threshold=2, detection_s=60, "
        "margin_s=-55)"
    )
    assert TimingResult("n", True, "r", (("a", 1.5),)).explain() == "ok: n: r (a=1.5)"


@settings(deadline=None)
@given(
    serve=st.floats(0, 1000, allow_nan=False),
    interval=st.floats(0.1, 300, allow_nan=False),
    threshold=st.integers(1, 10),
)
def test_drain_rule_is_exactly_serve_greater_than_detection(
    serve: float, interval: float, threshold: int
) -> None:
    """For any numbers, the drain rule holds iff serving outlasts interval x threshold."""
    assert drain_outlasts_detection(serve, interval, threshold).ok is (serve > interval * threshold)


@settings(deadline=None)
@given(
    serve=st.floats(0, 1000, allow_nan=False),
    shutdown=st.floats(0, 1000, allow_nan=False),
    grace=st.floats(0, 2000, allow_nan=False),
)
def test_grace_rule_is_exactly_sum_within_grace(
    serve: float, shutdown: float, grace: float
) -> None:
    """For any numbers, the grace rule holds iff serve + shutdown <= grace."""
    assert drain_fits_grace(serve, shutdown, grace).ok is (serve + shutdown <= grace)


def test_keepalive_invariant_holds_only_when_the_server_outlasts_the_balancer() -> None:
    """keepalive_timeout_s > idle_timeout_s, strictly: equal is broken (the server may close first)."""
    held = keepalive_outlasts_idle(75, 60)
    assert held.ok
    assert held.rule == KEEPALIVE_RULE == "keepalive_timeout_s > idle_timeout_s"
    assert held.numbers == (("keepalive_timeout_s", 75), ("idle_timeout_s", 60), ("margin_s", 15))
    assert not keepalive_outlasts_idle(60, 60).ok
    broken = keepalive_outlasts_idle(5, 60)  # Node.js's 5 s keepAliveTimeout behind ALB's 60 s
    assert not broken.ok
    assert broken.explain() == (
        "BROKEN: server keep-alive outlasts the balancer's idle timeout: keepalive_timeout_s > "
        "idle_timeout_s (keepalive_timeout_s=5, idle_timeout_s=60, margin_s=-55)")


def test_check_timing_adds_the_keepalive_invariant_when_both_numbers_are_given() -> None:
    """Four results with both keep-alive numbers, the fourth the keep-alive rule; three without."""
    assert len(check_timing(FIXED)) == 3
    assert len(check_timing(replace(FIXED, keepalive_timeout_s=75))) == 3  # one alone: not checked
    four = check_timing(replace(FIXED, keepalive_timeout_s=30, idle_timeout_s=60))
    assert [r.ok for r in four] == [True, True, True, False]
    assert four[3].name == "server keep-alive outlasts the balancer's idle timeout"
    assert not all_hold(four)
    assert all_hold(check_timing(replace(FIXED, keepalive_timeout_s=61, idle_timeout_s=60)))


def test_spread_checks_lengthen_detection_and_reheal_to_the_longest_interval() -> None:
    """With spread-checks p, both rules use interval_s x (1 + p/100): a drain that outlasts
    the exact intervals (15 s > 5 s x 2) can fall short of the spread ones (15 s <= 5 x 1.5 x 2)."""
    exact = check_timing(replace(FIXED, serve_after_drain_s=12))
    spread = check_timing(replace(FIXED, serve_after_drain_s=12, spread_checks_pct=50))
    assert [r.ok for r in exact] == [True, True, True]
    assert [r.ok for r in spread] == [False, True, True]
    drain, reheal = spread[0], spread[1]
    assert drain.rule == ("serve_after_drain_s > interval_s x (1 + spread_checks_pct / 100) x "
                          "unhealthy_threshold")
    assert dict(drain.numbers)["detection_s"] == 15
    assert dict(drain.numbers)["spread_checks_pct"] == 50
    assert dict(reheal.numbers)["reheal_s"] == 15
    assert not check_timing(replace(FIXED, spread_checks_pct=50), max_reheal_s=14)[1].ok
    assert "spread_checks_pct" not in dict(exact[0].numbers)
    assert exact[0].rule == "serve_after_drain_s > interval_s x unhealthy_threshold"


def test_any_spread_above_zero_counts_even_under_one_percent() -> None:
    """0.5 % is a spread: the rule, the numbers and the detection time all say so."""
    drain = check_timing(replace(FIXED, spread_checks_pct=0.5))[0]
    assert "(1 + spread_checks_pct / 100)" in drain.rule
    assert dict(drain.numbers)["spread_checks_pct"] == 0.5
    assert dict(drain.numbers)["detection_s"] == 5 * 1.005 * 2
