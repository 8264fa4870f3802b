"""Checks modelled on real platforms: their guarantees, and the smallest worlds that fool them."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import example, given, note
from hypothesis import strategies as st

from platform_testbed.checks import (
    BUILTIN_CHECKS,
    Check,
    CircuitBreakerCheck,
    Event,
    FlyctlSmokeCheck,
    Look,
    MachineSnapshot,
    MinHealthyTimeCheck,
    RestartCounterCheck,
    Verdict,
    Wait,
    make_check,
)
from platform_testbed.checks.breaker import ecs_threshold, failed_starts
from platform_testbed.checks.flyctl import CRASHING, is_constantly_restarting, most_recent_start_after_launch
from platform_testbed.checks.minhealthy import newest_start_ms
from platform_testbed.sim.kit.testing import PUBLISH_MS, App, World, drive_world, world

PLATFORM_CHECKS = ["flyctl-smoke", "min-healthy-time", "restart-counter", "circuit-breaker"]

apps = st.builds(
    App,
    boot_ms=st.integers(100, 3_000),
    crash_after_ms=st.none() | st.integers(200, 30_000),
    restart_delay_ms=st.integers(0, 2_000),
    max_retries=st.none() | st.integers(0, 10),
    exit_code=st.integers(1, 255),
    updated=st.booleans(),
    cap=st.integers(1, 10),
    restart_counter=st.booleans(),
)
worlds = st.lists(apps, min_size=1, max_size=3).map(lambda a: world(*a, horizon_s=200))


def fast(name: str) -> Check:
    """A built-in check with deadlines short enough for the test worlds' 200 s horizon."""
    return make_check(
        name, {"healthy_deadline_s": 60.0, "completion_timeout_s": 60.0, "wait_timeout_s": 60.0}
    )


def first_all_started(looks: tuple[Look, ...]) -> Look | None:
    """The first look of a run in which every machine read started."""
    return next((k for k in looks if all(m.state == "started" for m in k.machines)), None)


# --- every platform check ------------------------------------------------------------


@pytest.mark.parametrize("name", PLATFORM_CHECKS)
def test_platform_checks_are_registered_frozen_and_documented(name: str) -> None:
    """Each platform check is a built-in under its hyphenated name, frozen, with a docstring."""
    cls = BUILTIN_CHECKS[name]
    check = cls()
    assert check.name == name
    assert dataclasses.is_dataclass(check)
    field = dataclasses.fields(check)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(check, field, 1)
    assert cls.__doc__
    assert len(cls.__doc__.splitlines()) > 5


@pytest.mark.parametrize("name", PLATFORM_CHECKS)
def test_make_check_passes_only_the_options_a_check_declares(name: str) -> None:
    """A scenario's shared [check] options reach a platform check only where it declares them."""
    options = {"look_delay_s": 7.0, "start_timeout_s": 30.0, "poll_s": 0.5, "unknown": 1}
    check = make_check(name, options)
    fields = {f.name for f in dataclasses.fields(check)}  # type: ignore[arg-type]
    for key, value in options.items():
        if key in fields:
            assert getattr(check, key) == value
    assert "unknown" not in fields


@pytest.mark.parametrize("name", PLATFORM_CHECKS)
@given(w=worlds)
def test_platform_checks_decide_and_never_wait_backwards(name: str, w: World) -> None:
    """Driven through any world, each check reaches a verdict with finite, non-negative waits."""
    run = drive_world(fast(name), w)
    assert run.verdict is not None
    assert run.verdict.reason


@pytest.mark.parametrize("name", PLATFORM_CHECKS)
@given(w=worlds)
def test_platform_checks_are_pure(name: str, w: World) -> None:
    """Same looks, same answer: asking a check twice gives the same step."""
    check = fast(name)
    run = drive_world(check, w)
    for n in range(len(run.looks) + 1):
        assert check.next(PUBLISH_MS, run.looks[:n]) == check.next(PUBLISH_MS, run.looks[:n])


