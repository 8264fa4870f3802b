"""Event profiles: one place says what a machine writes, and the timestamp fix's bound per profile."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import example, find, given, note, settings
from hypothesis import strategies as st

from platform_testbed.checks import TimestampCheck
from platform_testbed.checks.flyjson import read_recording
from platform_testbed.sim.config import scenario
from platform_testbed.sim.config.profiles import PROFILES
from platform_testbed.sim.kit.testing import App, drive_world
from platform_testbed.sim.kit.testing import world as lay_out
from platform_testbed.sim.publish import world
from platform_testbed.sim.publish.recording import Recorder

MARK = ("restart", "marker", "flyd", False)


def test_a_crash_event_changed_in_the_profile_reaches_simulator_replay_and_test_kit(monkeypatch):
    """One edit to a profile's crash events shows in simulated looks, replayed recordings
    and sim.kit.testing."""
    changed = dataclasses.replace(PROFILES["minimal"], crash=(*PROFILES["minimal"].crash, MARK))
    monkeypatch.setitem(PROFILES, "minimal", changed)
    # The shipped point writes fly-restart-start's events; this test edits minimal's.
    loaded = scenario.load("sept25-crash-loop", ["platform.events='minimal'"])
    check = TimestampCheck(**loaded.check.model_dump())
    result = world.run(loaded, 1, check)
    seen = {(e.type, e.status) for rec in result.looks for m in rec.look.machines for e in m.events}
    assert ("restart", "marker") in seen  # the simulator

    recorder = Recorder(loaded.publish_started_ms, loaded.check.model_dump())
    recorder(result)
    replayed = read_recording(recorder.lines)
    assert any(
        (e.type, e.status) == ("restart", "marker")
        for look in replayed.looks for m in look.machines for e in m.events
    )  # a recording, read back as replay reads it

    kit = lay_out(App(crash_after_ms=1_000), horizon_s=10)
    assert any((e.type, e.status) == ("restart", "marker") for e in kit.machines[0].events)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_a_profile_writes_per_crash_the_events_it_declares(name):
    """A crash loop under each profile writes exactly ``per_crash`` events a cycle."""
    app = App(crash_after_ms=1_000, boot_ms=500, restart_delay_ms=500, max_retries=None,
              events=name, cap=50)
    machine = lay_out(app, horizon_s=20).machines[0]
    after = [e for e in machine.events if e.timestamp > 100_000]
    exits = [e for e in after if e.type == "exit"]
    # Cycles of 2 s after the publish: the events from one exit to the next are one cycle.
    assert len(exits) >= 2
    assert after.index(exits[1]) - after.index(exits[0]) == PROFILES[name].per_crash


# A crash loop whose whole cycle is shorter than the check's look delay.
loops = st.builds(
    App,
    boot_ms=st.sampled_from([100, 200, 400, 1_000, 2_000]),
    crash_after_ms=st.sampled_from([500, 1_000, 2_500, 5_000]),
    restart_delay_ms=st.sampled_from([0, 100, 300, 1_000, 2_000]),
    max_retries=st.none(),
    cap=st.integers(1, 10),
    events=st.sampled_from(sorted(PROFILES)),
)


def _missed(app: App, look_delay_s: float) -> bool:
    run = drive_world(TimestampCheck(look_delay_s=look_delay_s), lay_out(app, horizon_s=300))
    return run.verdict is not None and run.verdict.ok


@given(app=loops, margin_s=st.sampled_from([1.0, 5.0, 20.0]))
@example(app=App(cap=3, events="fly-restart-double-start", max_retries=None), margin_s=5.0)
def test_timestamp_catches_a_fast_crash_loop_when_the_cap_holds_a_cycle(app: App, margin_s: float):
    """Cap >= the profile's events per crash: the timestamp check never passes a fast crash loop."""
    cycle_s = (app.boot_ms + app.crash_after_ms + app.restart_delay_ms) / 1000
    missed = _missed(app, cycle_s + margin_s)
    note(f"per crash {PROFILES[app.events].per_crash}, missed {missed}")
    if app.cap >= PROFILES[app.events].per_crash:
        assert not missed


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_hypothesis_finds_the_largest_cap_that_still_fools_timestamp(name):
    """Searching caps from large to small, the largest fooled cap is one short of a crash cycle.

    ``find`` shrinks ``short_by`` towards 1, i.e. the cap towards the largest value at
    which some crash loop (faster than the looks) still fools the check: per_crash - 1.
    The safe caps from per_crash up are the property test above.
    """
    per_crash = PROFILES[name].per_crash
    worlds = st.tuples(
        st.integers(1, per_crash),
        st.sampled_from([100, 400, 1_000]),
        st.sampled_from([500, 1_000, 2_500]),
        st.sampled_from([0, 300, 1_000]),
    )

    def fooled(drawn: tuple[int, int, int, int]) -> bool:
        short_by, boot, crash, delay = drawn
        cap = per_crash - short_by
        if cap < 1:
            return False
        app = App(boot_ms=boot, crash_after_ms=crash, restart_delay_ms=delay, max_retries=None,
                  cap=cap, events=name)
        return _missed(app, (boot + crash + delay) / 1000 + 5.0)

    found = find(worlds, fooled, settings=settings(max_examples=300, database=None, derandomize=True))
    assert per_crash - found[0] == per_crash - 1
