"""Checks that share one world per seed get exactly what each got in a world of its own."""

from __future__ import annotations

from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from platform_testbed.checks import BUILTIN_CHECKS, Check, Verdict, Wait
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish import sharing
from platform_testbed.sim.publish.sharing import run_checks
from platform_testbed.sim.publish.world import RunResult, run

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


def test_sharing_stops_where_it_saves_nothing_and_is_tried_again_now_and_then() -> None:
    """Checks that decide apart (a world each) share for the first calls only, then once
    every SHARE_PROBE_EVERY calls; checks that share a world keep sharing."""
    apart = sharing._Gain()
    chosen = []
    for _ in range(4 + 2 * sharing.SHARE_PROBE_EVERY):
        chosen.append(apart.share())
        if chosen[-1]:
            apart.saw(6, 6)
    assert chosen[:4] == [True] * 4
    probes = [i for i, shared in enumerate(chosen) if shared][4:]
    assert probes == [4 + sharing.SHARE_PROBE_EVERY - 1, 4 + 2 * sharing.SHARE_PROBE_EVERY - 1]
    together = sharing._Gain()
    for _ in range(50):
        assert together.share()
        together.saw(1, 2)


def test_run_checks_learns_per_list_of_checks(monkeypatch: Any) -> None:
    """run_checks keeps one tally per list of check names, fed by the worlds it simulates."""
    monkeypatch.setattr(sharing, "_GAINS", {})
    loaded = scenario.load("sept25-crash-loop")
    checks = load_checks(["count", "timestamp"], loaded.check)
    for seed in range(3):
        run_checks(loaded, seed, checks)
    gain = sharing._GAINS[("count", "timestamp")]
    assert gain.shared == 3
    assert 0.5 <= gain.worlds <= 1.0
