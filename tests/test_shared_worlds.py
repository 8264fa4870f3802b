"""Checks that share one world per seed get exactly what each got in a world of its own."""

from __future__ import annotations

from functools import partial
from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from platform_testbed.checks import BUILTIN_CHECKS, Check, Verdict, Wait
from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish import forking, sharing
from platform_testbed.sim.publish import world as world_module
from platform_testbed.sim.publish.sharing import run_checks
from platform_testbed.sim.publish.world import RunResult, World, build, run, start

_PROFILES = ["minimal", "fly-exit-start", "fly-restart-start", "fly-start-starting",
             "fly-restart-double-start"]


def _solo(loaded: scenario.Scenario, seed: int, checks: list[Check]) -> list[RunResult]:
    """The per-check runs: each check alone in a world of its own (``run``)."""
    return [run(loaded, seed, check) for check in checks]


@st.composite
def _worlds(draw: st.DrawFn) -> tuple[scenario.Scenario, int]:
    """A shipped scenario with its unknowns and the checks' look delay redrawn, and a seed."""
    name = draw(st.sampled_from(sorted(scenario.shipped())))
    sets = [
        f"platform.restart_delay_s={draw(st.sampled_from([0.1, 0.3, 1.0, 3.0]))}",
        f"platform.boot_s={draw(st.sampled_from([0.2, 0.4, 1.0, 3.0]))}",
        f"platform.event_log_cap={draw(st.sampled_from([1, 2, 5, 10]))}",
        f"platform.events={draw(st.sampled_from(_PROFILES))}",
        f"check.look_delay_s={draw(st.sampled_from([0.5, 1.0, 2.5, 5.0, 10.0]))}",
        f"publish.rollback={draw(st.sampled_from(['restore', 'delete']))}",
        f"release.machines={draw(st.integers(1, 3))}",
    ]
    note(f"{name} {sets}")
    return scenario.load(name, sets), draw(st.integers(0, 10_000))


@settings(max_examples=60, deadline=None)
@given(_worlds(), st.permutations(list(BUILTIN_CHECKS)))
def test_shared_worlds_give_the_per_check_results(case: tuple[scenario.Scenario, int],
                                                  order: list[str]) -> None:
    """Every built-in (in any order) gets from run_checks what its own run gives it."""
    loaded, seed = case
    checks = load_checks(order, loaded.check)
    assert run_checks(loaded, seed, checks) == _solo(loaded, seed, checks)


class _Scripted:
    """A check that waits the given seconds between looks, then gives its verdict."""

    rolls_back = True

    def __init__(self, name: str, waits: list[float], ok: bool | None) -> None:
        self.name, self.waits, self.ok = name, waits, ok

    def next(self, publish_started_ms: int, looks: Any) -> Wait | Verdict:
        """Wait, look, ...; then pass or fail (or raise: ``ok`` None)."""
        done = len(looks)
        if done < len(self.waits):
            return Wait(self.waits[done])
        if self.ok is None:
            raise RuntimeError("scripted failure")
        return Verdict(self.ok, "scripted", None)


@settings(max_examples=80, deadline=None)
@given(_worlds(), st.lists(st.tuples(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5]), max_size=5),
                                     st.sampled_from([True, False, None])),
                           min_size=1, max_size=5))
def test_checks_that_decide_in_the_same_step_share_a_world(
    case: tuple[scenario.Scenario, int], scripts: list[tuple[list[float], bool | None]],
) -> None:
    """Checks with the same or nearby looks (zero waits, equal times, errors) match their own runs."""
    loaded, seed = case
    checks: list[Check] = [_Scripted(f"s{i}", waits, ok) for i, (waits, ok) in enumerate(scripts)]
    shared = run_checks(loaded, seed, checks)
    alone = _solo(loaded, seed, checks)
    assert [(r.check, r.verdict, r.decided_at_s, r.site, r.looks) for r in shared] == \
        [(r.check, r.verdict, r.decided_at_s, r.site, r.looks) for r in alone]
    assert [(r.error, r.rollback, r.late_failure_at_s, r.bad) for r in shared] == \
        [(r.error, r.rollback, r.late_failure_at_s, r.bad) for r in alone]


def test_agreeing_checks_share_one_world() -> None:
    """Two checks that look alike and agree cost one world, not two (the sweep's case)."""
    loaded = scenario.load("sept25-crash-loop", ["check.look_delay_s=10"])
    built: list[int] = []
    original = sharing._Shared.run

    def counted(self: sharing._Shared) -> None:
        built.append(1)
        original(self)

    sharing._Shared.run = counted  # type: ignore[method-assign]
    try:
        one = _Scripted("a", [1.0, 1.0], True)
        two = _Scripted("b", [1.0, 1.0], True)
        other = _Scripted("c", [1.0, 1.0], False)
        run_checks(loaded, 1, [one, two])
        assert len(built) == 1
        run_checks(loaded, 1, [one, other])
        assert len(built) == 3  # a pass and a fail in the same step: two worlds
    finally:
        sharing._Shared.run = original  # type: ignore[method-assign]


