"""Exact behaviour of the check building blocks and the layered and restart-counter checks.

Hand-built looks only (no simulator, no search): each test pins a reason string, a layer,
a boundary or a wait, so that ``make mutate`` kills the mutants that change them. Reasons
are user-facing text, so they are pinned whole; the expected text is written from the
rule each reason states, with the numbers worked out by hand.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from platform_testbed.checks import (
    CountCheck,
    Event,
    Look,
    MachineSnapshot,
    RestartCounterCheck,
    TimestampCheck,
    Verdict,
    Wait,
    make_check,
)
from platform_testbed.checks.drive import CheckFailed, check_name, drive
from platform_testbed.checks.failsafe import lost_machines
from platform_testbed.checks.layered import LayeredCheck
from platform_testbed.checks.reasons import describe, since
from platform_testbed.checks.started import await_started, first_all_started, wait_at_least
from tests.exact_events import T0, crash, decided, start

LAUNCH = Event("launch", "created", T0 - 60_000, "user")
UPDATE = Event("update", "replaced", T0, "user")


def snap(
    mid: str, at: int, state: str = "started", *events: Event, counter: int | None = None
) -> MachineSnapshot:
    """A snapshot taken at ``at``; ``events`` newest first."""
    return MachineSnapshot(mid, state, "app", tuple(events), at, counter)





# --- model ---------------------------------------------------------------------------


def test_a_crash_is_an_unrequested_exit_with_a_nonzero_code_or_an_oom_kill() -> None:
    """Non-zero or OOM exits crash; clean, requested and non-exit events do not."""
    assert crash(0).is_crash
    assert Event("exit", "stopped", T0, exit_code=None, oom_killed=True).is_crash
    assert not Event("exit", "stopped", T0, exit_code=0).is_crash
    assert not Event("exit", "stopped", T0, exit_code=None).is_crash
    assert not Event("exit", "stopped", T0, exit_code=1, requested_stop=True).is_crash
    assert not Event("exit", "stopped", T0, oom_killed=True, requested_stop=True).is_crash
    assert not Event("start", "started", T0, exit_code=1).is_crash


def test_crashes_since_includes_a_crash_at_exactly_the_time_given() -> None:
    """``crashes_since`` keeps crashes at or after the time, newest first, and skips non-crashes."""
    machine = snap("m1", T0 + 5_000, "stopped", crash(3_000), start(2_000), crash(0), crash(-1))
    assert [e.timestamp for e in machine.crashes_since(T0)] == [T0 + 3_000, T0]


def test_newest_exit_is_the_first_exit_in_the_list() -> None:
    """The newest exit is the first ``exit`` of the newest-first list, or None."""
    machine = snap("m1", T0, "started", start(3), crash(2), crash(1))
    assert machine.newest_exit() == crash(2)
    assert snap("m1", T0, "started", start(3)).newest_exit() is None


def test_gave_up_needs_a_stopped_or_failed_machine_whose_newest_exit_crashed_without_restart() -> None:
    """Gave up: stopped or failed, newest exit a crash with restarting=false."""
    final = crash(5, restarting=False)
    assert snap("m1", T0, "stopped", final).gave_up
    assert snap("m1", T0, "failed", final).gave_up
    assert not snap("m1", T0, "started", final).gave_up
    assert not snap("m1", T0, "stopped").gave_up
    assert not snap("m1", T0, "stopped", crash(5, restarting=True)).gave_up
    assert not snap("m1", T0, "stopped", crash(5, restarting=False, code=0)).gave_up


def test_look_finds_a_machine_by_id() -> None:
    """``Look.machine`` returns the snapshot with that id, or None."""
    m1, m2 = snap("m1", T0), snap("m2", T0)
    look = Look(T0, (m1, m2))
    assert look.machine("m2") is m2
    assert look.machine("m3") is None


# --- reasons -------------------------------------------------------------------------


def test_since_is_seconds_after_the_publish_to_one_decimal() -> None:
    """A time prints as seconds after the publish, one decimal, with a sign."""
    assert since(T0 + 1_234, T0) == "+1.2 s"
    assert since(T0 + 60_000, T0) == "+60.0 s"
    assert since(T0 - 500, T0) == "+-0.5 s"


def test_describe_names_the_state_and_the_newest_event() -> None:
    """The account is the state, then the newest event with its time (exit code, OOM)."""
    assert describe(snap("m1", T0, "created"), T0) == "state created, no events"
    assert describe(snap("m1", T0, "started", start(500), crash(200)), T0) == (
        "state started, newest event start at +0.5 s"
    )
    assert describe(snap("m1", T0, "stopped", crash(2_000, code=3)), T0) == (
        "state stopped, newest event exit code 3 at +2.0 s"
    )
    oom = Event("exit", "stopped", T0 + 1_500, exit_code=137, oom_killed=True)
    assert describe(snap("m1", T0, "stopped", oom), T0) == (
        "state stopped, newest event exit code 137 (OOM killed) at +1.5 s"
    )


# --- fail-safe -----------------------------------------------------------------------


def test_an_empty_look_fails_with_its_time_in_the_reason() -> None:
    """No machines in the newest look: fail, saying when and why."""
    verdict = lost_machines("x", [Look(T0, (snap("m1", T0),)), Look(T0 + 1_000, ())])
    assert verdict == Verdict(
        False,
        f"x: the look at {T0 + 1_000} ms shows no machines, so no machine can be shown "
        "healthy; a gate that sees nothing must not approve",
    )
    assert verdict.layer == "no-machines"


def test_a_vanished_machine_fails_naming_it_and_the_look_that_saw_it() -> None:
    """A machine missing from the newest look fails with the earlier look's time."""
    looks = [
        Look(T0, (snap("m1", T0),)),
        Look(T0 + 1_000, (snap("m1", T0 + 1_000), snap("m2", T0 + 1_000))),
        Look(T0 + 2_000, (snap("m1", T0 + 2_000), snap("m3", T0 + 2_000))),
    ]
    verdict = lost_machines("x", looks)
    assert verdict == Verdict(
        False,
        f"x: machine m2, seen at {T0 + 1_000} ms, is missing from the look at {T0 + 2_000} ms; "
        "a machine that vanished cannot be shown healthy",
        "m2",
    )
    assert verdict.layer == "machine-missing"
    assert lost_machines("x", looks[:2]) is None
    assert lost_machines("x", looks[:1]) is None


