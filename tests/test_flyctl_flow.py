"""flyctl's deploy flow as plan.go runs it (issue 19): pre-deploy state, long poll, listen wait, jitter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from platform_testbed.checks import Event, Look, MachineSnapshot, Verdict, Wait
from platform_testbed.checks.flyctl import (
    ASLEEP,
    LAUNCHED,
    FlyctlSmokeCheck,
    jittered,
    pre_deploy_state,
    reached_at,
)
from platform_testbed.checks.flyjson import look_to_json
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish import world

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
    """plan.go: the listen-address wait (15 s) delays the first machine's smoke window."""
    gave_up = snap("stopped", 1_000, crash(900, 0, restarting=False), UPDATE, RAN, LAUNCH)
    up = snap("started", 1_000, start(800), UPDATE, mid="m2")  # no launch listed: no uptime
    looks = [Look(T0 + 1_000, (gave_up, up))]
    # Both waits end at plan.go's +1.0 s tick (waitForMachineState checks every 1 s): m1
    # reads stopped there, so its window opens at +16.0 s; m2 is read at once.
    assert FlyctlSmokeCheck().next(T0, looks) == Wait(0.5)  # m2's next read, at +1.5 s
    alone = [Look(T0 + 1_000, (gave_up,))]
    assert FlyctlSmokeCheck().next(T0, alone) == Wait(15.0)
    assert FlyctlSmokeCheck(listen_wait_s=0).next(T0, alone) == Wait(0.5)


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
