"""Exact behaviour of the platform checks (flyctl, ECS circuit breaker, min healthy time).

Hand-built looks only, like tests/test_checks_exact.py: reasons pinned whole (written
from the rule each states, numbers worked out by hand), layers, boundaries and waits.
"""

from __future__ import annotations

import pytest

from platform_testbed.checks import (
    CircuitBreakerCheck,
    Event,
    FlyctlSmokeCheck,
    Look,
    MachineSnapshot,
    MinHealthyTimeCheck,
    Verdict,
    Wait,
)
from platform_testbed.checks.breaker import ecs_threshold, failed_starts, healthy_tasks
from platform_testbed.checks.flyctl import is_constantly_restarting, most_recent_start_after_launch
from platform_testbed.checks.minhealthy import newest_start_ms
from tests.exact_events import T0, crash, decided, start

UPDATE = Event("update", "replaced", T0, "user")


def snap(mid: str, at: int, state: str = "started", *events: Event) -> MachineSnapshot:
    """A snapshot taken ``at`` ms after the publish; ``events`` newest first."""
    return MachineSnapshot(mid, state, "app", tuple(events), T0 + at)


def look(at: int, *machines: MachineSnapshot) -> Look:
    """A look ``at`` ms after the publish."""
    return Look(T0 + at, machines)



def launch(t: int) -> Event:
    return Event("launch", "created", T0 + t, "user")




# --- flyctl: fly-go's start time and flyctl's constant-restart rule ------------------


def test_start_after_launch_needs_a_start_newer_than_a_launch() -> None:
    """No start, no launch, or the launch newer than every start: no start time."""
    assert most_recent_start_after_launch([]) is None
    assert most_recent_start_after_launch([launch(0)]) is None
    assert most_recent_start_after_launch([start(5)]) is None
    assert most_recent_start_after_launch([launch(9), start(5)]) is None
    assert most_recent_start_after_launch([start(5), launch(0)]) == T0 + 5


def test_start_after_launch_keeps_fly_gos_quirks() -> None:
    """The oldest start after the newest launch; any exit after the launch erases it."""
    assert most_recent_start_after_launch([start(9), start(5), launch(0)]) == T0 + 5
    assert most_recent_start_after_launch([start(9), launch(5), start(3), launch(0)]) == T0 + 9
    assert most_recent_start_after_launch([start(9), crash(7), start(5), launch(0)]) is None
    assert most_recent_start_after_launch([crash(9), start(5), launch(0)]) is None
    # An exit between the start and the launch is not "after the start": it still counts,
    # and the newest start is the one returned. An exit older than the launch is not seen.
    assert most_recent_start_after_launch([start(9), crash(7), launch(0)]) == T0 + 9
    assert most_recent_start_after_launch([start(9), launch(5), crash(3)]) == T0 + 9


def test_constantly_restarting_is_a_restarting_nonzero_exit_past_restart_1() -> None:
    """restart_count 2 restarting with a non-zero code is constant; anything less is not."""
    assert is_constantly_restarting(snap("m", 0, "started", start(9), crash(5, count=2)))
    assert not is_constantly_restarting(snap("m", 0, "started", crash(5, count=1)))
    assert not is_constantly_restarting(snap("m", 0, "started", crash(5, count=2, restarting=False)))
    assert not is_constantly_restarting(snap("m", 0, "started", crash(5, count=2, code=None)))
    assert not is_constantly_restarting(snap("m", 0, "started", crash(5, count=2, code=0)))
    asked = Event("exit", "stopped", T0, exit_code=1, requested_stop=True, restarting=True, restart_count=3)
    assert not is_constantly_restarting(snap("m", 0, "stopped", asked))
    assert not is_constantly_restarting(snap("m", 0, "started", start(1)))


# --- flyctl: the check --------------------------------------------------------------


def test_flyctl_defaults_follow_flyctl() -> None:
    """10 s window and uptime, 0.5..2 s backoff, 5 min wait, settled states, 1 s polls."""
    check = FlyctlSmokeCheck()
    assert (check.window_s, check.min_uptime_s, check.backoff_min_s, check.backoff_max_s) == (10, 10, 0.5, 2)
    assert (check.wait_timeout_s, check.poll_s) == (300, 1)
    assert check.wait_states == ("started", "stopped", "suspended")
    assert FlyctlSmokeCheck(wait_states=["started"]).wait_states == ("started",)  # type: ignore[arg-type]
    assert hash(FlyctlSmokeCheck(wait_states=["started"])) == hash(FlyctlSmokeCheck(wait_states=("started",)))  # type: ignore[arg-type]