# --- started -------------------------------------------------------------------------


def test_wait_at_least_rounds_up_to_a_whole_millisecond_and_never_waits_zero() -> None:
    """Waits round up to the ms, float noise aside, with at least one ms."""
    assert wait_at_least(1.0) == Wait(1.0)
    assert wait_at_least(0.0) == Wait(0.001)
    assert wait_at_least(0.0001) == Wait(0.001)
    assert wait_at_least(0.0021) == Wait(0.003)
    # 0.1 + 0.2 is 0.30000000000000004: noise below a nanosecond is not a millisecond.
    assert wait_at_least(0.1 + 0.2) == Wait(0.3)
    # Up to a nanosecond over a whole millisecond is noise too; more is not.
    assert wait_at_least(0.0010000004) == Wait(0.001)
    assert wait_at_least(0.000001001) == Wait(0.001)


def test_first_all_started_is_the_index_of_the_first_look_with_every_machine_started() -> None:
    """The first look where all machines read started, by index."""
    looks = [
        Look(T0, (snap("m1", T0, "starting"), snap("m2", T0))),
        Look(T0 + 1, (snap("m1", T0 + 1), snap("m2", T0 + 1, "stopped"))),
        Look(T0 + 2, (snap("m1", T0 + 2), snap("m2", T0 + 2))),
        Look(T0 + 3, (snap("m1", T0 + 3), snap("m2", T0 + 3))),
    ]
    assert first_all_started(looks) == 2
    assert first_all_started(looks[:2]) is None
    assert first_all_started([]) is None


