"""The fold memo (checks.memo) gives the same steps as a fold from the first look.

Driven as a driver drives it (one more look per call, with detours: a shorter prefix,
another sequence, another publish time), every memoised check answers exactly what the
same check answers from scratch, computed in a fresh thread (its memo slot is empty
there, so it folds every look). ``lost_machines`` is also held to a plain
re-implementation of its rule. That the work per call does not grow with the looks
before it: tests/test_checks_exact_memo.py (fast, so mutation testing runs it).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, note
from hypothesis import strategies as st

from platform_testbed.checks import Event, Look, MachineSnapshot, Verdict, make_check
from platform_testbed.checks.failsafe import lost_machines
from tests.exact_events import T0
from tests.test_checks_exact_memo import from_scratch

#: Every check whose ``next`` keeps a fold between calls, with options that reach each rule.
MEMOISED: list[tuple[str, dict[str, object]]] = [
    ("min-healthy-time", {"min_healthy_s": 2, "healthy_deadline_s": 9}),
    ("min-healthy-time", {"min_healthy_s": 2, "rule": "kubernetes", "progress_deadline_s": 3}),
    ("flyctl-smoke", {"window_s": 4, "min_uptime_s": 2, "wait_timeout_s": 6}),
    ("circuit-breaker", {"threshold": 2, "healthy_after_s": 1.5, "completion_timeout_s": 9}),
    ("circuit-breaker", {"threshold": 3, "healthy_after_s": 1, "reset_on_healthy_task": False}),
    ("restart-counter", {"look_delay_s": 2, "start_timeout_s": 5}),
]

STATES = ("created", "starting", "started", "stopping", "stopped", "failed")


@st.composite
def events(draw: st.DrawFn, at: int) -> tuple[Event, ...]:
    """A newest-first event list at or before ``at`` ms after the publish (some before it)."""
    times = sorted(draw(st.lists(st.integers(-2_000, at), max_size=5)), reverse=True)
    made = []
    for t in times:
        kind = draw(st.sampled_from(("start", "exit", "launch", "update")))
        if kind == "exit":
            made.append(Event("exit", "stopped", T0 + t, exit_code=draw(st.sampled_from((0, 1, None))),
                              oom_killed=draw(st.booleans()), restarting=draw(st.booleans()),
                              restart_count=draw(st.integers(0, 3))))
        else:
            made.append(Event(kind, kind, T0 + t))
    return tuple(made)


@st.composite
def looks(draw: st.DrawFn) -> list[Look]:
    """Up to 12 looks, 0.5-2.5 s apart, at up to 3 machines (one may come and go)."""
    ids = ["m1", "m2", "m3"][: draw(st.integers(1, 3))]
    counters = {i: draw(st.integers(0, 2)) for i in ids}
    made, at = [], 0
    for _ in range(draw(st.integers(1, 12))):
        at += draw(st.sampled_from((0, 500, 1_000, 2_500)))
        shown = [i for i in ids if draw(st.integers(0, 9))]  # now and then a machine is missing
        snapshots = []
        for i in shown:
            counters[i] += draw(st.sampled_from((0, 0, 0, 1, -1)))
            counter = draw(st.sampled_from((counters[i], counters[i], None)))
            snapshots.append(MachineSnapshot(i, draw(st.sampled_from(STATES)), "app",
                                             draw(events(at)), T0 + at, counter))
        made.append(Look(T0 + at, tuple(snapshots)))
    return made


@given(looks(), st.sampled_from(range(len(MEMOISED))), st.data())
def test_memoised_checks_answer_as_a_fold_from_the_first_look(
    drawn: list[Look], which: int, data: st.DataObject
) -> None:
    """Every call, resumed or after a detour, equals the from-scratch answer for its looks."""
    name, options = MEMOISED[which]
    check = make_check(name, options)
    driven: list[Look] = []
    for look in drawn:
        driven.append(look)
        detour = data.draw(st.sampled_from(("none", "none", "shorter", "other", "publish")))
        if detour == "shorter":
            shorter = driven[: data.draw(st.integers(1, len(driven)))]
            assert check.next(T0, shorter) == from_scratch(check, T0, shorter)
        elif detour == "other":
            other = list(reversed(driven))
            assert check.next(T0, other) == from_scratch(check, T0, other)
        elif detour == "publish":
            assert check.next(T0 - 700, driven) == from_scratch(check, T0 - 700, driven)
        step = check.next(T0, driven)
        note(f"look {len(driven)}: {step}")
        assert step == from_scratch(check, T0, driven)
        if isinstance(step, Verdict):
            assert step.layer == from_scratch(check, T0, driven).layer  # not part of ==
            break


def lost_by_rule(looks: Sequence[Look]) -> str | None:
    """The rule, plainly: the first machine of an earlier look (in look order) the newest lacks."""
    present = {m.id for m in looks[-1].machines}
    for look in looks[:-1]:
        for machine in look.machines:
            if machine.id not in present:
                return f"{machine.id}@{look.at_ms}"
    return None


@given(looks())
def test_lost_machines_resumed_names_the_machine_the_rule_names(drawn: list[Look]) -> None:
    """Called with one more look each time, lost_machines fails exactly where the rule does."""
    for n in range(1, len(drawn) + 1):
        given_looks = drawn[:n]
        verdict = lost_machines("x", given_looks)
        if not given_looks[-1].machines:
            assert verdict is not None
            assert verdict.layer == "no-machines"
            return
        expected = lost_by_rule(given_looks)
        if expected is None:
            assert verdict is None
            continue
        assert verdict is not None
        assert verdict.layer == "machine-missing"
        machine_id, at = expected.split("@")
        assert verdict.machine == machine_id
        assert f"seen at {at} ms" in verdict.reason
        return



def test_a_layered_check_that_decided_keeps_no_looks() -> None:
    """Once count or timestamp gives a verdict, its memo holds none of the drive's looks:
    a check object a sweep keeps for every world does not keep each world's looks alive."""
    for name in ("count", "timestamp"):
        check = make_check(name, {"look_delay_s": 1.0})
        looks: list[Look] = []
        step = check.next(T0, looks)
        at = T0
        while not isinstance(step, Verdict):
            at += 1000
            looks.append(Look(at, (MachineSnapshot("m1", "started", "img", (), at),)))
            step = check.next(T0, looks)
        assert step.ok, name
        assert len(looks) >= 2, name  # the memo was kept between calls, then dropped
        assert getattr(check._seen._local, "slot", None) is None, name  # type: ignore[attr-defined]