def test_flyctl_looks_at_once_then_polls_an_unsettled_machine() -> None:
    """First look now; a machine still starting is polled every second, to the timeout."""
    check = FlyctlSmokeCheck()
    assert check.next(T0, []) == Wait(0.0)
    assert check.next(T0, [look(0, snap("m1", 0, "starting", UPDATE))]) == Wait(1.0)
    assert check.next(T0, [look(299_600, snap("m1", 299_600, "starting", UPDATE))]) == Wait(0.4)


def test_flyctl_wait_timeout_reason_names_the_states_and_the_timeout() -> None:
    """Not settled by the wait timeout: fail with flyctl's timeout, the states and the machine."""
    check = FlyctlSmokeCheck(wait_states=("started",), wait_timeout_s=30)
    looks = [
        look(0, snap("m1", 0, "starting", UPDATE)),
        look(30_000, snap("m1", 30_000, "stopped", crash(29_000))),
    ]
    assert isinstance(check.next(T0, looks[:1]), Wait)
    verdict = decided(check.next(T0, looks))
    assert verdict == Verdict(
        False,
        "timeout reached waiting for machine m1 to reach one of the states started within 30 s "
        "(state stopped, newest event exit code 1 at +29.0 s); raise flyctl's --wait-timeout "
        "only if the app is slow to boot",
        "m1",
    )
    assert verdict.layer == "wait-timeout"
    default = decided(FlyctlSmokeCheck().next(T0, [look(300_000, snap("m1", 300_000, "starting", UPDATE))]))
    assert "one of the states started, stopped, suspended within 300 s" in default.reason


def test_flyctl_fails_a_constantly_restarting_machine_with_flyctls_words() -> None:
    """A restarting crash past restart 1 at a read fails with "the app appears to be crashing"."""
    looks = [
        look(0, snap("m1", 0, "started", start(-50_000), launch(-60_000)), snap("m2", 0, "starting", UPDATE)),
        look(
            2_500,
            snap("m1", 2_500, "started", start(-50_000), launch(-60_000)),
            snap("m2", 2_500, "started", start(2_400), crash(2_000, count=2), start(1_000)),
        ),
    ]
    verdict = decided(FlyctlSmokeCheck().next(T0, looks))
    assert verdict == Verdict(
        False,
        "the app appears to be crashing: machine m2's newest exit at +2.0 s has exit code 1, "
        "restarting = true and restart_count = 2 (> 1); read the exit cause with `fly logs -i m2`",
        "m2",
    )
    assert verdict.layer == "constantly-restarting"


def test_flyctl_passes_on_uptime_and_names_skipped_sleeping_machines() -> None:
    """One machine up over 10 s, one asleep at the publish: pass on uptime, listing the sleeper."""
    up = snap("m1", 0, "started", start(-30_000), launch(-40_000))
    verdict = decided(FlyctlSmokeCheck().next(T0, [look(0, up, snap("m2", 0, "suspended"))]))
    assert verdict == Verdict(
        True,
        "every checked machine has been up over 10 s since its most recent start after launch "
        "and none is constantly restarting (flyctl smoke check); not started and not checked, "
        "as flyctl leaves a machine whose state before the publish was not started, starting "
        "or failed: m2 (suspended)",
    )
    assert verdict.layer == "uptime"
    alone = decided(FlyctlSmokeCheck().next(T0, [look(0, up)]))
    assert alone.reason.endswith("(flyctl smoke check)")


def test_flyctl_passes_when_every_machine_was_asleep() -> None:
    """All asleep at the publish: nothing to check, pass, listing them."""
    looks = [look(0, snap("m1", 0, "stopped"), snap("m2", 0, "suspended"))]
    verdict = decided(FlyctlSmokeCheck().next(T0, looks))
    assert verdict == Verdict(
        True,
        "no machine was started, starting or failed before the publish, so flyctl updated them "
        "without starting them and ran no smoke check; not started and not checked, as flyctl "
        "leaves a machine whose state before the publish was not started, starting or failed: "
        "m1 (stopped), m2 (suspended)",
    )
    assert verdict.layer == "skipped"


def _no_uptime(at: int, mid: str = "m1") -> MachineSnapshot:
    """Started, but the list lost the launch: no uptime can be shown."""
    return snap(mid, at, "started", start(900), UPDATE)