def test_await_started_times_out_at_exactly_the_start_timeout() -> None:
    """Not started at +60 s fails, naming the first machine not started; at +59.5 s it waits 0.5 s."""
    check = TimestampCheck()
    late = [
        Look(
            T0 + 60_000,
            (snap("m1", T0 + 60_000), snap("m2", T0 + 60_000, "starting", UPDATE), snap("m3", T0, "stopped")),
        )
    ]
    verdict = decided(await_started(check, T0, late))
    assert verdict == Verdict(
        False,
        "timestamp: machine m2 never read started within 60 s of the publish "
        "(state starting, newest event update at +0.0 s); check the image's start command "
        "and boot time",
        "m2",
    )
    assert verdict.layer == "start-timeout"
    early = [Look(T0 + 59_500, (snap("m1", T0 + 59_500, "starting"),))]
    assert await_started(check, T0, early) == Wait(0.5)
    assert await_started(check, T0, [Look(T0 + 1_000, (snap("m1", T0, "starting"),))]) == Wait(1.0)
    assert await_started(check, T0, []) == Wait(0.0)
    assert await_started(check, T0, [late[0], Look(T0 + 61_000, (snap("m1", T0),))]) == 1


# --- layered checks ------------------------------------------------------------------


def test_layered_check_leaves_layer_3_to_its_subclasses() -> None:
    """The base class has no layer-3 rule of its own."""
    with pytest.raises(NotImplementedError):
        LayeredCheck().crashed_again(snap("m1", T0), snap("m1", T0), T0)
    with pytest.raises(NotImplementedError):
        LayeredCheck().held_steady(Look(T0, ()), Look(T0, ()), T0)


def test_layered_defaults_are_the_incident_checks() -> None:
    """Look 5 s apart, give up starting after 60 s, poll every second."""
    check = CountCheck()
    assert (check.look_delay_s, check.start_timeout_s, check.poll_s) == (5.0, 60.0, 1.0)
    assert (CountCheck.name, TimestampCheck.name, LayeredCheck.name) == ("count", "timestamp", "layered")


def _layer_looks(
    first: Sequence[MachineSnapshot], second: Sequence[MachineSnapshot], third: Sequence[MachineSnapshot]
) -> list[Look]:
    """Looks 1, 2 and 3 at +1 s, +6 s and +11 s."""
    return [
        Look(T0 + 1_000, tuple(first)),
        Look(T0 + 6_000, tuple(second)),
        Look(T0 + 11_000, tuple(third)),
    ]


def test_layered_first_look_is_immediate_and_look_2_comes_look_delay_later() -> None:
    """No looks: look now; every machine started: wait ``look_delay_s``."""
    check = TimestampCheck(look_delay_s=7)
    assert check.next(T0, []) == Wait(0.0)
    starting = Look(T0 + 500, (snap("m1", T0 + 500, "starting", UPDATE),))
    assert check.next(T0, [starting]) == Wait(1.0)
    up = Look(T0 + 1_000, (snap("m1", T0 + 1_000, "started", start(800)),))
    assert check.next(T0, [starting, up]) == Wait(7)


@pytest.mark.parametrize("check", [CountCheck(), TimestampCheck()])
def test_layered_layer_1_passes_two_started_looks_with_no_crash(check: LayeredCheck) -> None:
    """Two all-started looks and no crash since the publish: pass at look 2."""
    ms = [snap(m, T0 + 1_000, "started", start(500), crash(-100)) for m in ("m1", "m2")]
    ms2 = [snap(m, T0 + 6_000, "started", start(500), crash(-100)) for m in ("m1", "m2")]
    verdict = decided(check.next(T0, _layer_looks(ms, ms2, [])[:2]))
    assert verdict == Verdict(
        True, "all 2 machine(s) read started twice 5 s apart with no crash since the publish began"
    )
    assert verdict.layer == "look-twice"


