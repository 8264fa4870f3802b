"""Exact tests of the fold memo: when it is used, and that it keeps each call's work flat.

The work a call does is counted in snapshots handed out by a look's machines (an
instrumented tuple), never timed. Fast, so mutation testing runs them ([tool.mutmut]).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

from platform_testbed.checks import Event, Look, MachineSnapshot, Verdict, make_check
from platform_testbed.checks.breaker import CircuitBreakerCheck
from platform_testbed.checks.failsafe import first_seen
from platform_testbed.checks.memo import LookMemo
from platform_testbed.checks.protocol import Check, Step
from tests.exact_events import T0, crash, decided, start


def from_scratch(check: Check, publish_started_ms: int, given_looks: Sequence[Look]) -> Step:
    """The check's answer in a new thread, whose memo slot is empty: a fold from the first look."""
    answer: list[Step] = []
    thread = threading.Thread(target=lambda: answer.append(check.next(publish_started_ms, given_looks)))
    thread.start()
    thread.join()
    return answer[0]


def test_memo_is_used_only_for_the_same_key_and_a_prefix() -> None:
    """take() gives the state back for the same or a longer sequence with that prefix, never otherwise."""
    memo: LookMemo[str] = LookMemo()
    a, b, c = (Look(T0 + k, ()) for k in range(3))
    assert memo.take("k", [a]) is None
    memo.keep("k", [a, b], "state")
    assert memo.take("k", [a, b, c]) == ("state", 2)
    assert memo.take("k", [a, b, c]) is None  # taken: the slot is empty until kept again
    memo.keep("k", [a, b], "state")
    assert memo.take("k", [a, b]) == ("state", 2)  # the same looks again
    memo.keep("k", [a, b], "state")
    assert memo.take("other", [a, b, c]) is None
    memo.keep("k", [a, b], "state")
    assert memo.take("k", [a]) is None
    memo.keep("k", [a, b], "state")
    assert memo.take("k", [a, c, b]) is None
    memo.keep("k", [a, b], "state")
    assert memo.take("k", (Look(T0, ()), Look(T0 + 1, ()))) == ("state", 2)  # equal looks do


def test_memo_is_per_thread() -> None:
    """A state kept in one thread is not seen in another."""
    memo: LookMemo[str] = LookMemo()
    a = Look(T0, ())
    memo.keep("k", [a], "state")
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.append(memo.take("k", [a])))
    thread.start()
    thread.join()
    assert seen == [None]
    assert memo.take("k", [a]) == ("state", 1)


def snap(machine_id: str, at: int, state: str = "started", *events: Event) -> MachineSnapshot:
    """A snapshot ``at`` ms after the publish."""
    return MachineSnapshot(machine_id, state, "app", tuple(events), T0 + at, 0)


def test_first_seen_maps_each_machine_to_its_first_look_in_order() -> None:
    """Ids in the order looks list them, each with the time of the first look that has it."""
    looks = [Look(T0, (snap("m2", 0),)), Look(T0 + 1_000, (snap("m1", 1_000), snap("m2", 1_000)))]
    assert list(first_seen(looks).items()) == [("m2", T0), ("m1", T0 + 1_000)]
    before = {"m3": 5}
    assert first_seen(looks, before) is before
    assert list(before) == ["m3", "m2", "m1"]


class CountedMachines(tuple[MachineSnapshot, ...]):
    """A look's machines that count every snapshot handed out by iteration."""

    visits = 0

    def __iter__(self) -> Iterator[MachineSnapshot]:
        for machine in super().__iter__():
            CountedMachines.visits += 1
            yield machine


def waiting_looks(machines: int, looks: int, state: str, start_ms: int | None) -> list[Look]:
    """Looks 1 s apart at machines in ``state`` (newest start ``start_ms`` after the publish)."""
    events = (Event("start", "started", T0 + start_ms),) if start_ms is not None else ()
    # Running before the publish (a start after the launch): flyctl launches, never skips, them.
    events += (Event("update", "replaced", T0, "user"), Event("start", "started", T0 - 50_000),
               Event("launch", "created", T0 - 60_000, "user"))
    return [
        Look(T0 + 1_000 * k, CountedMachines(
            MachineSnapshot(f"m{i}", state, "app", events, T0 + 1_000 * k, 0) for i in range(machines)
        ))
        for k in range(1, looks + 1)
    ]


#: Worlds in which each check keeps waiting for 30 looks: the visits of every call are counted.
STILL_WAITING: list[tuple[str, dict[str, object], str, int | None]] = [
    ("min-healthy-time", {"min_healthy_s": 100}, "started", 500),
    ("min-healthy-time", {"min_healthy_s": 100, "rule": "kubernetes"}, "started", 500),
    ("flyctl-smoke", {}, "starting", None),
    ("circuit-breaker", {"healthy_after_s": 100}, "started", 500),
    ("restart-counter", {"start_timeout_s": 100}, "starting", None),
]