def test_flyctl_window_runs_out_exactly_window_s_after_the_machine_settled() -> None:
    """Sampled: settled in the +1 s look, no uptime: waiting at +10.999 s, passing at +11 s."""
    gave_up = snap("m2", 11_000, "stopped", crash(1_500, count=4, restarting=False), start(900))
    first = look(0, snap("m1", 0, "starting", UPDATE), snap("m2", 0, "starting", UPDATE))
    settled = look(
        1_000, _no_uptime(1_000), snap("m2", 1_000, "stopped", crash(900, count=4, restarting=False))
    )
    check = FlyctlSmokeCheck(wait_reading="sampled")
    assert isinstance(check.next(T0, [first, settled, look(10_999, _no_uptime(10_999), gave_up)]), Wait)
    verdict = decided(check.next(T0, [first, settled, look(11_000, _no_uptime(11_000), gave_up)]))
    assert verdict == Verdict(
        True,
        "flyctl's 10 s smoke window ran out without a constant restart, so it passes by design; "
        "machines with no proven uptime at their last read: m1: state started, newest event "
        "start at +0.9 s; m2: state stopped, newest event exit code 1 at +1.5 s - the platform "
        "gave up restarting it, which the smoke check does not act on",
    )
    assert verdict.layer == "window-ran-out"


def test_flyctl_reads_only_when_the_backoff_is_due_and_waits_for_the_nearest_read() -> None:
    """Sampled: read at +1 s (due +1.5 s): a look at +1.2 s does not read; +1.5 s does."""
    check = FlyctlSmokeCheck(wait_reading="sampled")
    proven = snap("m1", 0, "started", start(-20_000), launch(-30_000))
    opened = look(1_000, _no_uptime(1_000))
    assert check.next(T0, [opened]) == Wait(0.5)
    early = look(1_200, MachineSnapshot("m1", "started", "app", proven.events, T0 + 1_200))
    assert check.next(T0, [opened, early]) == Wait(0.3)
    due = look(1_500, MachineSnapshot("m1", "started", "app", proven.events, T0 + 1_500))
    assert decided(check.next(T0, [opened, early, due])).layer == "uptime"


def test_flyctl_last_wait_is_cut_short_by_the_window() -> None:
    """Sampled: a 2 s backoff from +10.5 s would pass the window's end at +11 s: wait 0.5 s."""
    check = FlyctlSmokeCheck(wait_reading="sampled")
    at = 1_000
    looks: list[Look] = []
    waits = []
    for _ in range(7):
        looks.append(look(at, _no_uptime(at)))
        step = check.next(T0, looks)
        assert isinstance(step, Wait)
        waits.append(step.seconds)
        at += round(step.seconds * 1000)
    assert waits == [0.5, 1.0, 2.0, 2.0, 2.0, 2.0, 0.5]
    assert at == 11_000


def test_flyctl_a_machine_is_judged_in_the_look_it_passed() -> None:
    """Once every machine is decided the verdict comes at that look, not later."""
    up = snap("m1", 0, "started", start(-30_000), launch(-40_000))
    later = snap("m1", 5_000, "started", start(-30_000), launch(-40_000))
    verdict = decided(FlyctlSmokeCheck().next(T0, [look(0, up), look(5_000, later)]))
    assert verdict.ok


# --- ECS circuit breaker ------------------------------------------------------------


def test_ecs_threshold_is_half_rounded_up_within_3_and_200() -> None:
    """50 % of desired, rounded up, at least 3, at most 200; the percent is a parameter."""
    assert [ecs_threshold(n) for n in (1, 6, 7, 8, 400, 401)] == [3, 3, 4, 4, 200, 200]
    assert ecs_threshold(7, 100) == 7
    assert CircuitBreakerCheck().threshold_for(9) == 5
    assert CircuitBreakerCheck(failure_percent=100).threshold_for(9) == 9
    assert CircuitBreakerCheck(threshold=2).threshold_for(9) == 2


def test_failed_starts_counts_each_crash_since_the_publish_once() -> None:
    """The same exit seen in two looks counts once; older crashes never; sorted."""
    looks = [
        look(1_000, snap("m2", 1_000, "stopped", crash(800), crash(-5))),
        look(
            2_000,
            snap("m2", 2_000, "stopped", crash(1_800), crash(800)),
            snap("m1", 2_000, "stopped", crash(0)),
        ),
    ]
    assert failed_starts(looks, T0) == [("m1", T0), ("m2", T0 + 800), ("m2", T0 + 1_800)]


def test_healthy_tasks_turn_healthy_exactly_healthy_after_their_start() -> None:
    """A run since the publish read started at least the healthy time after its start."""
    looks = [
        look(2_000, snap("m6", 2_000, "started", start(1_000))),
        look(30_999, snap("m1", 30_999, "started", start(1_000))),
        look(
            31_000,
            snap("m4", 31_000, "stopped", start(0)),
            snap("m3", 31_000, "started", start(-1)),
            snap("m5", 31_000, "started"),
            snap("m1", 31_000, "started", start(1_000)),
            snap("m2", 31_000, "started", start(0)),
        ),
    ]
    assert healthy_tasks(looks, T0, 30_000) == [(T0 + 30_000, "m2"), (T0 + 31_000, "m1")]


