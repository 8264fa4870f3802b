"""flyctl's deploy flow as plan.go runs it (issue 19): pre-deploy state, long poll, listen wait, jitter."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from platform_testbed.checks import Event, Look, MachineSnapshot, Verdict, Wait
from platform_testbed.checks.drive import CheckFailed, drive, drive_deploying
from platform_testbed.checks.flyctl import (
    ASLEEP,
    LAUNCHED,
    FlyctlSmokeCheck,
    jittered,
    pre_deploy_state,
    reached_at,
)
from platform_testbed.checks.flyjson import look_to_json, replay
from platform_testbed.checks.model import Update
from platform_testbed.checks.registry import make_check
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario
from platform_testbed.sim.kit.testing import PUBLISH_MS, App, drive_world
from platform_testbed.sim.kit.testing import world as kit_world
from platform_testbed.sim.publish import world
from platform_testbed.sim.publish.recording import recorded_seed
from platform_testbed.sim.publish.sharing import run_checks

T0 = 1_700_000_000_000
LAUNCH = Event("launch", "created", T0 - 60_000, "user")
RAN = Event("start", "started", T0 - 50_000)
UPDATE = Event("update", "replacing", T0, "user")


def crash(at: int, count: int, restarting: bool = True) -> Event:
    """A crash exit ``at`` ms after the publish."""
    return Event("exit", "stopped", T0 + at, exit_code=1, restarting=restarting,
                 restart_count=count)


def start(at: int) -> Event:
    return Event("start", "started", T0 + at)


def snap(state: str, at: int, *events: Event, mid: str = "m1") -> MachineSnapshot:
    return MachineSnapshot(mid, state, "app", events, T0 + at)


def test_the_pre_deploy_state_is_the_newest_event_before_the_publish() -> None:
    """started before the update reads started, whatever the machine reads now."""
    now = snap("stopped", 20_000, crash(19_000, 3), start(18_000), UPDATE, RAN, LAUNCH)
    assert pre_deploy_state(now, T0) == "started"
    assert pre_deploy_state(snap("stopped", 1_000, UPDATE, LAUNCH), T0) == "created"
    restarting = snap("stopped", 1_000, UPDATE, Event("exit", "stopped", T0 - 10, exit_code=1,
                                                      restarting=True))
    assert pre_deploy_state(restarting, T0) == "starting"  # assumed: flyd was restarting it
    assert pre_deploy_state(snap("stopped", 1_000, crash(900, 2)), T0) is None  # capped away


@pytest.mark.parametrize("state", ["created", "replacing", "stopping", "stopped", "suspended",
                                   "started", "starting", "failed"])
def test_should_skip_launch_skips_every_pre_deploy_state_but_started_starting_failed(state) -> None:
    """machines_launchinput.go shouldSkipLaunch: skipped unless started, starting or failed."""
    before = Event("x", state, T0 - 1_000)
    machine = snap("started", 1_000, start(500), UPDATE, before, LAUNCH)
    step = FlyctlSmokeCheck().next(T0, [Look(T0 + 1_000, (machine,))])
    skipped = isinstance(step, Verdict) and step.layer == "skipped"
    assert skipped is (state not in LAUNCHED)
    if skipped:
        assert step.reason.endswith(f"m1 ({state})")


def _between_restarts_recording() -> str:
    """A machine that ran before the publish, crash-looping after it; the first look, +20 s
    after the publish, catches it stopped between restarts (restart_count 3)."""
    first = snap("stopped", 20_000, crash(19_500, 3), start(17_500), crash(17_000, 2),
                 start(15_000), UPDATE, RAN, LAUNCH)
    later = snap("started", 21_000, start(20_500), crash(19_500, 3), start(17_500),
                 crash(17_000, 2), start(15_000))
    lines = [look_to_json(Look(T0 + 20_000, (first,)), T0),
             look_to_json(Look(T0 + 21_000, (later,)), T0)]
    return "".join(line + "\n" for line in lines)


def test_a_replay_whose_first_look_catches_a_crash_loop_between_restarts_fails_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 19: flyctl-smoke fails it; the first look's `stopped` no longer marks it skipped."""
    path = tmp_path / "between-restarts.jsonl"
    path.write_text(_between_restarts_recording())
    assert main(["replay", str(path), "--check", "flyctl-smoke", "--json"]) in (0, 1)
    (row,) = json.loads(capsys.readouterr().out)["results"]
    assert row["verdict"] == "fail", row
    assert row["reason"].startswith("the app appears to be crashing"), row
    assert "restart_count = 3" in row["reason"]
    # The first look alone would have read it as asleep: the rule issue 19 removed.
    assert json.loads(path.read_text().splitlines()[0])["machines"][0]["state"] in ASLEEP


