"""The lazy world's loop (``LazyClock``) runs processes in exactly SimPy's order."""

from __future__ import annotations

import gc
from collections.abc import Generator
from typing import Any

import simpy
from hypothesis import given
from hypothesis import strategies as st

from sim.publish.clock import LazyClock, gc_paused

# Delays from a small set, so that many steps land on one instant (ties are the point).
delays = st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.5]), max_size=6)


def _story(
    env: Any, plans: list[list[float]], spawn_at: int, stop_at: int, stop: Any
) -> list[tuple[float, int, int]]:
    """Run processes that wait ``plans`` and note each step; one starts another, one stops."""
    seen: list[tuple[float, int, int]] = []

    def proc(who: int, waits: list[float]) -> Generator[Any, Any, None]:
        seen.append((env.now, who, -1))
        for step, wait in enumerate(waits):
            yield env.timeout(wait)
            seen.append((env.now, who, step))
            if who == 0 and step == spawn_at:
                env.process(proc(len(plans), [0.0, 1.0]))
            if who == 1 and step == stop_at:
                stop()

    for who, waits in enumerate(plans):
        env.process(proc(who, waits))
    env.run(until=4)
    seen.append((env.now, -1, -1))
    return seen


def _simpy_stop(env: simpy.Environment) -> None:
    event = env.event()
    event.callbacks.append(simpy.core.StopSimulation.callback)
    event.succeed()


@given(st.lists(delays, min_size=1, max_size=4), st.integers(0, 5), st.integers(0, 5))
def test_lazy_clock_orders_like_simpy(plans: list[list[float]], spawn_at: int, stop_at: int) -> None:
    """Same steps at the same times in the same order, the same stop and the same end time."""
    reference = simpy.Environment()
    lazy = LazyClock()
    expected = _story(reference, plans, spawn_at, stop_at, lambda: _simpy_stop(reference))
    assert _story(lazy, plans, spawn_at, stop_at, lazy.stop) == expected


def test_gc_paused_restores_the_collector_and_leaves_a_paused_one_alone() -> None:
    """A run pauses the collector only if it was running, and turns it back on after."""
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