def test_breaker_trips_at_the_threshold_naming_the_worst_machine() -> None:
    """Three crashes for two machines: tripped, with the count per machine."""
    looks = [
        look(
            3_000,
            snap("m1", 3_000, "stopped", crash(2_500), crash(500)),
            snap("m2", 3_000, "starting", crash(1_500)),
        )
    ]
    check = CircuitBreakerCheck()
    verdict = decided(check.next(T0, looks))
    assert verdict == Verdict(
        False,
        "circuit breaker tripped: 3 failed task(s) since the last healthy task reached the "
        "threshold of 3 for 2 machine(s) (m1 2, m2 1); the new release crashes after "
        "starting: check its logs for the exit cause",
        "m1",
    )
    assert verdict.layer == "circuit-breaker"
    cumulative = decided(CircuitBreakerCheck(reset_on_healthy_task=False).next(T0, looks))
    assert cumulative.reason.startswith("circuit breaker tripped: 3 failed task(s) reached the threshold")
    assert isinstance(CircuitBreakerCheck(threshold=4).next(T0, looks), Wait)


def test_breaker_ties_name_the_first_machine_by_id() -> None:
    """One crash each, m2's first: the reason lists both and names m1."""
    looks = [look(3_000, snap("m2", 3_000, "stopped", crash(500)), snap("m1", 3_000, "stopped", crash(900)))]
    verdict = decided(CircuitBreakerCheck(threshold=2).next(T0, looks))
    assert verdict.machine == "m1"
    assert "(m1 1, m2 1)" in verdict.reason


def test_breaker_resets_before_counting_a_crash_at_the_same_instant() -> None:
    """A task turning healthy and a crash at one millisecond: the reset goes first."""
    looks = [
        look(
            31_000,
            snap("m1", 31_000, "started", start(500)),
            snap("m2", 31_000, "stopped", crash(30_500), crash(1_000)),
        )
    ]
    assert isinstance(CircuitBreakerCheck(threshold=2).next(T0, looks), Wait)
    assert not decided(CircuitBreakerCheck(threshold=2, reset_on_healthy_task=False).next(T0, looks)).ok


def test_breaker_fails_a_given_up_machine_with_the_count_so_far() -> None:
    """The platform gave up: nothing will complete the deployment."""
    looks = [look(1_000, snap("m1", 1_000, "stopped", crash(900, restarting=False)))]
    verdict = decided(CircuitBreakerCheck().next(T0, looks))
    assert verdict == Verdict(
        False,
        "machine m1 was given up on by the platform (state stopped, newest event exit code 1 "
        "at +0.9 s) with 1 failed task(s) counted (threshold 3): nothing will restart it, so "
        "the deployment cannot complete",
        "m1",
    )
    assert verdict.layer == "gave-up"


def test_breaker_completes_when_every_machine_is_healthy() -> None:
    """Every machine started 30 s since a start after the publish: pass, with the count."""
    looks = [
        look(
            31_000,
            snap("m1", 31_000, "started", start(1_000), crash(600)),
            snap("m2", 31_000, "started", start(0)),
        )
    ]
    verdict = decided(CircuitBreakerCheck().next(T0, looks))
    assert verdict == Verdict(
        True,
        "every machine reads started and healthy (30 s since a start after the publish) with "
        "0 failed task(s) counted, below the threshold of 3: the deployment completed",
    )
    assert verdict.layer == "completed"
    # The crash at +0.6 s was reset by the healthy tasks; counted cumulatively, it stays.
    cumulative = decided(CircuitBreakerCheck(reset_on_healthy_task=False).next(T0, looks))
    assert "with 1 failed task(s) counted" in cumulative.reason
    old = [look(31_000, snap("m1", 31_000, "started", start(-1)))]
    assert isinstance(CircuitBreakerCheck().next(T0, old), Wait)


def test_breaker_fails_an_incomplete_deployment_at_the_timeout() -> None:
    """Not complete 600 s after the publish: fail; 0.5 s before it, wait 0.5 s."""
    check = CircuitBreakerCheck()
    assert check.next(T0, []) == Wait(0.0)
    assert check.next(T0, [look(1_000, snap("m1", 1_000, "starting", UPDATE))]) == Wait(1.0)
    assert check.next(T0, [look(599_500, snap("m1", 599_500, "starting", UPDATE))]) == Wait(0.5)
    verdict = decided(check.next(T0, [look(600_000, snap("m1", 600_000, "starting", UPDATE))]))
    assert verdict == Verdict(
        False,
        "the deployment did not complete within 600 s: machine m1 is not healthy (state "
        "starting, newest event update at +0.0 s) with 0 failed task(s) counted (threshold 3)",
        "m1",
    )
    assert verdict.layer == "not-completed"