@pytest.mark.parametrize("name", PLATFORM_CHECKS)
@given(apps=st.lists(apps.map(lambda a: dataclasses.replace(a, crash_after_ms=None)), min_size=1))
def test_platform_checks_pass_a_healthy_release(name: str, apps: list[App]) -> None:
    """No platform check fails a release that never crashes (given a counter where it needs one)."""
    apps = [dataclasses.replace(a, restart_counter=True) for a in apps[:3]]
    run = drive_world(fast(name), world(*apps, horizon_s=200))
    assert run.verdict is not None
    assert run.verdict.ok, run.verdict.reason


# --- flyctl-smoke --------------------------------------------------------------------


def test_flyctl_smoke_fails_a_crash_loop_with_flyctls_message() -> None:
    """A machine restarting after its third crash within the window fails as flyctl does."""
    run = drive_world(FlyctlSmokeCheck(), world(App(crash_after_ms=2_500)))
    assert run.verdict is not None
    assert not run.verdict.ok
    assert run.verdict.reason.startswith(CRASHING)
    assert "restart_count = 2" in run.verdict.reason
    assert run.verdict.layer == "constantly-restarting"


@given(w=worlds)
def test_flyctl_smoke_fails_only_on_a_constant_restart(w: World) -> None:
    """Every smoke-check failure but flyctl's wait timeout is a newest exit with restarting,
    restart_count > 1, code != 0. (A 60 s wait timeout, so the check decides within the
    200 s horizon: with flyctl's 300 s, a machine whose crash cycle aliases with the 1 s
    poll reads `starting` at every look and the horizon comes first — hypothesis found one.)"""
    run = drive_world(FlyctlSmokeCheck(wait_timeout_s=60.0), w)
    assert run.verdict is not None
    if run.verdict.ok or run.verdict.layer == "wait-timeout":
        return
    machine = run.looks[-1].machine(run.verdict.machine or "")
    assert machine is not None
    assert is_constantly_restarting(machine)
    newest = machine.newest_exit()
    assert newest is not None
    assert newest.restarting
    assert newest.restart_count > 1
    assert newest.exit_code != 0


@given(w=worlds)
def test_flyctl_smoke_decides_within_its_window(w: World) -> None:
    """Once every machine reads started, the smoke check decides within its 10 s window.

    Without the listen-address wait, which delays the first machine's window by 15 s
    when it reads not started at plan.go's tick. Every machine updated at the publish
    (``rollout="at-publish"``): the pool's own bound is in tests/test_flyctl_flow.py.
    """
    check = FlyctlSmokeCheck(listen_wait_s=0.0, rollout="at-publish")
    run = drive_world(check, w)
    opened = first_all_started(run.looks)
    if opened is None:
        return
    assert run.decided_at_ms is not None
    # plan.go notices a machine's settled state at its next 1 s tick (waitForMachineState),
    # so a window may open up to poll_s after the machine first reads started.
    assert run.decided_at_ms - opened.at_ms <= (check.window_s + check.poll_s) * 1000


@given(
    crash_after_ms=st.integers(200, 8_000),
    max_retries=st.integers(0, 2),
    cap=st.integers(1, 10),
)
@example(crash_after_ms=2_500, max_retries=0, cap=5)
def test_flyctl_smoke_passes_a_crash_loop_whose_machine_gave_up(
    crash_after_ms: int, max_retries: int, cap: int
) -> None:
    """Blind spot: a machine given up on by restart 2 (restarting = false) never fails it."""
    # The pinned example is the smallest such world: one crash, no retries; the publish
    # passes because the window runs out.
    w = world(App(crash_after_ms=crash_after_ms, max_retries=max_retries, cap=cap))
    run = drive_world(FlyctlSmokeCheck(), w)
    note(repr(run.verdict))
    assert run.verdict is not None
    assert w.bad
    assert run.verdict.layer != "constantly-restarting"
    if first_all_started(run.looks) is not None:
        assert run.verdict.ok


def test_flyctl_smoke_names_a_given_up_machine_when_the_window_runs_out() -> None:
    """When it passes a machine the platform gave up on, the reason says so."""
    run = drive_world(FlyctlSmokeCheck(), world(App(crash_after_ms=2_500, max_retries=0)))
    assert run.verdict is not None
    assert run.verdict.ok
    assert run.verdict.layer == "window-ran-out"
    assert "gave up restarting it" in run.verdict.reason