@pytest.mark.parametrize("number", [2, 3])
def test_layered_layer_1_fails_a_machine_not_started_at_look_2_or_3(number: int) -> None:
    """A machine that no longer reads started at look 2 (or 3) fails, naming the look before."""
    up = [snap("m1", T0 + 1_000, "started", start(500)), snap("m2", T0 + 1_000, "started", start(500))]
    crashed_up = [
        snap("m1", T0 + 6_000, "started", start(5_500), crash(5_000)),
        snap("m2", T0 + 6_000, "started", start(500)),
    ]
    down = [
        snap("m1", T0 + 11_000, "started", start(500)),
        snap("m2", T0 + 11_000, "stopped", crash(4_000, count=2)),
    ]
    looks = _layer_looks(up, down, []) if number == 2 else _layer_looks(up, crashed_up, down)
    before_s = "+1.0 s" if number == 2 else "+6.0 s"
    verdict = decided(TimestampCheck().next(T0, looks[:2] if number == 2 else looks))
    assert verdict == Verdict(
        False,
        f"machine m2 read started at {before_s} but not at look {number} "
        "(state stopped, newest event exit code 1 at +4.0 s): it does not stay up after boot",
        "m2",
    )
    assert verdict.layer == "look-twice"


def test_layered_layer_2_fails_a_given_up_machine_at_any_look() -> None:
    """A machine the platform gave up on fails at once, with its restart count."""
    final = crash(900, count=3, restarting=False)
    look = Look(T0 + 1_000, (snap("m1", T0 + 1_000), snap("m2", T0 + 1_000, "stopped", final, start(500))))
    for check in (CountCheck(), TimestampCheck()):
        verdict = decided(check.next(T0, [look]))
        assert verdict == Verdict(
            False,
            "the platform gave up restarting machine m2 after 3 restart(s) "
            "(state stopped, newest event exit code 1 at +0.9 s): the app crashes on every start; "
            "check its logs for the exit cause",
            "m2",
        )
        assert verdict.layer == "gave-up"


def test_layered_checks_fail_safe_first() -> None:
    """A look with no machines fails before any layer runs."""
    verdict = decided(CountCheck().next(T0, [Look(T0, ())]))
    assert verdict.reason.startswith("count: the look at")
    assert verdict.layer == "no-machines"


def _crash_between(count3: int, newest3: int) -> list[Look]:
    """m1 started throughout, m2 crashed at +5.5 s before look 2 and maybe again before look 3."""
    up1 = [snap("m1", T0 + 1_000, "started", start(500)), snap("m2", T0 + 1_000, "started", start(500))]
    m2_at_2 = (start(5_800), crash(5_500), start(500))
    up2 = [snap("m1", T0 + 6_000, "started", start(500)), snap("m2", T0 + 6_000, "started", *m2_at_2)]
    m2_at_3: tuple[Event, ...] = m2_at_2
    if count3:
        m2_at_3 = (start(newest3 + 300), crash(newest3), *m2_at_2[: 3 - count3])
    up3 = [snap("m1", T0 + 11_000, "started", start(500)), snap("m2", T0 + 11_000, "started", *m2_at_3)]
    return _layer_looks(up1, up2, up3)


def test_layered_layer_3_asks_for_look_3_after_a_crash() -> None:
    """A crash since the publish at look 2: look once more ``look_delay_s`` later."""
    assert TimestampCheck(look_delay_s=4).next(T0, _crash_between(0, 0)[:2]) == Wait(4)


def test_count_fails_when_the_count_rose_between_looks_2_and_3() -> None:
    """Count: one crash at look 2, two at look 3: fail with both counts."""
    verdict = decided(CountCheck().next(T0, _crash_between(1, 9_000)))
    assert verdict == Verdict(
        False,
        "machine m2 has more crashes since the publish at look 3 than at look 2 (1 -> 2): "
        "the app is not staying up",
        "m2",
    )
    assert verdict.layer == "crashes-since-publish"


