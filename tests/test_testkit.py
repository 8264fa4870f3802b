"""The test kit: strategies reach every kind of world, the assertion shrinks, one platform model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, event, find, given, settings
from hypothesis import strategies as st

from platform_testbed.checks import CountCheck, Look, TimestampCheck, Verdict, Wait, make_check
from platform_testbed.checks.protocol import Step
from platform_testbed.sim.config.profiles import PROFILES
from platform_testbed.sim.kit.strategies import (
    KINDS,
    SLOW_CRASH_MS,
    GuaranteeBroken,
    apps,
    assert_guarantee,
    kind_of,
    never_false_alarms,
    never_misses,
    outcome,
    worlds,
)
from platform_testbed.sim.kit.testing import PUBLISH_MS, App, MachineHistory, Run, World, drive_world, world
from platform_testbed.sim.platform.behavior import OOM_EXIT_CODE
from platform_testbed.sim.publish.world import run as simulate

SEARCH = settings(max_examples=1_000, database=None, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow])


def _after_publish(m: MachineHistory) -> list:
    return [e for e in m.events if e.timestamp >= PUBLISH_MS and not e.requested_stop]


def _crashes(m: MachineHistory) -> list:
    return [e for e in _after_publish(m) if e.is_crash]


def _starts(m: MachineHistory) -> list[int]:
    return [t for t, s in m.states if s == "started" and t >= PUBLISH_MS]


def _first_crash_after_start_ms(m: MachineHistory) -> int:
    first = _crashes(m)[0].timestamp
    return first - max(t for t in _starts(m) if t <= first)


def _final_state(m: MachineHistory) -> str:
    return m.states[-1][1]


def _late(m: MachineHistory) -> float:
    """How much later than drawn a crash may come: the platform's jitter."""
    return 1 + m.app.jitter


def _early(m: MachineHistory) -> float:
    """How much earlier than drawn a crash may come: the platform's jitter."""
    return 1 - m.app.jitter


#: Each kind, told apart by what the machine did on the real model (not by the App's fields).
BEHAVES: dict[str, Callable[[MachineHistory], bool]] = {
    "healthy": lambda m: not _crashes(m) and _final_state(m) == "started",
    "crash-loop": lambda m: len(_crashes(m)) >= 2
    and _first_crash_after_start_ms(m) <= 5_000 * _late(m)
    and not any(e.oom_killed for e in _crashes(m)),
    "crash-on-boot": lambda m: len(_crashes(m)) >= 2
    and _first_crash_after_start_ms(m) <= 1_000 * _late(m),
    "slow-crash": lambda m: bool(_crashes(m))
    and _first_crash_after_start_ms(m) >= SLOW_CRASH_MS * _early(m)
    # Still after the built-in checks' 10 s looks, whatever the jitter.
    and _first_crash_after_start_ms(m) > 10_000,
    "oom": lambda m: bool(_crashes(m))
    and all(e.oom_killed and e.exit_code == OOM_EXIT_CODE for e in _crashes(m)),
    "clean-exit": lambda m: not _crashes(m)
    and any(e.type == "exit" and e.exit_code == 0 for e in _after_publish(m))
    and _final_state(m) == "stopped",
    "give-up": lambda m: 1 <= len(_crashes(m)) <= 4 and not _crashes(m)[-1].restarting
    and _final_state(m) == "stopped" and _crashes(m)[-1].restart_count <= 3,
    "no-restart": lambda m: len(_crashes(m)) == 1 and not _crashes(m)[0].restarting
    and _final_state(m) == "stopped",
    "always": lambda m: len(_crashes(m)) > 11
    and all(s != "stopped" for t, s in m.states if t > _crashes(m)[0].timestamp),
}


@pytest.mark.parametrize("kind", KINDS)
def test_worlds_reach_every_kind_of_machine(kind: str) -> None:
    """For each kind, worlds() yields one whose machine behaves that way on the real model."""
    found = find(worlds(horizon_s=200),
                 lambda w: any(kind_of(m.app) == kind and BEHAVES[kind](m) for m in w.machines),
                 settings=SEARCH)
    assert found.machines