def test_a_machine_asleep_before_the_publish_is_skipped_even_if_the_pipeline_starts_it() -> None:
    """sleeping-api-crash-on-boot: stopped before the update, so flyctl skips it; awake, caught."""
    asleep = scenario.load("sleeping-api-crash-on-boot")
    awake = scenario.load("sleeping-api-crash-on-boot", ["previous.asleep=false"])
    check = FlyctlSmokeCheck(poll_s=asleep.check.poll_s)
    ran_asleep = world.run(asleep, asleep.seed, check)
    assert ran_asleep.verdict is not None
    assert ran_asleep.verdict.layer == "skipped"
    assert world.run(awake, awake.seed, check).outcome == "caught"


def _loop_look(k: int) -> Look:
    """A 1 s crash loop under `always`, looked at on the second: it reads starting each time.

    Cycle k starts at +k s - 600 ms and crashes at +k s - 100 ms (restart_count k - 1).
    """
    events: list[Event] = []
    for j in range(k, 0, -1):
        events += [crash(1_000 * j - 100, j - 1), start(1_000 * j - 600)]
    events += [UPDATE, RAN, LAUNCH]
    return Look(T0 + 1_000 * k, (snap("starting", 1_000 * k, *events[:5]),))


def _drive(check: FlyctlSmokeCheck, look_at, until_s: int = 60) -> Verdict:
    """Call the check as a driver does, taking each look at the whole second due."""
    looks: list[Look] = []
    at_s = 1
    while at_s <= until_s:
        looks.append(look_at(at_s))
        step = check.next(T0, looks)
        if isinstance(step, Verdict):
            return step
        assert isinstance(step, Wait)
        at_s += max(1, round(step.seconds))
    raise AssertionError("undecided")


def test_long_poll_catches_a_crash_loop_the_samples_never_see_started() -> None:
    """The loop aliases with the 1 s poll: sampled times out, long-poll reads it crashing."""
    sampled = _drive(FlyctlSmokeCheck(wait_reading="sampled", wait_timeout_s=20), _loop_look)
    assert sampled.layer == "wait-timeout"
    polled = _drive(FlyctlSmokeCheck(wait_timeout_s=20), _loop_look)
    assert polled.layer == "constantly-restarting"


def test_reached_at_is_the_earliest_wait_state_since_the_publish() -> None:
    """The earliest start/started or crash exit counts; the update's requested stop does not."""
    stop = Event("exit", "stopped", T0, requested_stop=True)
    machine = snap("starting", 3_000, crash(2_500, 1), start(2_000), crash(1_500, 0),
                   start(900), stop, UPDATE)
    assert reached_at(machine, ("started", "stopped", "suspended"), T0) == (T0 + 900, "started")
    assert reached_at(machine, ("stopped",), T0) == (T0 + 1_500, "stopped")
    assert reached_at(snap("starting", 500, stop, UPDATE), ("stopped",), T0) is None


def test_the_first_machine_settled_not_started_waits_for_its_listen_address() -> None:
    """plan.go, read as no-listener: the listen-address wait (15 s) delays the first window."""
    gave_up = snap("stopped", 1_000, crash(900, 0, restarting=False), UPDATE, RAN, LAUNCH)
    up = snap("started", 1_000, start(800), UPDATE, mid="m2")  # no launch listed: no uptime
    looks = [Look(T0 + 1_000, (gave_up, up))]
    no_listener = FlyctlSmokeCheck(listen_reading="no-listener")
    # Both waits end at plan.go's +1.0 s tick (waitForMachineState checks every 1 s): m1
    # reads stopped there, so its window opens at +16.0 s; m2 is read at once.
    assert no_listener.next(T0, looks) == Wait(0.5)  # m2's next read, at +1.5 s
    alone = [Look(T0 + 1_000, (gave_up,))]
    assert no_listener.next(T0, alone) == Wait(15.0)
    assert FlyctlSmokeCheck(listen_reading="no-listener", listen_wait_s=0).next(T0, alone) == Wait(0.5)