def test_count_passes_when_the_count_held_and_lists_the_counts() -> None:
    """Count: the same number of crashes at looks 2 and 3 passes (the incident's blind spot)."""
    verdict = decided(CountCheck().next(T0, _crash_between(0, 0)))
    assert verdict == Verdict(
        True, "crashes since the publish did not increase between looks 2 and 3 (m1 0, m2 1)"
    )
    assert verdict.layer == "crashes-since-publish"


def test_timestamp_fails_on_a_newer_crash_even_when_the_count_held() -> None:
    """Timestamp: a crash newer than look 2's newest fails, with both times."""
    looks = _crash_between(2, 9_000)
    # The capped list slid: look 3 shows the new crash but no longer the old one.
    assert decided(CountCheck().next(T0, looks)).ok
    verdict = decided(TimestampCheck().next(T0, looks))
    assert verdict == Verdict(
        False,
        "machine m2 has crashed repeatedly since the publish and is still restarting "
        "(newest crash at +9.0 s, look 2 had seen +5.5 s)",
        "m2",
    )
    assert verdict.layer == "crashes-since-publish"


def test_timestamp_passes_when_no_newer_crash_appeared() -> None:
    """Timestamp: the same newest crash at looks 2 and 3 passes."""
    verdict = decided(TimestampCheck().next(T0, _crash_between(0, 0)))
    assert verdict == Verdict(
        True, "no crash newer than look 2's newest appeared by look 3: the machines stay up"
    )
    assert verdict.layer == "crashes-since-publish"


def test_timestamp_layer_3_rule_on_single_snapshots() -> None:
    """Newest crash: later fails, equal or none at look 3 passes, none at look 2 reads 'none'."""
    check = TimestampCheck()
    two = snap("m1", T0 + 6_000, "started", start(5_800), crash(5_500), crash(4_000))
    same = snap("m1", T0 + 11_000, "started", start(5_800), crash(5_500))
    later = snap("m1", T0 + 11_000, "started", crash(5_501))
    none = snap("m1", T0 + 11_000, "started", start(500), crash(-1))
    assert check.crashed_again(two, same, T0) is None
    assert check.crashed_again(two, none, T0) is None
    assert check.crashed_again(none, none, T0) is None
    assert check.crashed_again(two, later, T0) == (
        "machine m1 has crashed repeatedly since the publish and is still restarting "
        "(newest crash at +5.5 s, look 2 had seen +5.5 s)"
    )
    assert check.crashed_again(none, same, T0) == (
        "machine m1 has crashed repeatedly since the publish and is still restarting "
        "(newest crash at +5.5 s, look 2 had seen none)"
    )


def test_count_layer_3_rule_on_single_snapshots() -> None:
    """Count: more crashes since the publish fails; as many or fewer passes."""
    check = CountCheck()
    one = snap("m1", T0 + 6_000, "started", start(5_800), crash(5_500), crash(-10))
    two = snap("m1", T0 + 11_000, "started", crash(9_000), crash(5_500), crash(-10))
    assert check.crashed_again(one, one, T0) is None
    assert check.crashed_again(two, one, T0) is None
    assert check.crashed_again(one, two, T0) == (
        "machine m1 has more crashes since the publish at look 3 than at look 2 (1 -> 2): "
        "the app is not staying up"
    )


def test_layer_3_skips_a_machine_that_look_2_did_not_have() -> None:
    """A machine new at look 3 has no look 2 to compare with; the others are still compared."""
    looks = _crash_between(1, 9_000)
    newcomer = snap("m0", T0 + 11_000, "started", start(10_000), crash(9_500))
    looks[2] = Look(looks[2].at_ms, (newcomer, *looks[2].machines))
    verdict = decided(CountCheck().next(T0, looks))
    assert verdict.machine == "m2"
    looks = _crash_between(0, 0)
    looks[2] = Look(looks[2].at_ms, (newcomer, *looks[2].machines))
    assert decided(TimestampCheck().next(T0, looks)).ok