@pytest.mark.parametrize("kind", KINDS)
def test_apps_of_one_kind_behave_as_that_kind(kind: str) -> None:
    """apps(kinds=[k]) only draws apps that behave as k (and kind_of names them k)."""

    @settings(max_examples=15, deadline=None, database=None)
    @given(app=apps(kinds=[kind]))
    def each(app: App) -> None:
        assert kind_of(app) == kind
        [m] = world(app, horizon_s=200).machines
        assert BEHAVES[kind](m), app

    each()


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_worlds_reach_every_event_profile(profile: str) -> None:
    """Every event profile of the platform model shows up in some world."""
    found = find(worlds(horizon_s=60), lambda w: w.machines[0].app.events == profile, settings=SEARCH)
    assert all(m.app.events == profile for m in found.machines)


@pytest.mark.parametrize(("n", "cap"), [(1, 1), (4, 10), (2, 5)])
def test_worlds_reach_machine_counts_and_caps(n: int, cap: int) -> None:
    """1 to 4 machines and caps 1 to 10 (both ends) are reachable, one cap per world."""
    found = find(worlds(horizon_s=60),
                 lambda w: len(w.machines) == n and w.machines[0].app.cap == cap, settings=SEARCH)
    assert {m.app.cap for m in found.machines} == {cap}


def test_worlds_take_fixed_values_and_reject_unknown_kinds() -> None:
    """A plain value pins a dimension; an unknown kind is refused with the known ones listed."""
    found = find(worlds(machines=3, cap=2, events="fly-restart-start", horizon_s=30), lambda w: True)
    assert [(m.app.cap, m.app.events) for m in found.machines] == [(2, "fly-restart-start")] * 3
    with pytest.raises(ValueError, match="crash-loop"):
        worlds(kinds=["crashy"])


def test_a_shrunk_counterexample_reads_as_its_rule() -> None:
    """Values shrink to App's defaults: the smallest world timestamp misses is App(cap=1)."""
    with pytest.raises(GuaranteeBroken) as broken:
        assert_guarantee(TimestampCheck(), never_misses, worlds=worlds(kinds=["crash-loop"]),
                         max_examples=100)
    assert "world(App(cap=1), horizon_s=600)" in str(broken.value)


def test_assert_guarantee_reports_the_smallest_world_that_fools_count() -> None:
    """count misses crash loops: the message shows a world that, rebuilt, fools it the same way."""
    with pytest.raises(GuaranteeBroken) as broken:
        assert_guarantee(CountCheck(), never_misses, max_examples=200)
    message = str(broken.value)
    assert message.startswith("count breaks never_misses (A bad release (by the world's truth)")
    shown = message.splitlines()[1].strip()
    rebuilt: World = eval(shown, {"App": App, "world": world})  # the repr is code
    assert repr(rebuilt) == shown
    run = drive_world(CountCheck(), rebuilt)
    assert outcome(rebuilt, run) == "missed"
    assert f"looks ({len(run.looks)};" in message
    assert message.count("  look ") == len(run.looks)
    assert "verdict: pass at " in message
    assert "-> missed (the release is bad by the truth serves: m1 crashed" in message


def test_assert_guarantee_is_the_same_every_run() -> None:
    """With the default seed the search, and so the reported world, does not change between runs."""
    messages = []
    for _ in range(2):
        with pytest.raises(GuaranteeBroken) as broken:
            assert_guarantee(CountCheck(), never_misses, max_examples=100)
        messages.append(str(broken.value))
    assert messages[0] == messages[1]


def test_assert_guarantee_takes_plain_asserts_and_reports_their_message() -> None:
    """A guarantee written with assert breaks with its own message in the report."""

    def decides_within_a_minute(w: World, run: Run) -> None:
        assert run.decided_at_ms is not None, "no verdict"
        assert run.decided_at_ms - PUBLISH_MS <= 60_000, "decided after a minute"

    slow = make_check("min-healthy-time", {"min_healthy_s": 90.0})
    with pytest.raises(GuaranteeBroken, match=r"decided after a minute"):
        assert_guarantee(slow, decides_within_a_minute,
                         worlds=worlds(kinds=["healthy"], machines=1, horizon_s=100), max_examples=5)


def test_assert_guarantee_reports_a_check_that_raises() -> None:
    """A check that raises breaks any guarantee; the report names the world and the error."""

    @dataclass(frozen=True)
    class Broken:
        name = "broken"

        def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
            if looks:
                raise ZeroDivisionError("oops")
            return Wait(1.0)

    with pytest.raises(GuaranteeBroken, match=r"(?s)broken could not be driven.*world\(App.*oops"):
        assert_guarantee(Broken(), never_misses, max_examples=5)