def test_by_default_the_listen_wait_returns_at_once_on_a_machine_not_started() -> None:
    """flyctl's code path: GetProcesses fails on a machine with no processes, so no wait."""
    gave_up = snap("stopped", 1_000, crash(900, 0, restarting=False), UPDATE, RAN, LAUNCH)
    alone = [Look(T0 + 1_000, (gave_up,))]
    assert FlyctlSmokeCheck().listen_reading == "ps-fails"
    assert FlyctlSmokeCheck().next(T0, alone) == Wait(0.5)


@given(seed=st.integers(0, 2**32), attempt=st.integers(0, 12), machine=st.text(max_size=8))
def test_jittered_backoff_stays_in_jpillora_bounds_and_is_a_function_of_its_inputs(
    seed: int, attempt: int, machine: str
) -> None:
    """Wait k is in [0.5 s, min(0.5 * 2^k, 2) s], 0.5 s exactly at k = 0, the same for the same seed."""
    check = FlyctlSmokeCheck(jitter_seed=seed)
    wait = check._backoff_s(machine, attempt)
    assert 0.5 <= wait <= min(0.5 * 2**attempt, 2.0)
    if attempt == 0:
        assert wait == 0.5
    assert wait == FlyctlSmokeCheck(jitter_seed=seed)._backoff_s(machine, attempt)
    assert 0.5 <= jittered(0.5, 4.0, seed, machine, attempt) <= 4.0


def test_jitter_draws_differ_between_seeds_and_none_keeps_the_upper_bounds() -> None:
    """Two seeds give different waits somewhere; no seed gives 0.5, 1, 2, 2 s."""
    first = [FlyctlSmokeCheck(jitter_seed=1)._backoff_s("m1", k) for k in range(1, 6)]
    second = [FlyctlSmokeCheck(jitter_seed=2)._backoff_s("m1", k) for k in range(1, 6)]
    assert first != second
    assert [FlyctlSmokeCheck()._backoff_s("m1", k) for k in range(4)] == [0.5, 1.0, 2.0, 2.0]


# --- the rolling update: a pool at a time, cancelled at the first failure, retried ------


@dataclass(frozen=True)
class _Watched(FlyctlSmokeCheck):
    """flyctl-smoke that notes, after every look it folds, how many warm machines are in flight."""

    def _pool_fold(self, r, look, publish_started_ms):  # type: ignore[no-untyped-def]
        verdict = super()._pool_fold(r, look, publish_started_ms)
        _FLIGHTS.append((len(r.running), r.pool, len(r.warm)))
        return verdict


_FLIGHTS: list[tuple[int, int, int]] = []


class _Logged:
    """A deploying check's steps as the driver got them (the Updates among them)."""

    def __init__(self, check: FlyctlSmokeCheck) -> None:
        self.check = check
        self.name = check.name
        self.updates: list[tuple[int, tuple[str, ...]]] = []

    @property
    def deploys(self) -> bool:
        return True

    def for_driver(self, seed: int | None, updates: bool) -> _Logged:
        self.check = self.check.for_driver(seed, updates)
        return self

    def next(self, publish_started_ms: int, looks):  # type: ignore[no-untyped-def]
        step = self.check.next(publish_started_ms, looks)
        if isinstance(step, Update):
            self.updates.append((looks[-1].at_ms - PUBLISH_MS, step.machine_ids))
        return step


fleet = st.lists(
    st.builds(App, boot_ms=st.integers(100, 3_000),
              crash_after_ms=st.none() | st.integers(1_000, 20_000),
              restart_delay_ms=st.integers(0, 2_000), max_retries=st.integers(0, 10),
              restart_policy=st.sampled_from(["no", "always", "on-failure"]),
              updated=st.booleans()),
    min_size=1, max_size=8)


@given(apps=fleet, share=st.sampled_from([0.33, 0.5, 2.0]))
def test_the_pool_never_has_more_than_its_size_in_flight(apps: list[App], share: float) -> None:
    """At every look, at most getPoolSize(warm) = ceil(share x warm) (or the count) are in flight."""
    _FLIGHTS.clear()
    drive_world(_Watched(max_unavailable=share), kit_world(*apps, horizon_s=120))
    assert _FLIGHTS
    for running, pool, warm in _FLIGHTS:
        assert pool == (int(share) if share >= 1 else math.ceil(share * warm))
        assert running <= pool