def test_looks_are_not_asked_again_in_a_later_world() -> None:
    """A check riding on to a second world is not called again for looks it already answered."""
    loaded = scenario.load("sept25-crash-loop")
    calls: list[int] = []

    class Counting(_Scripted):
        def next(self, publish_started_ms: int, looks: Any) -> Wait | Verdict:
            calls.append(len(looks))
            return super().next(publish_started_ms, looks)

    first = _Scripted("first", [1.0], False)
    late = Counting("late", [1.0, 3.0, 3.0], True)
    run_checks(loaded, 1, [first, late])
    assert calls == [0, 1, 2, 3]


@settings(max_examples=30, deadline=None)
@given(_worlds(), st.permutations(list(BUILTIN_CHECKS)), st.sampled_from([True, False, None]))
def test_either_way_of_running_gives_the_per_check_results(
    case: tuple[scenario.Scenario, int], order: list[str], share: bool | None
) -> None:
    """Shared worlds, a world per check, or the choice run_checks makes: the same results."""
    loaded, seed = case
    checks = load_checks(order, loaded.check)
    assert run_checks(loaded, seed, checks, share=share) == _solo(loaded, seed, checks)


def _counting(monkeypatch: Any) -> dict[str, int]:
    """Count, in ``run_checks``, the worlds built from time 0, oracles from time 0, copies
    made and oracles gone on from a copy."""
    counts = dict.fromkeys(("build", "ground_truth", "fork", "rest_crashes"), 0)
    for name in counts:
        original = getattr(sharing, name)

        def counted(*args: Any, _name: str = name, _original: Any = original) -> Any:
            counts[_name] += 1
            return _original(*args)

        monkeypatch.setattr(sharing, name, counted)
    return counts


def test_a_seed_is_simulated_from_time_0_once(monkeypatch: Any) -> None:
    """count and timestamp decide apart in the incident's world: one world from time 0 a
    seed, the other verdict rides on in a copy, and no oracle from time 0."""
    loaded = scenario.load("sept25-crash-loop")
    checks = load_checks(["count", "timestamp"], loaded.check)
    expected = [_solo(loaded, seed, checks) for seed in range(20)]
    counts = _counting(monkeypatch)
    assert [run_checks(loaded, seed, checks) for seed in range(20)] == expected
    assert counts["build"] == 20
    assert counts["ground_truth"] == 0
    assert counts["fork"] >= 10  # they do decide apart (count passes, timestamp fails)


def test_the_oracle_goes_on_from_the_copy(monkeypatch: Any) -> None:
    """A rollback before any crash leaves the truth open: the oracle goes on from the copy
    made where the verdict acted, not from time 0, and finds what ``run`` finds. (The
    ``crash`` truth: ``serves`` reads the window from time 0.)"""
    loaded = scenario.load("slow-crash-loop", ["truth='crash'"])
    checks: list[Check] = [_Scripted("early", [0.5], False)]
    expected = _solo(loaded, 3, checks)
    counts = _counting(monkeypatch)
    assert run_checks(loaded, 3, checks) == expected
    assert (counts["build"], counts["ground_truth"], counts["rest_crashes"]) == (1, 0, 1)
    assert expected[0].bad


def test_a_world_that_cannot_be_copied_is_simulated_again(monkeypatch: Any) -> None:
    """Where no copy can be made, the checks that ride on replay their looks in a new world."""
    loaded = scenario.load("sept25-crash-loop")
    checks = load_checks(["count", "timestamp"], loaded.check)
    expected = [_solo(loaded, seed, checks) for seed in range(5)]
    monkeypatch.setattr(sharing, "fork", lambda *args: None)
    counts = _counting(monkeypatch)
    assert [run_checks(loaded, seed, checks) for seed in range(5)] == expected
    assert counts["build"] > 5


@settings(max_examples=40, deadline=None)
@given(_worlds(), st.floats(0.0, 60.0))
def test_a_copied_world_goes_on_as_the_original(case: tuple[scenario.Scenario, int],
                                                at_s: float) -> None:
    """A world copied at any time and both run on give the same platform, event for event,
    as a world never copied."""
    loaded, seed = case

    def world_to(until: float | None) -> World:
        made = build(loaded, seed, trace=True)
        start(made, partial(world_module._publish, made, None, DEFAULT_CHECK_BUDGET))
        made.env.run(until=loaded.horizon_s if until is None else until)
        return made

    def story(made: World) -> Any:
        return ([(m.state, m.log.records, m.crashes, m.history, m.all_events, m.log.dropped)
                 for m in made.machines], made.site.segments, made.env.now)

    reference = story(world_to(None))
    original = world_to(loaded.publish.at_s + at_s)
    copied = forking.fork(original, lambda event, env: None)
    if copied is None:  # something waits on the world (fly-proxy's autostart): not copied
        return
    original.env.run(until=loaded.horizon_s)
    copied.env.run(until=loaded.horizon_s)
    assert story(copied) == reference
    assert story(original) == reference