def test_breaker_rolls_back_unless_told_not_to() -> None:
    """``rolls_back`` follows ECS's rollback option, on by default."""
    assert CircuitBreakerCheck().rolls_back is True
    assert CircuitBreakerCheck(rollback=False).rolls_back is False


# --- min healthy time ---------------------------------------------------------------


def test_newest_start_is_the_first_start_in_the_list() -> None:
    """The newest start still visible, or None."""
    assert newest_start_ms(snap("m1", 0, "started", crash(9), start(5), start(1))) == T0 + 5
    assert newest_start_ms(snap("m1", 0, "stopped", crash(9))) is None


def test_min_healthy_rejects_an_unknown_rule() -> None:
    """The rule is nomad or kubernetes."""
    with pytest.raises(ValueError, match=r"^rule must be one of nomad, kubernetes, not 'swarm'$"):
        MinHealthyTimeCheck(rule="swarm")


def _up_since(start_at: int, *ats: int) -> list[Look]:
    return [look(at, snap("m1", at, "started", start(start_at), UPDATE)) for at in ats]


def test_min_healthy_passes_at_exactly_min_healthy_s() -> None:
    """Up 10 s since its newest start: pass; 9.6 s: wait the 0.4 s left."""
    check = MinHealthyTimeCheck()
    assert check.next(T0, []) == Wait(0.0)
    assert check.next(T0, _up_since(1_000, 1_000, 10_600)) == Wait(0.4)
    assert check.next(T0, _up_since(1_000, 1_000, 4_000)) == Wait(1.0)
    verdict = decided(check.next(T0, _up_since(1_000, 1_000, 11_000)))
    assert verdict == Verdict(
        True,
        "every machine the publish restarted has stayed started for at least 10 s since its "
        "newest start (1 of 1 machine(s) judged)",
    )
    assert verdict.layer == "min-healthy-time"


def test_min_healthy_a_look_that_missed_the_run_breaks_it() -> None:
    """A look after the start that read the machine not started breaks the run for good."""
    looks = [
        look(1_000, snap("m1", 1_000, "started", start(500), UPDATE)),
        look(2_000, snap("m1", 2_000, "stopped", start(500), UPDATE)),
        look(20_000, snap("m1", 20_000, "started", start(500), UPDATE)),
    ]
    assert MinHealthyTimeCheck().next(T0, looks) == Wait(1.0)
    stale = [look(600, snap("m1", 600, "starting", UPDATE)), *_up_since(500, 20_000)]
    assert MinHealthyTimeCheck().next(T0, stale) == Wait(1.0)


def test_min_healthy_a_look_in_the_same_millisecond_as_the_start_does_not_break_it() -> None:
    """Looks at the start's own millisecond cannot tell order: they keep the run whole."""
    before = [look(500, snap("m1", 500, "starting", UPDATE)), *_up_since(500, 1_000, 10_500)]
    assert decided(MinHealthyTimeCheck().next(T0, before)).ok
    after = [
        look(1_000, snap("m1", 1_000, "started", start(1_000), UPDATE)),
        look(1_000, snap("m1", 1_000, "starting", start(1_000), UPDATE)),
        look(11_000, snap("m1", 11_000, "started", start(1_000), UPDATE)),
    ]
    assert decided(MinHealthyTimeCheck().next(T0, after)).ok


def test_min_healthy_nomad_deadline_reason_says_how_young_the_newest_start_is() -> None:
    """At the 300 s deadline a run 5 s old fails, with its start and the starts seen."""
    looks = [
        look(100_000, snap("m1", 100_000, "started", start(99_000), crash(98_000), UPDATE)),
        look(200_000, snap("m1", 200_000, "started", start(199_000), crash(198_000))),
        look(299_000, snap("m1", 299_000, "started", start(295_000), crash(294_000), start(199_000))),
        look(300_000, snap("m1", 300_000, "started", start(295_000), crash(294_000), start(199_000))),
    ]
    assert MinHealthyTimeCheck().next(T0, looks[:3]) == Wait(1.0)
    verdict = decided(MinHealthyTimeCheck().next(T0, looks))
    assert verdict == Verdict(
        False,
        "machine m1 did not stay started for 10 s in a row within the 300 s healthy deadline "
        "(its newest start at +295.0 s is only 5.0 s old; 3 start(s) seen since the publish): "
        "the app keeps restarting or never comes up; check its logs for the exit cause",
        "m1",
    )
    assert verdict.layer == "healthy-deadline"