# --- restart counter -----------------------------------------------------------------


def _counted(
    mid: str, at: int, counter: int | None, state: str = "started", *events: Event
) -> MachineSnapshot:
    return snap(mid, at, state, *events, counter=counter)


def test_restart_counter_without_a_counter_fails_blind() -> None:
    """No counter on the platform: fail at the first look, unjudged, saying how to fix it."""
    look = Look(T0, (_counted("m1", T0, 0), _counted("m2", T0, None)))
    verdict = decided(RestartCounterCheck().next(T0, [look]))
    assert verdict == Verdict(
        False,
        "the platform exposes no restart counter for machine m2 (restart_counter is absent), "
        "so this check cannot judge the publish; enable one (simulator: "
        "platform.restart_counter = true) or use a check that reads the event list",
        "m2",
        judged=False,
    )
    assert verdict.layer == "no-counter"
    assert verdict.judged is False
    # A counter that disappears after the first look is just as blind.
    gone = [Look(T0, (_counted("m1", T0, 0),)), Look(T0 + 1_000, (_counted("m1", T0 + 1_000, None),))]
    assert decided(RestartCounterCheck().next(T0, gone)).layer == "no-counter"


def test_restart_counter_fails_a_counter_that_went_backwards() -> None:
    """A counter lower than at the first look fails: restarts cannot be counted."""
    looks = [Look(T0, (_counted("m1", T0, 4),)), Look(T0 + 1_000, (_counted("m1", T0 + 1_000, 3),))]
    verdict = decided(RestartCounterCheck().next(T0, looks))
    assert verdict == Verdict(
        False,
        "machine m1's restart counter went backwards (4 -> 3) between looks: it was replaced "
        "or the counter is not monotonic, so restarts cannot be counted",
        "m1",
    )
    assert verdict.layer == "counter-reset"


def test_restart_counter_fails_a_rise_with_how_many_and_when() -> None:
    """A counter above the first look's fails, with the rise, both values and the time."""
    looks = [
        Look(T0, (_counted("m1", T0, 0), _counted("m2", T0, 2, "starting", UPDATE))),
        Look(
            T0 + 2_500,
            (_counted("m1", T0 + 2_500, 0), _counted("m2", T0 + 2_500, 5, "started", start(2_400))),
        ),
    ]
    verdict = decided(RestartCounterCheck().next(T0, looks))
    assert verdict == Verdict(
        False,
        "machine m2 restarted 3 time(s) since the publish began (restart counter 2 -> 5 by "
        "+2.5 s; state started, newest event start at +2.4 s): the app is crashing; check its "
        "logs for the exit cause",
        "m2",
    )
    assert verdict.layer == "restart-counter"


def test_restart_counter_fails_a_machine_that_went_down_without_a_restart() -> None:
    """Down after all read started, counter unchanged: the platform did not restart it."""
    looks = [
        Look(T0, (_counted("m1", T0, 1, "starting"),)),
        Look(T0 + 1_000, (_counted("m1", T0 + 1_000, 1),)),
        Look(T0 + 2_000, (_counted("m1", T0 + 2_000, 1, "stopped", crash(1_500, restarting=False)),)),
    ]
    verdict = decided(RestartCounterCheck().next(T0, looks))
    assert verdict == Verdict(
        False,
        "machine m1 read started at +1.0 s but not at +2.0 s (state stopped, newest event "
        "exit code 1 at +1.5 s) and its restart counter is unchanged at 1: it went down and "
        "the platform did not restart it",
        "m1",
    )
    assert verdict.layer == "went-down"