def visits_per_call(name: str, options: dict[str, object], given_looks: list[Look]) -> list[int]:
    """The snapshots the check visits at each call, as a driver calls it (one more look each)."""
    check = make_check(name, options)
    driven: list[Look] = []
    counts = []
    for look in given_looks:
        driven.append(look)
        CountedMachines.visits = 0
        step = check.next(T0, driven)
        assert not isinstance(step, Verdict), step
        counts.append(CountedMachines.visits)
    return counts


def test_work_per_call_does_not_grow_with_the_looks_before_it() -> None:
    """The 30th call visits as many snapshots as the 2nd: each look is folded once."""
    for name, options, state, start_ms in STILL_WAITING:
        counts = visits_per_call(name, options, waiting_looks(10, 30, state, start_ms))
        assert max(counts[1:]) == counts[1], (name, options, counts)
        assert counts[1] <= 6 * 10, (name, options, counts)  # a few passes over one look


def test_without_the_memo_the_work_would_grow() -> None:
    """The counter sees growth where it exists: a fresh thread per call folds every look."""
    given_looks = waiting_looks(5, 10, "started", 500)
    check = make_check("min-healthy-time", {"min_healthy_s": 100})
    counts = []
    for n in (2, 10):
        CountedMachines.visits = 0
        from_scratch(check, T0, given_looks[:n])
        counts.append(CountedMachines.visits)
    assert counts[1] > counts[0]


def started_looks(count: int) -> list[Look]:
    """Looks 1 s apart at two machines up since 0.5 s after the publish, then m1 crashes at 3.5 s."""
    made = []
    for k in range(1, count + 1):
        at = 1_000 * k
        m1 = snap("m1", at, "started", start(500)) if at < 3_500 else snap(
            "m1", at, "stopped", crash(3_500, count=2), start(500))
        made.append(Look(T0 + at, (m1, snap("m2", at, "started", start(500)))))
    return made


#: Two configurations of each memoised check that answer the same looks differently.
PAIRS: list[tuple[str, dict[str, object], dict[str, object]]] = [
    ("min-healthy-time", {"min_healthy_s": 2}, {"min_healthy_s": 50}),
    ("min-healthy-time", {"min_healthy_s": 2, "rule": "kubernetes", "progress_deadline_s": 3},
     {"min_healthy_s": 50, "rule": "kubernetes", "progress_deadline_s": 3}),
    ("flyctl-smoke", {"backoff_min_s": 0.5, "window_s": 30}, {"backoff_min_s": 3, "window_s": 30}),
    ("circuit-breaker", {"threshold": 2, "healthy_after_s": 1}, {"threshold": 2, "healthy_after_s": 50}),
    ("restart-counter", {"look_delay_s": 50}, {"look_delay_s": 1}),
]


def test_a_memo_is_not_used_for_another_check_or_another_publish() -> None:
    """Calls that alternate two configurations, or two publish times, answer as from scratch."""
    looks = started_looks(6)
    differed = 0
    for name, first, second in PAIRS:
        a, b = make_check(name, first), make_check(name, second)
        for n in range(1, len(looks)):
            a.next(T0, looks[:n])
            step = b.next(T0, looks[: n + 1])
            assert step == from_scratch(b, T0, looks[: n + 1]), (name, n)
            differed += step != from_scratch(a, T0, looks[: n + 1])
            a.next(T0, looks[:n])
            later = a.next(T0 + 700, looks[: n + 1])  # after the machines' start at 0.5 s
            assert later == from_scratch(a, T0 + 700, looks[: n + 1]), (name, n)
            if isinstance(later, Verdict):
                break
    assert differed  # the pairs do tell the configurations apart


def breaker_looks(*machines: tuple[MachineSnapshot, ...]) -> list[Look]:
    """One look per tuple of snapshots, at the time of its first snapshot."""
    return [Look(snapshots[0].at_ms, snapshots) for snapshots in machines]


def drive_steps(check: Check, looks: list[Look]) -> list[Step]:
    """The check's step at each call, one more look each time."""
    return [check.next(T0, looks[: n + 1]) for n in range(len(looks))]


def test_breaker_counts_a_crash_seen_in_two_looks_once() -> None:
    """The same exit in the next look is not a second failed task."""
    check = CircuitBreakerCheck(threshold=2)
    seen = snap("m1", 1_000, "starting", crash(800), start(200))
    looks = breaker_looks((seen,), (seen._replace(at_ms=T0 + 2_000),))
    steps = drive_steps(check, looks)
    assert not any(isinstance(s, Verdict) for s in steps), steps