def test_min_healthy_deadline_reason_describes_a_machine_not_started() -> None:
    """At the deadline a machine not started is described by its state and newest event."""
    looks = [look(299_500, snap("m1", 299_500, "stopped", crash(299_000), start(298_000)))]
    assert MinHealthyTimeCheck().next(T0, looks) == Wait(0.5)
    looks = [look(300_000, snap("m1", 300_000, "stopped", crash(299_000), start(298_000)))]
    verdict = decided(MinHealthyTimeCheck().next(T0, looks))
    assert verdict.reason == (
        "machine m1 did not stay started for 10 s in a row within the 300 s healthy deadline "
        "(state stopped, newest event exit code 1 at +299.0 s; 1 start(s) seen since the "
        "publish): the app keeps restarting or never comes up; check its logs for the exit cause"
    )


def test_min_healthy_deadline_with_no_touched_machine() -> None:
    """No machine the publish touched by the deadline: fail, saying nothing shows the release."""
    old = snap("m1", 300_000, "started", start(-1))
    verdict = decided(MinHealthyTimeCheck().next(T0, [look(300_000, old)]))
    assert verdict == Verdict(
        False,
        "no machine was restarted by the publish within the 300 s healthy deadline: nothing "
        "shows the new release running",
    )
    assert verdict.layer == "healthy-deadline"


def test_min_healthy_a_run_started_before_the_publish_is_not_the_new_release() -> None:
    """Touched (newest event at the publish) but its start is older: never counted as up."""
    touched = snap("m1", 20_000, "started", UPDATE, start(-1))
    assert MinHealthyTimeCheck().next(T0, [look(20_000, touched)]) == Wait(1.0)


def test_min_healthy_kubernetes_deadline_names_the_last_progress() -> None:
    """Kubernetes: no rise in ready or available for the deadline fails, naming when progress stopped."""
    check = MinHealthyTimeCheck(rule="kubernetes", progress_deadline_s=10)
    looks = [
        look(1_000, snap("m1", 1_000, "starting", UPDATE)),
        look(5_000, snap("m1", 5_000, "started", start(4_000), UPDATE)),
        look(6_000, snap("m1", 6_000, "stopped", crash(5_500), start(4_000), UPDATE)),
        look(14_500, snap("m1", 14_500, "stopped", crash(5_500), start(4_000), UPDATE)),
        look(15_000, snap("m1", 15_000, "stopped", crash(5_500), start(4_000), UPDATE)),
    ]
    assert check.next(T0, looks[:4]) == Wait(0.5)
    verdict = decided(check.next(T0, looks))
    assert verdict == Verdict(
        False,
        "machine m1 did not stay started for 10 s in a row with no progress for 10 s since "
        "+5.0 s (ProgressDeadlineExceeded) (state stopped, newest event exit code 1 at +5.5 s; "
        "1 start(s) seen since the publish): the app keeps restarting or never comes up; check "
        "its logs for the exit cause",
        "m1",
    )
    assert verdict.layer == "progress-deadline"


def test_min_healthy_kubernetes_counts_a_machine_turning_available_as_progress() -> None:
    """A run reaching min_healthy_s is progress even when the ready count held."""
    check = MinHealthyTimeCheck(rule="kubernetes", progress_deadline_s=10, min_healthy_s=5)
    young = snap("m2", 1_000, "started", start(1_000), UPDATE)
    looks = [
        look(1_000, snap("m1", 1_000, "starting", UPDATE), young),
        look(
            6_000,
            snap("m1", 6_000, "starting", UPDATE),
            MachineSnapshot("m2", "started", "app", young.events, T0 + 6_000),
        ),
        look(
            15_000,
            snap("m1", 15_000, "starting", UPDATE),
            MachineSnapshot("m2", "started", "app", young.events, T0 + 15_000),
        ),
    ]
    assert check.next(T0, looks) == Wait(1.0)
    late = [
        *looks[:2],
        look(
            16_000,
            snap("m1", 16_000, "starting", UPDATE),
            MachineSnapshot("m2", "started", "app", young.events, T0 + 16_000),
        ),
    ]
    assert decided(check.next(T0, late)).layer == "progress-deadline"


def test_min_healthy_nomad_task_failed_reason() -> None:
    """Nomad: a machine given up on fails at once, with the starts seen since the publish."""
    looks = [
        look(500, snap("m1", 500, "started", start(400), UPDATE)),
        look(
            1_000,
            snap("m1", 1_000, "stopped", crash(900, restarting=False), start(700), crash(600), start(400)),
        ),
    ]
    verdict = decided(MinHealthyTimeCheck(healthy_deadline_s=120).next(T0, looks))
    assert verdict == Verdict(
        False,
        "machine m1 failed for good: the platform gave up restarting it (state stopped, newest "
        "event exit code 1 at +0.9 s; 2 start(s) seen since the publish), so Nomad marks the "
        "allocation unhealthy without waiting for the 120 s deadline; check its logs for the "
        "exit cause",
        "m1",
    )
    assert verdict.layer == "task-failed"