def test_flyctl_smoke_proves_uptime_only_while_the_launch_is_listed() -> None:
    """Blind spot: a healthy machine passes on uptime with its launch listed, by timeout without.

    Sampled reading: its window opens at the +1 s look, so by its end the machine has been
    up over 10 s. (Under the long-poll reading the window opens at the start itself, and
    10 s of uptime is never over 10 s within it: window-ran-out either way.)"""
    fresh = App(crash_after_ms=None, updated=False)
    sampled = FlyctlSmokeCheck(wait_reading="sampled")
    with_launch = drive_world(sampled, world(fresh))
    launch_lost = drive_world(sampled, world(dataclasses.replace(fresh, cap=1)))
    assert with_launch.verdict is not None
    assert launch_lost.verdict is not None
    assert with_launch.verdict.layer == "uptime"
    assert launch_lost.verdict.layer == "window-ran-out"


events = st.builds(
    Event,
    type=st.sampled_from(["launch", "start", "exit", "update", "restart"]),
    status=st.just("s"),
    timestamp=st.integers(0, 10**6),
)


@given(listed=st.lists(events, max_size=8))
def test_flyctl_uptime_needs_a_launch_in_the_list(listed: list[Event]) -> None:
    """MostRecentStartTimeAfterLaunch errors whenever the capped list holds no launch event."""
    without_launch = tuple(e for e in listed if e.type != "launch")
    assert most_recent_start_after_launch(without_launch) is None


@given(listed=st.lists(events, max_size=8))
def test_flyctl_uptime_is_the_oldest_start_after_the_newest_launch(listed: list[Event]) -> None:
    """A start time comes back only from a start listed after the newest launch: the oldest such."""
    result = most_recent_start_after_launch(tuple(listed))
    if result is None:
        return
    kinds = [e.type for e in listed]
    launch = kinds.index("launch")
    starts_after = [i for i, kind in enumerate(kinds[:launch]) if kind == "start"]
    assert starts_after
    assert result == listed[max(starts_after)].timestamp


def test_flyctl_uptime_can_count_a_machine_that_exited_since() -> None:
    """Quirk kept from flyctl: only the oldest exit after the launch is compared with the start."""
    listed = (
        Event("exit", "stopped", 4_000, exit_code=1),
        Event("start", "started", 3_000),
        Event("exit", "stopped", 2_000, exit_code=1),
        Event("launch", "created", 1_000),
    )
    assert most_recent_start_after_launch(listed) == 3_000


def test_flyctl_uptime_keeps_flyctls_quirk_of_the_oldest_start_after_launch() -> None:
    """With two starts after the launch (a restart without an exit event) it reports the older."""
    listed = (
        Event("start", "started", 5_000),
        Event("start", "started", 3_000),
        Event("launch", "created", 1_000),
    )
    assert most_recent_start_after_launch(listed) == 3_000


# --- min-healthy-time ----------------------------------------------------------------


@given(w=worlds, min_healthy_s=st.floats(1, 30), deadline_s=st.floats(30, 150))
def test_min_healthy_time_never_passes_a_start_younger_than_t(
    w: World, min_healthy_s: float, deadline_s: float
) -> None:
    """At a pass, every machine reads started with its newest start at least T old."""
    check = MinHealthyTimeCheck(min_healthy_s=min_healthy_s, healthy_deadline_s=deadline_s)
    run = drive_world(check, w)
    assert run.verdict is not None
    if not run.verdict.ok:
        return
    for machine in run.looks[-1].machines:
        start = newest_start_ms(machine)
        assert machine.state == "started"
        assert start is not None
        assert start >= PUBLISH_MS
        assert machine.at_ms - start >= min_healthy_s * 1000


@given(app=apps, min_healthy_s=st.floats(1, 30))
def test_min_healthy_time_fails_every_crash_loop_faster_than_t(app: App, min_healthy_s: float) -> None:
    """An app that crashes sooner than T after every start fails, whatever the list's cap."""
    crash_after_ms = min(app.crash_after_ms or 1_000, int(min_healthy_s * 1000) - 1)
    w = world(dataclasses.replace(app, crash_after_ms=crash_after_ms), horizon_s=200)
    check = MinHealthyTimeCheck(min_healthy_s=min_healthy_s, healthy_deadline_s=60)
    run = drive_world(check, w)
    assert run.verdict is not None
    assert not run.verdict.ok
    # Nomad fails a task that failed for good at once, and any other at the deadline.
    gave_up = any(m.gave_up for m in run.looks[-1].machines)
    assert run.verdict.layer == ("task-failed" if gave_up else "healthy-deadline")