def _fast_crash_loops(profile: str) -> st.SearchStrategy[World]:
    # The cap holds one whole crash cycle of the profile: exit, restart events, start.
    return worlds(
        kinds=["crash-loop", "crash-on-boot", "oom", "give-up", "always", "no-restart", "healthy"],
        events=profile,
        cap=st.integers(PROFILES[profile].per_crash, 10),
        horizon_s=300,
    )


def catches_a_crash_loop_faster_than_its_looks(w: World, run: Run) -> bool:
    """A crash loop whose whole cycle (boot, run, restart) is shorter than the look delay is failed."""
    delay_ms = TimestampCheck().look_delay_s * 1000
    # The whole cycle at its longest: the jitter stretches the boot and the run.
    fast = [
        m for m in w.machines
        if kind_of(m.app) != "healthy"
        and (m.app.boot_ms + (m.app.crash_after_ms or 0)) * _late(m) + m.app.restart_delay_ms
        < delay_ms
    ]
    return not fast or outcome(w, run) == "caught"


def test_timestamp_catches_fast_crash_loops_when_the_cap_holds_a_cycle() -> None:
    """timestamp fails every crash loop faster than its look delay once cap >= the profile's cycle."""
    every_profile = st.sampled_from(sorted(PROFILES)).flatmap(_fast_crash_loops)
    assert_guarantee(TimestampCheck(), catches_a_crash_loop_faster_than_its_looks,
                     worlds=every_profile, max_examples=300)


def test_timestamp_passes_healthy_releases() -> None:
    """A guarantee that holds raises nothing: timestamp never fails a release that never crashes."""
    assert_guarantee(TimestampCheck(), never_false_alarms,
                     worlds=worlds(kinds=["healthy", "slow-crash"], horizon_s=120), max_examples=50)


# --- one platform model: the kit's worlds are the simulator's -------------------------


@dataclass(frozen=True)
class Prober:
    """Looks after each of ``waits`` seconds, then passes: snapshots at chosen times."""

    waits: tuple[float, ...]
    name = "prober"

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        if len(looks) <= len(self.waits):
            return Wait(self.waits[len(looks)] if len(looks) < len(self.waits) else 0.0)
        return Verdict(True, "probed")


checks_to_drive = st.sampled_from(["timestamp", "count", "flyctl-smoke", "min-healthy-time",
                                   "restart-counter", "circuit-breaker"]).map(
    lambda name: make_check(name, {"healthy_deadline_s": 60.0})
) | st.lists(st.integers(0, 200).map(lambda n: n / 10), min_size=1, max_size=20).map(
    lambda waits: Prober(tuple(waits))
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=worlds(same_app=True, machines=st.integers(1, 3),
                restart_counter=st.booleans(), horizon_s=120),
       check=checks_to_drive)
def test_the_kit_and_the_simulator_show_the_same_snapshots(w: World, check: object) -> None:
    """Same app, platform and looks: sim.kit.testing.world and sim.publish.world show equal snapshots.

    A look in the very millisecond of a machine's change may see it either way in the
    simulator (SimPy orders same-time events by when they were scheduled), so the runs
    are compared up to the first such look, and in full when there is none.
    """
    kit = drive_world(check, w)  # type: ignore[arg-type]
    sim = simulate(w.scenario(), w.seed, check)  # type: ignore[arg-type]
    changes = {t for m in w.machines for t in (*m.times, *m.state_times)}
    changes |= {t for m in w.machines for t, _ in m.counters}
    kit_looks = [k for k in kit.looks if k.at_ms < w.horizon_ms]
    # Both sides may look in the horizon's own millisecond (the simulator processes a look
    # scheduled there before its stop): compared before it, as the kit's are.
    sim_looks = [r.look for r in sim.looks if r.look.at_ms < w.horizon_ms]
    tie = next((i for i, k in enumerate(kit_looks) if k.at_ms in changes), None)
    event("a look in the millisecond of a change" if tie is not None else "no tie")
    if tie is None:
        assert kit_looks == sim_looks
        if len(kit_looks) == len(kit.looks):
            assert kit.verdict == sim.verdict
    else:
        assert kit_looks[:tie] == sim_looks[:tie]
    assert sim.bad == w.bad  # one ground truth: a crash of the release after the publish
