"""Exact boundaries of the checks, pinned so that mutation testing kills their mutants."""

from __future__ import annotations

from platform_testbed.checks import (
    CircuitBreakerCheck,
    CountCheck,
    Event,
    FlyctlSmokeCheck,
    Look,
    MachineSnapshot,
    MinHealthyTimeCheck,
    RestartCounterCheck,
    TimestampCheck,
    Verdict,
    Wait,
)
from platform_testbed.checks.failsafe import lost_machines

T0 = 1_000_000


def snap(mid: str, at: int, state: str = "started", *events: Event, counter: int | None = 0):
    """A snapshot; ``events`` newest first."""
    return MachineSnapshot(mid, state, "app", tuple(events), at, counter)


LAUNCH = Event("launch", "created", T0, "user")


def test_flyctl_uptime_must_exceed_ten_seconds_not_equal_it() -> None:
    """flyctl passes on uptime strictly over 10 s: exactly 10 s is not yet proven."""
    start = Event("start", "started", T0 + 1_000)
    check = FlyctlSmokeCheck()
    at_ten = [Look(T0 + 11_000, (snap("m1", T0 + 11_000, "started", start, LAUNCH),))]
    assert isinstance(check.next(T0, at_ten), Wait)
    just_over = [Look(T0 + 11_001, (snap("m1", T0 + 11_001, "started", start, LAUNCH),))]
    verdict = check.next(T0, just_over)
    assert isinstance(verdict, Verdict)
    assert verdict.ok
    assert verdict.layer == "uptime"


def test_flyctl_fresh_machine_does_not_pass_on_its_first_read() -> None:
    """Uptime is now minus the start: a machine started 1 s ago has 1 s, not its start time."""
    start = Event("start", "started", T0 + 500)
    look = Look(T0 + 1_500, (snap("m1", T0 + 1_500, "started", start, LAUNCH),))
    assert FlyctlSmokeCheck(wait_reading="sampled").next(T0, [look]) == Wait(0.5)


def test_flyctl_backoff_doubles_from_half_a_second_to_two() -> None:
    """Reads come 0.5, 1 and 2 s apart, then every 2 s, while no uptime is proven."""
    check = FlyctlSmokeCheck()
    looks: list[Look] = []
    waits = []
    at = T0
    for _ in range(5):
        looks.append(Look(at, (snap("m1", at, "started", Event("start", "started", T0)),)))
        step = check.next(T0, looks)
        assert isinstance(step, Wait)
        waits.append(step.seconds)
        at += round(step.seconds * 1000)
    assert waits == [0.5, 1.0, 2.0, 2.0, 2.0]


def test_flyctl_skips_a_machine_asleep_at_the_publish() -> None:
    """A machine stopped before the publish is never smoke-checked (shouldSkipLaunch)."""
    asleep = Event("exit", "stopped", T0 - 5, requested_stop=True)
    look = Look(T0, (snap("m1", T0, "stopped", asleep),))
    verdict = FlyctlSmokeCheck().next(T0, [look])
    assert isinstance(verdict, Verdict)
    assert verdict.ok
    assert verdict.layer == "skipped"


def test_flyctl_wait_times_out_after_five_minutes() -> None:
    """A machine that never settles fails at flyctl's 300 s wait timeout, not before."""
    update = Event("update", "replaced", T0)
    check = FlyctlSmokeCheck()
    before = [Look(T0 + 299_999, (snap("m1", T0 + 299_999, "starting", update),))]
    assert isinstance(check.next(T0, [Look(T0, (snap("m1", T0, "starting", update),)), *before]), Wait)
    at = [
        Look(T0, (snap("m1", T0, "starting", update),)),
        Look(T0 + 300_000, (snap("m1", T0 + 300_000, "starting", update),)),
    ]
    verdict = check.next(T0, at)
    assert isinstance(verdict, Verdict)
    assert not verdict.ok
    assert verdict.layer == "wait-timeout"


def test_flyctl_gave_up_machine_passes_at_the_window_end() -> None:
    """A machine stopped for good passes the wait, then passes when its 10 s window ends."""
    update = Event("update", "replaced", T0)
    crash = Event("exit", "stopped", T0 + 900, exit_code=1, restarting=False, restart_count=10)
    first = Look(T0, (snap("m1", T0, "starting", update),))
    opened = Look(T0 + 1_000, (snap("m1", T0 + 1_000, "stopped", crash, update),))
    ended = Look(T0 + 11_000, (snap("m1", T0 + 11_000, "stopped", crash, update),))
    check = FlyctlSmokeCheck(listen_wait_s=0, wait_reading="sampled")
    assert isinstance(check.next(T0, [first, opened]), Wait)
    verdict = check.next(T0, [first, opened, ended])
    assert isinstance(verdict, Verdict)
    assert verdict.ok
    assert verdict.layer == "window-ran-out"
    assert "gave up" in verdict.reason
    assert FlyctlSmokeCheck.rolls_back is False


def test_every_check_fails_a_look_with_no_machines() -> None:
    """An empty look is never a pass, for every check."""
    empty = [Look(T0, ())]
    for check in (
        CountCheck(),
        TimestampCheck(),
        FlyctlSmokeCheck(),
        MinHealthyTimeCheck(),
        RestartCounterCheck(),
        CircuitBreakerCheck(),
    ):
        verdict = check.next(T0, empty)
        assert isinstance(verdict, Verdict), check.name
        assert not verdict.ok, check.name
        assert verdict.layer == "no-machines", check.name