def test_seven_warm_machines_are_updated_three_at_a_time() -> None:
    """ceil(0.33 x 7) = 3: the next machine's update starts when one in flight finishes."""
    apps = [App(crash_after_ms=None, boot_ms=400 + 1_000 * i) for i in range(7)]
    logged = _Logged(FlyctlSmokeCheck(listen_wait_s=0))
    run = drive_world(logged, kit_world(*apps, horizon_s=200))
    assert run.verdict is not None
    assert run.verdict.ok
    assert logged.updates[0] == (0, ("m1", "m2", "m3"))
    # Each later Update names one machine: a slot freed by one that finished.
    assert [len(ids) for _, ids in logged.updates[1:]] == [1, 1, 1, 1]
    assert [t for t, _ in logged.updates] == sorted(t for t, _ in logged.updates)


def test_after_the_first_failure_no_queued_machine_is_updated() -> None:
    """m1 crash-loops and fails at +10.5 s; m2 was in flight; m3..m5 keep the previous release."""
    apps = [App()] + [App(crash_after_ms=None)] * 4  # ceil(0.33 x 5) = 2 at once
    logged = _Logged(FlyctlSmokeCheck(jitter="upper-bounds"))
    run = drive_world(logged, kit_world(*apps, horizon_s=120))
    assert run.verdict is not None
    assert not run.verdict.ok
    assert run.decided_at_ms == PUBLISH_MS + 10_500
    assert logged.updates == [(0, ("m1", "m2"))]
    assert run.verdict.reason.endswith(
        "skipping machine update due to earlier failure, so these keep the previous release: "
        "m3, m4, m5")
    last = run.looks[-1]
    for mid in ("m3", "m4", "m5"):
        machine = last.machine(mid)
        assert machine is not None
        assert machine.state == "started"
        assert all(e.timestamp < PUBLISH_MS for e in machine.events), mid


def test_the_simulator_leaves_the_cancelled_machines_on_the_previous_release() -> None:
    """Five machines crash-looping as the test kit's App does: only the first pool is updated."""
    loaded = scenario.load("sept25-crash-loop", ["release.machines=5", "platform.jitter=0",
                                                 "platform.restart_delay_s=0.3",
                                                 "platform.boot_s=0.4"])
    result = world.run(loaded, 0, FlyctlSmokeCheck(), trace=True)
    assert result.verdict is not None
    assert not result.verdict.ok, result.verdict
    assert result.trace is not None
    publish_ms = loaded.publish_started_ms
    for machine in result.trace.machines:
        updated = any(e.type == "update" and e.timestamp >= publish_ms for e in machine.events)
        assert updated is (machine.id in ("m1", "m2")), machine.id


def _slow_boot_run(retries: int) -> Verdict | None:
    # Boots in 2,000 s, past every 300 s wait of every retry.
    apps = [App(crash_after_ms=None, boot_ms=2_000_000), App(crash_after_ms=None)]
    run = drive_world(FlyctlSmokeCheck(deploy_retries=retries), kit_world(*apps, horizon_s=2_100))
    assert run.verdict is not None
    return run.verdict if run.decided_at_ms is None else replace(
        run.verdict, reason=f"{(run.decided_at_ms - PUBLISH_MS) / 1000:g}")


@pytest.mark.parametrize("retries", [0, 1, 2, 3])
def test_a_wait_timeout_is_retried_as_plan_go_counts(retries: int) -> None:
    """plan.go l.293-343: the first retry at once, each later one 1 s after the last fails,
    while attempts <= deploy_retries: R + 1 retries of 300 s (none at R = 0), then the first error."""
    verdict = _slow_boot_run(retries)
    assert verdict is not None
    assert (verdict.ok, verdict.machine, verdict.layer) == (False, "m1", "wait-timeout")
    expected_s = 300 if retries == 0 else 600 + 301 * retries + 1
    assert verdict.reason == f"{expected_s:g}"


def test_a_smoke_check_failure_is_not_retried() -> None:
    """An unrecoverableError ends the deploy at once, whatever deploy_retries says."""
    decided = {r: drive_world(FlyctlSmokeCheck(deploy_retries=r, jitter="upper-bounds"),
                              kit_world(App())).decided_at_ms
               for r in (0, 3)}
    assert decided[0] == decided[3] == PUBLISH_MS + 10_500