def test_min_healthy_waits_for_the_least_up_machine() -> None:
    """Two machines: the wait is for the one with the least time up."""
    looks = [
        look(
            8_000,
            snap("m1", 8_000, "started", start(0), UPDATE),
            snap("m2", 8_000, "started", start(1_700), UPDATE),
        )
    ]
    assert MinHealthyTimeCheck().next(T0, looks) == Wait(1.0)
    looks = [
        look(
            11_000,
            snap("m1", 11_000, "started", start(0), UPDATE),
            snap("m2", 11_000, "started", start(1_700), UPDATE),
        )
    ]
    assert MinHealthyTimeCheck().next(T0, looks) == Wait(0.7)


# --- more exact edges (each kills a mutant the tests above let through) -------------


def test_start_after_launch_stops_at_the_first_start_and_launch_pair() -> None:
    """The scan ends once a start and a launch are both seen, even at the second entry."""
    events = [UPDATE, start(5), launch(0), start(-5), launch(-10)]
    assert most_recent_start_after_launch(events) == T0 + 5


def test_flyctl_with_no_uptime_needed_still_needs_a_start_time() -> None:
    """No start after launch is zero uptime, which is not over a zero minimum."""
    check = FlyctlSmokeCheck(min_uptime_s=0, wait_reading="sampled")
    assert check.next(T0, [look(1_000, _no_uptime(1_000))]) == Wait(0.5)


def test_flyctl_waits_for_a_machine_listed_after_a_decided_one() -> None:
    """The next wait comes from every undecided machine, wherever it is in the look."""
    looks = [look(0, snap("m1", 0, "stopped"), snap("m2", 0, "starting", UPDATE))]
    assert FlyctlSmokeCheck().next(T0, looks) == Wait(1.0)


def test_flyctl_an_unsettled_machine_does_not_hold_up_reading_the_others() -> None:
    """m1 still starting at +1 s; m2 is read then (and passes), so its later crash is not read."""
    proven = (start(-20_000), launch(-30_000))
    crashing = (crash(1_500, count=3), *proven)
    looks = [
        look(1_000, snap("m1", 1_000, "starting", UPDATE), snap("m2", 1_000, "started", *proven)),
        look(2_000, snap("m1", 2_000, "started", *proven), snap("m2", 2_000, "started", *crashing)),
    ]
    assert decided(FlyctlSmokeCheck().next(T0, looks)).ok


def test_flyctl_a_machine_not_due_does_not_hold_up_reading_the_others() -> None:
    """m2 is read (and passes) while m1 is still not due; m2's crash at +2.9 s is never read.

    The looks follow the check's own waits (flyctl reads on its 1 s ticks and backoff), over
    a timeline: m1 shows no uptime until +2.5 s, m2 is proven from +1.1 s, crashes at +2.9 s.
    """
    proven = (start(-20_000), launch(-30_000))
    crashing = (crash(2_900, count=3), *proven)

    def at(t: int) -> Look:
        m1 = _no_uptime(t) if t < 2_500 else snap("m1", t, "started", *proven)
        m2_events = (UPDATE,) if t < 1_100 else proven if t < 2_900 else crashing
        return look(t, m1, snap("m2", t, "starting" if t < 1_100 else "started", *m2_events))

    looks, check = [at(1_000)], FlyctlSmokeCheck()
    step = check.next(T0, looks)
    while isinstance(step, Wait):
        looks.append(at(looks[-1].at_ms - T0 + round(step.seconds * 1000)))
        step = check.next(T0, looks)
    assert decided(step).ok
    assert looks[-1].at_ms - T0 < 2_900


def test_every_check_names_itself_when_it_fails_safe() -> None:
    """The fail-safe reason starts with the check's name."""
    for check in (FlyctlSmokeCheck(), CircuitBreakerCheck(), MinHealthyTimeCheck()):
        verdict = decided(check.next(T0, [Look(T0, ())]))
        assert verdict.reason.startswith(f"{check.name}: the look at {T0} ms"), check.name


def test_breaker_and_min_healthy_poll_at_poll_s() -> None:
    """A 2 s poll interval is a 2 s wait."""
    starting = [look(1_000, snap("m1", 1_000, "starting", UPDATE))]
    assert CircuitBreakerCheck(poll_s=2).next(T0, starting) == Wait(2.0)
    assert MinHealthyTimeCheck(poll_s=2).next(T0, starting) == Wait(2.0)