@given(crash_after_ms=st.integers(10_001, 60_000), cap=st.integers(1, 10))
@example(crash_after_ms=10_001, cap=5)
def test_min_healthy_time_passes_a_crash_loop_slower_than_t(crash_after_ms: int, cap: int) -> None:
    """Blind spot: an app that crashes more than T after every start passes."""
    # The pinned example is the smallest: T = 10 s and a crash 10.001 s after each start
    # (a crash at exactly T lands on the deciding look and fails it).
    w = world(App(crash_after_ms=crash_after_ms, cap=cap))
    run = drive_world(MinHealthyTimeCheck(min_healthy_s=10), w)
    assert w.bad
    assert run.verdict is not None
    assert run.verdict.ok


def test_min_healthy_time_restarts_its_timer_when_the_newest_start_moves() -> None:
    """A crash and restart between two looks moves the newest start: the machine is young again."""

    def machine(start_ms: int, at_ms: int) -> MachineSnapshot:
        return MachineSnapshot("m1", "started", "app", (Event("start", "started", start_ms),), at_ms)

    t = PUBLISH_MS
    looks = [
        Look(t + 1_000, (machine(t + 500, t + 1_000),)),
        Look(t + 9_000, (machine(t + 8_000, t + 9_000),)),
        Look(t + 11_000, (machine(t + 8_000, t + 11_000),)),
    ]
    step = MinHealthyTimeCheck(min_healthy_s=10).next(t, looks)
    assert isinstance(step, Wait)


# --- restart-counter -----------------------------------------------------------------


@given(w=worlds)
def test_restart_counter_fails_at_once_where_the_platform_exposes_no_counter(w: World) -> None:
    """Without a counter the check fails at the first look and says why."""
    hidden = World(
        tuple(
            dataclasses.replace(m, app=dataclasses.replace(m.app, restart_counter=False)) for m in w.machines
        ),
        w.horizon_ms,
    )
    run = drive_world(RestartCounterCheck(), hidden)
    assert run.verdict is not None
    assert not run.verdict.ok
    assert run.verdict.layer == "no-counter"
    assert len(run.looks) == 1
    assert "exposes no restart counter" in run.verdict.reason


@given(apps=st.lists(apps.map(lambda a: dataclasses.replace(a, restart_counter=True)), min_size=1))
def test_restart_counter_never_passes_when_a_counter_rose(apps: list[App]) -> None:
    """At a pass, every machine's counter equals the one it had at the publish's first look."""
    run = drive_world(RestartCounterCheck(), world(*apps[:3], horizon_s=200))
    assert run.verdict is not None
    if not run.verdict.ok:
        return
    first, last = run.looks[0], run.looks[-1]
    for machine in last.machines:
        before = first.machine(machine.id)
        assert before is not None
        assert machine.restart_counter == before.restart_counter


@given(app=apps, cap=st.integers(1, 10))
def test_restart_counter_catches_a_restart_before_the_window_ends_whatever_the_cap(
    app: App, cap: int
) -> None:
    """A crash loop restarting within look_delay_s of boot fails, even with a one-event list."""
    app = dataclasses.replace(
        app,
        crash_after_ms=min(app.crash_after_ms or 500, 2_000),
        max_retries=None,
        cap=cap,
        restart_counter=True,
    )
    run = drive_world(RestartCounterCheck(look_delay_s=5), world(app, horizon_s=200))
    assert run.verdict is not None
    assert not run.verdict.ok


@given(crash_after_ms=st.integers(6_000, 60_000))
@example(crash_after_ms=6_000)
def test_restart_counter_passes_a_crash_after_its_window(crash_after_ms: int) -> None:
    """Blind spot: the first crash comes after look_delay_s, so the counter has not moved yet."""
    w = world(App(crash_after_ms=crash_after_ms, restart_counter=True))
    run = drive_world(RestartCounterCheck(look_delay_s=5), w)
    assert w.bad
    assert run.verdict is not None
    assert run.verdict.ok