def test_a_machine_that_boots_within_a_retry_passes() -> None:
    """The retry waits afresh: a 400 s boot times out once, then settles in the retry."""
    apps = [App(crash_after_ms=None, boot_ms=400_000)]
    run = drive_world(FlyctlSmokeCheck(deploy_retries=1), kit_world(*apps, horizon_s=600))
    assert run.verdict is not None
    assert run.verdict.ok
    assert drive_world(FlyctlSmokeCheck(deploy_retries=0),
                       kit_world(*apps, horizon_s=600)).verdict.layer == "wait-timeout"


def test_replay_refuses_an_explicit_pool_in_one_line() -> None:
    """A recording's machines were updated by its deploy: replay cannot carry out an Update."""
    look = Look(T0, (snap("started", 0, RAN, LAUNCH),))
    with pytest.raises(CheckFailed, match=r"^check asked to update m1, which this driver cannot"):
        replay(FlyctlSmokeCheck(rollout="pool"), T0, [look, look])
    steps = drive(FlyctlSmokeCheck(rollout="pool"), T0)
    next(steps)
    with pytest.raises(CheckFailed, match=r"^check asked to update m1, which this driver cannot"):
        steps.send(look)


def test_an_update_must_name_machines() -> None:
    """An empty Update is a protocol error, named in one line."""

    class Empty:
        name = "empty"

        def next(self, publish_started_ms: int, looks):  # type: ignore[no-untyped-def]
            return Update(())

    with pytest.raises(CheckFailed, match="non-empty tuple of machine id strings"):
        next(drive_deploying(Empty(), T0))  # type: ignore[arg-type]


def test_checks_that_do_not_deploy_see_the_fleet_updated_at_the_publish() -> None:
    """count's looks in a five-machine world are the same with flyctl-smoke deploying beside it."""
    loaded = scenario.load("sept25-crash-loop", ["release.machines=5"])
    alone = world.run(loaded, 0, make_check("count", {}))
    beside = run_checks(loaded, 0, [make_check("count", {}), FlyctlSmokeCheck()])
    assert beside[0] == alone


# --- jitter from the run's seed ---------------------------------------------------------


def test_the_worlds_seed_reaches_the_backoff_draws_by_default() -> None:
    """The kit's world seed is the check's jitter_seed; upper-bounds keeps 0.5, 1, 2, 2 s."""
    looks = {}
    for label, check, seed in [("default", FlyctlSmokeCheck(), 5),
                               ("stated", FlyctlSmokeCheck(jitter_seed=5), 0),
                               ("upper", FlyctlSmokeCheck(jitter="upper-bounds"), 5)]:
        run = drive_world(check, kit_world(App(), seed=seed))
        looks[label] = [look.at_ms - PUBLISH_MS for look in run.looks]
    assert looks["default"] == looks["stated"]
    assert looks["upper"][:8] == [0, 0, 1_000, 1_500, 2_500, 4_500, 6_500, 8_500]
    assert looks["default"] != looks["upper"]
    assert FlyctlSmokeCheck().for_driver(9, updates=False).jitter_seed == 9
    assert FlyctlSmokeCheck(jitter_seed=3).for_driver(9, updates=False).jitter_seed == 3
    assert FlyctlSmokeCheck(jitter="upper-bounds").for_driver(9, updates=True).jitter_seed is None


def test_same_seed_same_output_and_another_seed_other_draws(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """compare --json twice with one seed prints the same bytes; the seed moves flyctl's reads."""
    outputs = []
    for seed in ("7", "7", "8"):
        assert main(["compare", "sept25-crash-loop", "--check", "flyctl-smoke", "--json",
                     "--seed", seed, "--set", "platform.restart_delay_s=0.3",
                     "--set", "platform.boot_s=0.4"]) in (0, 1)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    loaded = scenario.load("sept25-crash-loop", ["platform.jitter=0"])
    seeded = [world.run(loaded, s, FlyctlSmokeCheck()) for s in (7, 8)]
    times = [[r.look.at_ms for r in result.looks] for result in seeded]
    assert times[0] != times[1]  # no platform jitter: only the check's draws differ


def test_replay_hands_the_recorded_seed_to_the_check() -> None:
    """A run the simulator labelled NAME/seed=N replays with N as the draws' seed."""
    assert recorded_seed("flyctl-smoke/seed=12") == 12
    assert recorded_seed("incident") is None
    assert recorded_seed(None) is None
