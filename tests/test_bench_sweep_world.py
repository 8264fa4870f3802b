"""The sweep-world benchmark compares like with like: its bare twin does the model's work.

``benchmarks/bench_core.py`` times ``unit_rows`` against ``bare_sweep_world``; the ratio
means something only if the twin reports the same rows from the same simulated events.
These tests hold the twin to that over generated worlds of the shipped sweep (the bench
itself checks every world it times as well).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from platform_testbed.sim.publish.world import ground_truth
from platform_testbed.sim.sweep import load_sweep
from platform_testbed.sim.sweep.file import validation_env
from platform_testbed.sim.sweep.units import unit_rows

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_core", ROOT / "benchmarks" / "bench_core.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_core"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


BENCH = _bench()
SWEEP = load_sweep(ROOT / "scenarios" / "sweeps" / "crash_period_vs_look_delay.toml")


@given(st.integers(0, SWEEP.units - 1))
def test_the_twin_gives_the_models_rows_from_as_many_events(unit: int) -> None:
    with BENCH.counting_steps() as model_events:
        model = unit_rows([unit], SWEEP)
    with BENCH.counting_steps() as twin_events:
        twin = BENCH.bare_sweep_world(SWEEP, unit)
    assert twin == model
    assert twin_events == model_events
    assert model_events[0] > 0  # the counter counts


def test_the_compared_worlds_take_every_path_after_a_verdict() -> None:
    """The bench's own worlds: rollbacks and late failures after going live, so the
    equality covers both steps the twin copies. (Every world of this sweep proves the
    release bad itself: the oracle never runs there; the next test checks it alone.)"""
    units = BENCH._sweep_worlds(SWEEP, 300)
    rows = [row for unit in units for row in BENCH.bare_sweep_world(SWEEP, unit)]
    assert {row["rollback"] for row in rows} >= {"restored", None}
    assert any(row["late_failure_at_s"] is not None for row in rows)
    assert {row["verdict"] for row in rows} == {"pass", "fail"}
    assert all(row["requests"] > 0 for row in rows)


@given(st.integers(0, SWEEP.units - 1))
def test_the_twins_oracle_is_the_models_ground_truth(unit: int) -> None:
    sc = SWEEP.scenario(SWEEP.point(unit), validation_env())
    with BENCH.counting_steps() as model_events:
        model = ground_truth(sc, SWEEP.seeds[0])
    with BENCH.counting_steps() as twin_events:
        twin = BENCH._BareWorld(sc, SWEEP.seeds[0]).oracle()
    assert twin == model
    assert twin_events == model_events


def test_the_twin_refuses_a_world_it_does_not_simulate() -> None:
    sc = SWEEP.scenario(SWEEP.point(0), validation_env())
    BENCH.twin_covers(sc)  # the sweep's own world: covered
    always = sc.model_copy(update={"platform": sc.platform.model_copy(
        update={"restart_policy": "always"})})
    with pytest.raises(ValueError, match="on-failure restarts"):
        BENCH.twin_covers(always)


def test_a_wrong_twin_is_caught() -> None:
    """The comparison can fail: a twin one event off the model's looks differs (at each
    restart it writes restart/starting where the sweep's profile writes none, or none
    where it writes one)."""
    world = BENCH._BareWorld
    restarted = world.restarted
    writes = SWEEP.scenario(SWEEP.point(0), validation_env()).platform.events == "fly-restart-start"

    def wrong(self: object, i: int) -> None:  # one restart/starting event off
        self.pending[i] = None  # type: ignore[attr-defined]
        if not writes:
            self.write(i, "restart", "starting")  # type: ignore[attr-defined]
        self.enter(i, "starting")  # type: ignore[attr-defined]
        self.boot(i)  # type: ignore[attr-defined]

    try:
        world.restarted = wrong
        units = BENCH._sweep_worlds(SWEEP, 200)
        assert any(BENCH.bare_sweep_world(SWEEP, u) != unit_rows([u], SWEEP) for u in units)
    finally:
        world.restarted = restarted