# --- circuit-breaker -----------------------------------------------------------------


@given(desired=st.integers(1, 10_000), percent=st.integers(1, 200))
def test_ecs_threshold_is_half_the_desired_count_clamped_3_to_200(desired: int, percent: int) -> None:
    """The computed threshold is percent of the desired count, rounded up, within 3..200."""
    threshold = ecs_threshold(desired, percent)
    assert 3 <= threshold <= 200
    if 3 < threshold < 200:
        assert (threshold - 1) * 100 < desired * percent <= threshold * 100
    assert ecs_threshold(1) == 3
    assert ecs_threshold(9) == 5
    assert ecs_threshold(1_000) == 200


@given(w=worlds)
def test_circuit_breaker_counts_no_more_crashes_than_happened(w: World) -> None:
    """The failures it counts are real: never more than the crashes since the publish."""
    run = drive_world(CircuitBreakerCheck(completion_timeout_s=60), w)
    true_crashes = sum(m.crashes_after_publish for m in w.machines)
    assert len(failed_starts(run.looks, PUBLISH_MS)) <= true_crashes
    assert run.verdict is not None
    if run.verdict.layer == "circuit-breaker" and not run.verdict.ok:
        assert true_crashes >= CircuitBreakerCheck().threshold_for(len(w.machines))


def test_circuit_breaker_trips_on_a_fast_crash_loop() -> None:
    """Three crashes of a fast crash loop within the window trip the default threshold of 3."""
    run = drive_world(CircuitBreakerCheck(), world(App(crash_after_ms=1_000)))
    assert run.verdict is not None
    assert not run.verdict.ok
    assert run.verdict.layer == "circuit-breaker"
    assert "threshold of 3" in run.verdict.reason


@given(cap=st.integers(1, 2))
@example(cap=1)
def test_circuit_breaker_loses_crashes_that_fall_off_between_looks(cap: int) -> None:
    """Blind spot: looks far apart on a short list see one crash each; the rest go uncounted."""
    # A 700 ms crash cycle: the looks, 4 s apart, land while the machine reads started.
    app = App(crash_after_ms=600, boot_ms=100, restart_delay_ms=0, max_retries=None, cap=cap)
    w = world(app, horizon_s=60)
    check = CircuitBreakerCheck(threshold=4, poll_s=4, completion_timeout_s=12)
    run = drive_world(check, w)
    note(f"{[(k.at_ms, [m.state for m in k.machines]) for k in run.looks]}")
    counted = len(failed_starts(run.looks, PUBLISH_MS))
    happened = sum(
        1 for s in w.machines[0].steps if s.event.is_crash and s.event.timestamp <= run.looks[-1].at_ms
    )
    assert counted < check.threshold_for(1) <= happened
    assert run.verdict is not None
    # Never tripped; it fails only because the deployment never completed.
    assert run.verdict.layer == "not-completed"


def test_circuit_breaker_threshold_option_overrides_the_ecs_formula() -> None:
    """An explicit threshold is ECS's COUNT type: used as is, whatever the machine count."""
    assert CircuitBreakerCheck(threshold=1).threshold_for(400) == 1
    assert CircuitBreakerCheck().threshold_for(400) == 200


def test_every_platform_check_returns_a_wait_first() -> None:
    """With no looks yet, every platform check asks to look now."""
    for name in PLATFORM_CHECKS:
        assert BUILTIN_CHECKS[name]().next(PUBLISH_MS, []) == Wait(0.0)


def test_verdicts_name_the_machine_they_failed() -> None:
    """A failing platform check names the crashing machine, never the healthy one."""
    w = world(
        App(crash_after_ms=None, restart_counter=True),
        App(crash_after_ms=1_000, restart_counter=True),
    )
    options = {"look_delay_s": 10.0, "healthy_deadline_s": 30.0, "completion_timeout_s": 60.0}
    for name in PLATFORM_CHECKS:
        run = drive_world(make_check(name, options), w)
        assert isinstance(run.verdict, Verdict)
        assert not run.verdict.ok, name
        assert run.verdict.machine == "m2", (name, run.verdict)