def test_restart_counter_passes_after_look_delay_of_started_with_unchanged_counters() -> None:
    """All started at +1 s; still so at +6 s with the same counters: pass, listing them."""
    check = RestartCounterCheck()
    first = Look(T0, (_counted("m1", T0, 2, "starting"), _counted("m2", T0, 0, "starting")))
    looks = [first] + [
        Look(T0 + k * 1_000, (_counted("m1", T0 + k * 1_000, 2), _counted("m2", T0 + k * 1_000, 0)))
        for k in (1, 2)
    ]
    # The pass lists the counters in the order of the deciding look.
    looks.append(Look(T0 + 6_000, (_counted("m2", T0 + 6_000, 0), _counted("m1", T0 + 6_000, 2))))
    assert check.next(T0, []) == Wait(0.0)
    assert check.next(T0, looks[:1]) == Wait(1.0)
    assert check.next(T0, looks[:2]) == Wait(1.0)
    verdict = decided(check.next(T0, looks))
    assert verdict == Verdict(
        True,
        "no restart counter rose since the publish began and every machine stayed started "
        "for 5 s after all read started (m2 0, m1 2)",
    )
    assert verdict.layer == "restart-counter"


def test_restart_counter_waits_only_until_look_delay_is_reached() -> None:
    """4.5 s watched of 5: the next look is 0.5 s away; 5.0 s watched passes (>=)."""
    check = RestartCounterCheck()
    up = Look(T0 + 1_000, (_counted("m1", T0 + 1_000, 0),))
    assert check.next(T0, [up, Look(T0 + 5_500, (_counted("m1", T0 + 5_500, 0),))]) == Wait(0.5)
    assert decided(check.next(T0, [up, Look(T0 + 6_000, (_counted("m1", T0 + 6_000, 0),))])).ok
    # The wait is ``poll_s`` while the remainder is longer.
    assert RestartCounterCheck(poll_s=2).next(T0, [up]) == Wait(2.0)


def test_restart_counter_start_timeout_names_the_check() -> None:
    """Never all started within 60 s: the start-timeout verdict, prefixed with the check's name."""
    looks = [Look(T0 + 60_000, (_counted("m1", T0 + 60_000, 0, "starting", UPDATE),))]
    verdict = decided(RestartCounterCheck().next(T0, looks))
    assert verdict.reason.startswith("restart-counter: machine m1 never read started within 60 s")
    assert verdict.layer == "start-timeout"


def test_restart_counter_fails_safe_on_an_empty_look() -> None:
    """No machines: the fail-safe verdict, named for this check."""
    verdict = decided(RestartCounterCheck().next(T0, [Look(T0, ())]))
    assert verdict.reason.startswith("restart-counter: the look at")


# --- driver and registry -------------------------------------------------------------


class _Scripted:
    """A check that returns the given steps in turn and records what it was given."""

    name = "scripted"

    def __init__(self, *steps: object) -> None:
        self.steps = list(steps)
        self.seen: list[int] = []
        self.given: list[tuple[int, list[Look]]] = []

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> object:
        self.seen.append(len(looks))
        self.given.append((publish_started_ms, list(looks)))
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


def _run(check: object, looks: int = 5, max_looks: int = 100) -> tuple[list[float], Verdict]:
    steps = drive(check, T0, max_looks=max_looks)  # type: ignore[arg-type]
    waits = [next(steps)]
    try:
        for k in range(looks):
            waits.append(steps.send(Look(T0 + k, ())))
    except StopIteration as done:
        return waits, done.value
    raise AssertionError("no verdict")