def test_min_healthy_deadline_with_a_run_that_just_started() -> None:
    """At the deadline a run started that very millisecond is 0.0 s old."""
    looks = [look(300_000, snap("m1", 300_000, "started", start(300_000), UPDATE))]
    verdict = decided(MinHealthyTimeCheck().next(T0, looks))
    assert "(its newest start at +300.0 s is only 0.0 s old; 1 start(s) seen" in verdict.reason


def test_min_healthy_deadline_rounds_the_age_to_a_tenth() -> None:
    """A run 1.05 s old at the deadline reads 1.1 s."""
    looks = [look(300_000, snap("m1", 300_000, "started", start(298_950), UPDATE))]
    verdict = decided(MinHealthyTimeCheck().next(T0, looks))
    assert "is only 1.1 s old" in verdict.reason


def test_min_healthy_polls_when_no_machine_is_touched_yet() -> None:
    """Before the deadline, a fleet the publish has not touched is polled."""
    assert MinHealthyTimeCheck().next(T0, [look(5_000, snap("m1", 5_000, "started", start(-1)))]) == Wait(1.0)


def test_min_healthy_short_minimum_waits_from_a_run_started_now() -> None:
    """A run 0 ms old with 0.5 s to go: wait 0.5 s; a run broken at the start's own ms: poll."""
    check = MinHealthyTimeCheck(min_healthy_s=0.5)
    assert check.next(T0, _up_since(1_000, 1_000)) == Wait(0.5)
    down = [
        look(1_000, snap("m1", 1_000, "started", start(1_000), UPDATE)),
        look(1_000, snap("m1", 1_000, "stopped", start(1_000), UPDATE)),
    ]
    assert check.next(T0, down) == Wait(1.0)


def test_min_healthy_deadline_names_the_first_of_equally_unready_machines() -> None:
    """Two machines never up: the deadline reason names the first."""
    looks = [look(300_000, snap("m2", 300_000, "starting", UPDATE), snap("m1", 300_000, "starting", UPDATE))]
    assert decided(MinHealthyTimeCheck().next(T0, looks)).machine == "m2"


def test_min_healthy_kubernetes_first_ready_machine_is_progress() -> None:
    """One machine ready at the first look is progress from nothing."""
    check = MinHealthyTimeCheck(rule="kubernetes", progress_deadline_s=10)
    looks = [
        look(5_000, snap("m1", 5_000, "started", start(4_000), UPDATE)),
        look(12_000, snap("m1", 12_000, "stopped", crash(6_000), start(4_000), UPDATE)),
    ]
    assert check.next(T0, looks) == Wait(1.0)


def test_min_healthy_kubernetes_nothing_ready_is_no_progress() -> None:
    """No machine ready at any look: the deadline runs from the publish."""
    check = MinHealthyTimeCheck(rule="kubernetes", progress_deadline_s=10)
    looks = [look(k, snap("m1", k, "starting", UPDATE)) for k in (1_000, 10_500)]
    assert decided(check.next(T0, looks)).layer == "progress-deadline"


def test_min_healthy_kubernetes_a_second_ready_machine_is_progress() -> None:
    """Ready rising from one machine to two is progress."""
    check = MinHealthyTimeCheck(rule="kubernetes", progress_deadline_s=10)
    looks = [
        look(1_000, snap("m1", 1_000, "started", start(900), UPDATE), snap("m2", 1_000, "starting", UPDATE)),
        look(
            5_000,
            snap("m1", 5_000, "started", start(900), UPDATE),
            snap("m2", 5_000, "started", start(4_500)),
        ),
        look(
            14_500,
            snap("m1", 14_500, "stopped", crash(6_000), start(900), UPDATE),
            snap("m2", 14_500, "stopped", crash(6_000), start(4_500)),
        ),
    ]
    assert check.next(T0, looks) == Wait(0.5)


def test_min_healthy_kubernetes_a_second_available_machine_is_progress() -> None:
    """Available rising from one machine to two is progress, whatever order they are listed in."""
    check = MinHealthyTimeCheck(rule="kubernetes", progress_deadline_s=10, min_healthy_s=5)

    def at(ms: int) -> Look:
        return look(
            ms,
            snap("m3", ms, "starting", UPDATE),
            snap("m2", ms, "started", start(3_000), UPDATE),
            snap("m1", ms, "started", start(0), UPDATE),
        )

    # Available: 0 at +3 s, 1 (m1) at +5 s, 2 at +8 s: the deadline runs from +8 s.
    assert check.next(T0, [at(3_000), at(5_000), at(8_000), at(16_000)]) == Wait(1.0)
