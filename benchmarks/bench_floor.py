"""Where the floor is: a sweep world against bare SimPy and against a bare heapq loop.

Run: ``.venv/bin/python benchmarks/bench_floor.py [--pairs 15] [--block 150]`` (about a
minute; ``make bench`` runs it). The workload is ``million_worlds`` as the sweep runs it:
blocks of consecutive units (a sweep's order, so what a seed and a point's values fix is
reused as in the real run) taken at spread offsets. Three sides time the same units, in
interleaved rounds (the order turned every round), each in CPU-seconds of this process
(``time.process_time``: less moved by other users' load than wall time):

- ``model``: ``unit_rows`` (the point's scenario and checks, the shared world and its
  copies, the oracle, traffic, rows);
- ``bare SimPy``: ``bench_core.bare_sweep_world``, the same work in plain SimPy and
  NumPy, rows and SimPy events equal to the model's (checked on every timed unit first);
- ``heapq floor``: the least an event loop does for those events: a ``heapq`` of
  (time, priority, id, callback) entries, each event's no-op callback scheduling the
  next, as many events per unit as the model's SimPy processed (counted per unit).

Prints worlds per CPU-second for each, the medians of the pairs' ratios (model over the
floor, model over bare SimPy) with their quartiles, the model's copies and worlds from
t = 0 per unit, and the load average at start and end.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import importlib.util
import itertools
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from platform_testbed.sim.publish.gcpause import gc_paused
from platform_testbed.sim.sweep import load_sweep
from platform_testbed.sim.sweep.file import Sweep
from platform_testbed.sim.sweep.units import unit_rows

ROOT = Path(__file__).resolve().parent.parent


def _bench(name: str) -> ModuleType:
    """Another benchmark script of this folder, as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


CORE = _bench("bench_core")
MILLION = _bench("bench_million")


def blocks(sweep: Sweep, count: int, size: int) -> list[list[int]]:
    """``count`` blocks of ``size`` consecutive units, at offsets spread over the sweep."""
    step = sweep.units // count
    return [list(range(b * step + step // 2, b * step + step // 2 + size)) for b in range(count)]


def _noop(_: int) -> None:
    """A callback that does nothing (the floor's event)."""


def heapq_floor(events: int) -> None:
    """A bare event loop: ``events`` events through a heap, each scheduling the next."""
    queue: list[tuple[float, int, int, Callable[[int], None]]] = [(0.0, 1, 0, _noop)]
    ids = itertools.count(1)
    now = 0.0
    left = events
    while queue:
        now, _, eid, callback = heapq.heappop(queue)
        callback(eid)
        left -= 1
        if left > 0:
            heapq.heappush(queue, (now + 0.5, 1, next(ids), _noop))


def counted_units(sweep: Sweep, units: Sequence[int]) -> dict[str, float]:
    """Per unit: SimPy events, and the worlds ``bench_million.count_worlds`` counts."""
    with CORE.counting_steps() as steps:
        counts: dict[str, float] = MILLION.count_worlds(sweep, units)
    return counts | {"events": steps[0] / len(units)}


def _quartiles(values: list[float]) -> str:
    low, _, high = statistics.quantiles(values, n=4)
    return f"quartiles {low:.2f}-{high:.2f}x"


def main() -> None:
    """Time the three sides on the same units in interleaved rounds; print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=15)
    parser.add_argument("--block", type=int, default=150)
    args = parser.parse_args()
    sweep = load_sweep(ROOT / "scenarios" / "sweeps" / "million_worlds.toml")
    start_load = os.getloadavg()
    chosen = blocks(sweep, args.pairs, args.block)
    # Events per unit, and the equality the bare twin must hold (rows and events).
    events: list[list[int]] = []
    for block in chosen:
        per_unit = []
        for unit in block:
            with CORE.counting_steps() as model_events:
                model_rows = unit_rows([unit], sweep)
            with CORE.counting_steps() as twin_events:
                twin_rows = CORE.bare_sweep_world(sweep, unit)
            assert twin_rows == model_rows, f"unit {unit}: the twin's rows differ"
            assert twin_events == model_events, f"unit {unit}: {twin_events} != {model_events}"
            per_unit.append(model_events[0])
        events.append(per_unit)
    counts = counted_units(sweep, [u for block in chosen for u in block])

    def model(i: int) -> None:
        unit_rows(chosen[i], sweep)

    def twin(i: int) -> None:
        with gc_paused():
            for unit in chosen[i]:
                CORE.bare_sweep_world(sweep, unit)

    def floor(i: int) -> None:
        for n in events[i]:
            heapq_floor(n)

    sides: dict[str, Callable[[int], None]] = {"model": model, "bare SimPy": twin,
                                               "heapq floor": floor}
    took: dict[str, list[float]] = {name: [] for name in sides}
    for i in range(len(chosen)):
        order = list(sides) if i % 2 == 0 else list(sides)[::-1]
        for name in order:
            began = time.process_time()
            sides[name](i)
            took[name].append((time.process_time() - began) / len(chosen[i]))
            gc.collect(0)  # each side's garbage collected untimed, not in the next side's time
    end_load = os.getloadavg()
    print(f"million_worlds, {len(chosen)} rounds of {args.block} consecutive units "
          f"(CPU-seconds of this process; load average {start_load[0]:.2f} at start, "
          f"{end_load[0]:.2f} at end):")
    for name, times in took.items():
        per = statistics.median(times)
        print(f"  {name:12s} {per * 1e6:7.1f} us/world = {1 / per:9,.0f} worlds per CPU-second")
    for other in ("heapq floor", "bare SimPy"):
        ratios = [m / o for m, o in zip(took["model"], took[other], strict=True)]
        goal = "  (goal <= 4x without the compiled build)" if other == "heapq floor" else ""
        print(f"  model / {other:11s} {statistics.median(ratios):5.2f}x median of "
              f"{len(ratios)} pairs ({_quartiles(ratios)}){goal}")
    print(f"  per unit: {counts['events']:.1f} SimPy events, {counts['build']:.3f} worlds from "
          f"t = 0 ({counts['ground_truth']:.3f} oracles from t = 0), {counts['fork']:.3f} copies, "
          f"{counts['rest_crashes']:.3f} oracles from a copy")


if __name__ == "__main__":
    main()