def test_drive_yields_each_wait_as_a_float_and_returns_the_verdict() -> None:
    """Waits come out as floats in order; the looks reach the check; the verdict is returned."""
    final = Verdict(True, "fine")
    check = _Scripted(Wait(0), Wait(2), Wait(0.5), final)
    waits, verdict = _run(check)
    assert waits == [0.0, 2.0, 0.5]
    assert all(type(w) is float for w in waits)
    assert verdict is final
    assert check.seen == [0, 1, 2, 3]
    sent = [Look(T0 + k, ()) for k in range(3)]
    assert check.given[-1] == (T0, sent)


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (
            Verdict("yes", "r"),
            "check returned Verdict(ok='yes', reason='r', machine=None, layer='', "  # type: ignore[arg-type]
            "judged=True); a Verdict needs ok: bool, reason: str",
        ),
        (
            Verdict(True, 3),
            "check returned Verdict(ok=True, reason=3, machine=None, layer='', "  # type: ignore[arg-type]
            "judged=True); a Verdict needs ok: bool, reason: str",
        ),
        (None, "check returned None (builtins.NoneType); this driver takes "
         "platform_testbed.checks.model.Wait(seconds) or platform_testbed.checks.model.Verdict(ok, "
         "reason), or an object of that shape: from platform_testbed.checks import Verdict, Wait"),
        (Wait(-1), "check returned Wait(seconds=-1); a Wait needs finite seconds >= 0"),
        (Wait(True), "check returned Wait(seconds=True); a Wait needs finite seconds >= 0"),
        (Wait("1"), "check returned Wait(seconds='1'); a Wait needs finite seconds >= 0"),  # type: ignore[arg-type]
        (Wait(float("inf")), "check returned Wait(seconds=inf); a Wait needs finite seconds >= 0"),
        (Wait(float("nan")), "check returned Wait(seconds=nan); a Wait needs finite seconds >= 0"),
        (ValueError("boom"), "check raised ValueError: boom"),
    ],
)
def test_drive_refuses_a_broken_step_with_a_message(step: object, message: str) -> None:
    """A step that breaks the protocol ends the drive with CheckFailed and says what was wrong."""
    steps = drive(_Scripted(step), T0)  # type: ignore[arg-type]
    with pytest.raises(CheckFailed) as failed:
        next(steps)
    assert str(failed.value) == message
    if isinstance(step, Exception):
        assert failed.value.__cause__ is step


#: How the look-limit message says to raise the limit (README "Limits").
LIMIT_HINT = r" \(the limit: --max-looks or TESTBED_MAX_LOOKS\)$"


def test_drive_allows_exactly_max_looks() -> None:
    """A check may take ``max_looks`` looks; asking for one more fails."""
    waits, verdict = _run(_Scripted(Wait(1), Wait(1), Wait(1), Verdict(False, "no")), max_looks=3)
    assert waits == [1.0, 1.0, 1.0]
    assert not verdict.ok
    steps = drive(_Scripted(Wait(1), Wait(1), Wait(1), Wait(1)), T0, max_looks=3)  # type: ignore[arg-type]
    next(steps)
    steps.send(Look(T0, ()))
    steps.send(Look(T0, ()))
    with pytest.raises(CheckFailed, match=r"^check took 3 looks without a verdict" + LIMIT_HINT):
        steps.send(Look(T0, ()))


def test_drive_by_default_stops_a_check_after_ten_thousand_looks() -> None:
    """A check that never decides is broken: the default cap is 10,000 looks."""

    class Forever:
        name = "forever"

        def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Wait:
            return Wait(1)

    steps = drive(Forever(), T0)
    next(steps)
    empty = Look(T0, ())
    for _ in range(9_999):
        steps.send(empty)
    with pytest.raises(CheckFailed, match=r"^check took 10000 looks without a verdict" + LIMIT_HINT):
        steps.send(empty)


def test_check_name_falls_back_to_the_type_name() -> None:
    """The check's ``name`` if it is a non-empty string, else its type's name."""

    class Named:
        name = "mine"

    class Empty:
        name = ""

    class NotText:
        name = 3

    class Raising:
        @property
        def name(self) -> str:
            raise RuntimeError

    assert check_name(Named()) == "mine"
    assert check_name(Empty()) == "Empty"
    assert check_name(NotText()) == "NotText"
    assert check_name(Raising()) == "Raising"
    assert check_name(object()) == "object"


def test_make_check_passes_only_the_options_the_check_declares() -> None:
    """Known options reach the check; unknown ones are dropped."""
    check = make_check("timestamp", {"look_delay_s": 2.5, "threshold": 3})
    assert check == TimestampCheck(look_delay_s=2.5)
    assert make_check("restart-counter", {}) == RestartCounterCheck()