def test_every_check_fails_when_a_machine_vanishes() -> None:
    """A look missing a machine an earlier look had fails, naming that machine."""
    start = Event("start", "started", T0 - 100_000)
    both = Look(T0, (snap("m1", T0, "started", start), snap("m2", T0, "started", start)))
    one = Look(T0 + 1_000, (snap("m1", T0 + 1_000, "started", start),))
    verdict = lost_machines("x", [both, one])
    assert verdict is not None
    assert verdict.machine == "m2"
    assert not verdict.ok
    assert lost_machines("x", [both, both]) is None
    assert lost_machines("x", []) is None


def test_min_healthy_does_not_judge_a_machine_the_publish_left_alone() -> None:
    """A machine whose newest event predates the publish is neither waited for nor failed."""
    old = Event("start", "started", T0 - 50_000)
    new = Event("start", "started", T0 + 100)
    looks = [
        Look(
            T0 + k * 1_000,
            (snap("m1", T0 + k * 1_000, "started", old), snap("m2", T0 + k * 1_000, "started", new)),
        )
        for k in range(12)
    ]
    verdict = MinHealthyTimeCheck().next(T0, looks)
    assert isinstance(verdict, Verdict)
    assert verdict.ok
    assert "1 of 2 machine(s) judged" in verdict.reason


def test_min_healthy_nomad_fails_a_given_up_machine_at_once() -> None:
    """Nomad: a task failed for good makes the allocation unhealthy before the deadline."""
    crash = Event("exit", "stopped", T0 + 900, exit_code=1, restarting=False, restart_count=3)
    look = Look(T0 + 1_000, (snap("m1", T0 + 1_000, "stopped", crash),))
    verdict = MinHealthyTimeCheck().next(T0, [look])
    assert isinstance(verdict, Verdict)
    assert verdict.layer == "task-failed"
    assert isinstance(MinHealthyTimeCheck(rule="kubernetes").next(T0, [look]), Wait)


def test_min_healthy_kubernetes_deadline_runs_from_the_last_progress() -> None:
    """Kubernetes: 600 s without progress fails; a machine turning ready restarts the clock."""
    update = Event("update", "replaced", T0)
    check = MinHealthyTimeCheck(rule="kubernetes", progress_deadline_s=10)
    stuck = [Look(T0 + k * 1_000, (snap("m1", T0 + k * 1_000, "starting", update),)) for k in range(11)]
    verdict = check.next(T0, stuck)
    assert isinstance(verdict, Verdict)
    assert verdict.layer == "progress-deadline"
    assert isinstance(check.next(T0, stuck[:10]), Wait)
    start = Event("start", "started", T0 + 5_000)
    ready_at_5 = stuck[:5] + [
        Look(
            T0 + k * 1_000,
            (
                snap(
                    "m1",
                    T0 + k * 1_000,
                    "stopped",
                    Event("exit", "stopped", T0 + 5_500, exit_code=1),
                    start,
                    update,
                ),
            ),
        )
        for k in range(6, 16)
    ]
    ready_at_5.insert(5, Look(T0 + 5_000, (snap("m1", T0 + 5_000, "started", start, update),)))
    assert isinstance(check.next(T0, ready_at_5[:15]), Wait)
    verdict = check.next(T0, ready_at_5)
    assert isinstance(verdict, Verdict)
    assert verdict.layer == "progress-deadline"


def test_breaker_resets_its_count_when_a_task_turns_healthy() -> None:
    """Two crashes, a healthy run, two crashes: never three in a row, so no trip with the reset."""

    def crash(t: int) -> Event:
        return Event("exit", "stopped", T0 + t, exit_code=1, restarting=True)

    healthy_start = Event("start", "started", T0 + 3_000)
    looks = [
        Look(T0 + 2_500, (snap("m1", T0 + 2_500, "stopped", crash(2_000), crash(1_000)),)),
        Look(T0 + 34_000, (snap("m1", T0 + 34_000, "started", healthy_start),)),
        Look(T0 + 40_000, (snap("m1", T0 + 40_000, "stopped", crash(39_000), crash(38_000)),)),
    ]
    assert isinstance(CircuitBreakerCheck().next(T0, looks), Wait)
    cumulative = CircuitBreakerCheck(reset_on_healthy_task=False).next(T0, looks)
    assert isinstance(cumulative, Verdict)
    assert cumulative.layer == "circuit-breaker"
    assert not cumulative.ok
    assert "3 failed task(s) reached the threshold of 3" in cumulative.reason


def test_breaker_passes_only_once_the_deployment_completed() -> None:
    """Started is not enough: every machine must have been healthy 30 s since its start."""
    start = Event("start", "started", T0 + 1_000)
    check = CircuitBreakerCheck()
    early = [Look(T0 + 30_999, (snap("m1", T0 + 30_999, "started", start),))]
    assert isinstance(check.next(T0, early), Wait)
    done = [Look(T0 + 31_000, (snap("m1", T0 + 31_000, "started", start),))]
    verdict = check.next(T0, done)
    assert isinstance(verdict, Verdict)
    assert verdict.ok
    assert verdict.layer == "completed"
    assert CircuitBreakerCheck(rollback=False).rolls_back is False