def test_breaker_late_earlier_failure_does_not_trip_by_order() -> None:
    """A failure revealed late, before a replayed reset, is cleared by it: no trip."""
    check = CircuitBreakerCheck(threshold=2, healthy_after_s=1)
    look1 = (snap("m1", 3_000, "started", start(500)),
             snap("m2", 3_000, "starting", crash(2_500, count=2)),
             snap("m3", 3_000, "started", start(2_900)),
             snap("m4", 3_000, "started", start(2_900)))
    look2 = (look1[0]._replace(at_ms=T0 + 3_500), look1[1]._replace(at_ms=T0 + 3_500),
             snap("m3", 3_500, "started", start(2_900), crash(1_000, count=1)),
             look1[3]._replace(at_ms=T0 + 3_500))
    looks = breaker_looks(look1, look2)
    steps = drive_steps(check, looks)
    assert not isinstance(steps[0], Verdict)
    # From scratch: crash at 1.0 s, reset at 1.5 s, crash at 2.5 s: a count of 1.
    assert not isinstance(steps[1], Verdict), steps[1]
    assert steps[1] == from_scratch(check, T0, looks)


def test_breaker_replays_again_when_more_machines_change_the_threshold() -> None:
    """A machine that appears raises the ECS threshold; the count is judged against the new one."""
    check = CircuitBreakerCheck()  # 50 %, at least 3
    crashing = [snap(f"m{i}", 1_000, "starting", crash(500, count=2)) for i in range(1, 3)]
    look1 = tuple(crashing)
    more = tuple(s._replace(at_ms=T0 + 2_000) for s in crashing)
    more += tuple(snap(f"m{i}", 2_000, "starting", crash(1_500, count=2)) for i in range(3, 9))
    looks = breaker_looks(look1, more)
    steps = drive_steps(check, looks)
    assert steps == [from_scratch(check, T0, looks[:1]), from_scratch(check, T0, looks)]
    assert decided(steps[1]).layer == "circuit-breaker"


def test_breaker_threshold_zero_trips_at_the_first_failure() -> None:
    """A threshold of 0 (or 1) trips at the first failed task."""
    look = Look(T0 + 1_000, (snap("m1", 1_000, "starting", crash(500, count=2)),))
    assert decided(CircuitBreakerCheck(threshold=0).next(T0, [look])).machine == "m1"


def test_breaker_a_look_that_adds_nothing_keeps_the_replay() -> None:
    """A later look that shows no new crash or healthy run leaves the count where it was."""
    check = CircuitBreakerCheck(threshold=3)
    seen = snap("m1", 1_000, "starting", crash(800), start(200))
    looks = breaker_looks((seen,), (seen._replace(at_ms=T0 + 2_000),), (seen._replace(at_ms=T0 + 3_000),))
    steps = drive_steps(check, looks)
    assert all(s == from_scratch(check, T0, looks[: n + 1]) for n, s in enumerate(steps))


def test_breaker_a_failure_revealed_before_the_last_reset_is_cleared_by_it() -> None:
    """A crash shown late, between two replayed resets, is counted before the later reset."""
    check = CircuitBreakerCheck(healthy_after_s=1)  # threshold 3 for 3 machines
    m1 = snap("m1", 3_000, "started", start(500))  # healthy at 1.5 s
    m2 = snap("m2", 3_000, "started", start(1_800), crash(600, count=1))  # fails 0.6, healthy 2.8
    m4 = snap("m4", 3_000, "starting")
    look2 = (m1._replace(at_ms=T0 + 4_000), m2._replace(at_ms=T0 + 4_000), m4._replace(at_ms=T0 + 4_000),
             snap("m3", 4_000, "stopped", crash(2_000, count=3, restarting=False)))
    looks = breaker_looks((m1, m2, m4), look2)
    steps = drive_steps(check, looks)
    verdict = decided(steps[1])
    assert verdict.layer == "gave-up"
    # In time order: fail 0.6, reset 1.5, fail 2.0 (m3), reset 2.8: none counted at the end.
    assert "with 0 failed task(s) counted" in verdict.reason


def _created(at_ms: int, events: tuple[Event, ...] = ()) -> Look:
    return Look(at_ms, (MachineSnapshot("m1", "created", "app", events, at_ms, 0),))


def test_another_publish_time_does_not_resume_a_fold_made_for_the_first() -> None:
    """flyctl-smoke's wait timeout counts from the publish: a fold kept for one publish time
    must not answer for another (hypothesis' example: the timeout falls at look 3 for the
    earlier publish, whose machine has no events, not at look 4)."""
    check = make_check("flyctl-smoke", {"wait_timeout_s": 6.0})
    looks = [_created(T0 + 500), _created(T0 + 3000), _created(T0 + 5500),
             _created(T0 + 5500, (start(T0),))]
    for k in range(1, 4):
        assert not isinstance(check.next(T0, looks[:k]), Verdict)  # kept for T0
    earlier = check.next(T0 - 700, looks)
    assert earlier == from_scratch(check, T0 - 700, looks)
    assert isinstance(earlier, Verdict)
    assert "no events" in earlier.reason

