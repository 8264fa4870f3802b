"""How a world's cost grows with its machines: all six built-in checks, 1,000 vs 10,000.

Run: ``.venv/bin/python benchmarks/bench_scale.py`` (``make bench`` runs it too). The
incident world (a crash loop) with ``release.machines`` set to N, every built-in check
in the same world (``run_checks``), best of a few rounds. Linear work would cost 10x for
10x the machines; the goal (issue 12) is at most 10x. Prints the ratios measured in this
run, never an absolute time to compare against.

The yardstick: the bare SimPy twin of bench_core.py run at both sizes. SimPy itself grows
faster than its process count on one core (cache misses on a large event heap and many
generator frames), so the line to read beside the goal is the model's growth over the
engine's: at most 1 means the model adds nothing superlinear of its own.

The total is split in two, so the ratio says where growth comes from: the time spent
inside the checks' ``next`` (timed around each call) and the rest, which is the
simulated world (machines, snapshots, the driver) and does not depend on how a check
decides. (Timing the calls adds two clock reads and, for a wrapper outside ``checks``,
the driver's per-look alarm: microseconds per look against seconds per run.)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from platform_testbed.checks import BUILTIN_CHECKS, Look, make_check
from platform_testbed.checks.protocol import Check, Step
from platform_testbed.sim.config import scenario as scenarios
from platform_testbed.sim.publish.gcpause import gc_paused
from platform_testbed.sim.publish.world import run_checks

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import bare_world


class Timed:
    """A check that adds up the wall time of its ``next`` calls; everything else is the check's."""

    def __init__(self, check: Check) -> None:
        self.check = check
        self.name = check.name
        self.spent = 0.0

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.check, attribute)  # rolls_back and the check's options

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """The check's step, timed."""
        began = time.perf_counter()
        try:
            return self.check.next(publish_started_ms, looks)
        finally:
            self.spent += time.perf_counter() - began


def seconds(machines: int, rounds: int) -> tuple[float, dict[str, float]]:
    """The best round's wall time of every built-in check on ``machines`` machines, and its
    time inside each check's ``next``."""
    world = scenarios.load("sept25-crash-loop", [f"release.machines={machines}"])
    best: tuple[float, dict[str, float]] = (float("inf"), {})
    for seed in range(rounds):
        checks = [Timed(make_check(name, world.check.model_dump())) for name in BUILTIN_CHECKS]
        began = time.perf_counter()
        run_checks(world, seed, checks)
        took = time.perf_counter() - began
        if took < best[0]:
            best = (took, {c.name: c.spent for c in checks})
    return best


def bare_seconds(machines: int, rounds: int) -> float:
    """The bare SimPy twin of the same world (benchmarks/bench_core.py), crash-looping and
    polled for one minute after the publish (the built-in checks decide within it), best
    round, with the cyclic collector paused as the full model pauses it. Only its growth
    from 1,000 to 10,000 machines is used, so its span need not equal the full runs'."""
    world = scenarios.load("sept25-crash-loop", [f"release.machines={machines}", "horizon_s=90"])
    best = float("inf")
    for seed in range(rounds):
        with gc_paused():
            began = time.perf_counter()
            bare_world(world, seed)
            best = min(best, time.perf_counter() - began)
    return best


def main() -> None:
    """Print the two times, their ratio, and the split between world and checks."""
    small, small_checks = seconds(1_000, 3)
    large, large_checks = seconds(10_000, 2)
    bare_small, bare_large = bare_seconds(1_000, 5), bare_seconds(10_000, 3)
    in_small, in_large = sum(small_checks.values()), sum(large_checks.values())
    print("sept25-crash-loop, every built-in check in one world (best round):")
    print(f"  1,000 machines   {small:8.2f} s")
    print(f"  10,000 machines  {large:8.2f} s")
    print(f"  ratio            {large / small:8.2f}x   (goal <= 10x: linear in machines)")
    # The yardstick: SimPy itself is not linear in processes on one core (a 10,000-entry
    # event heap and 10,000 generator frames leave the caches: per machine, a bare crash
    # loop costs about twice as much at 10,000 as at 1,000). The model can only be asked
    # not to add growth of its own on top of the engine's.
    print(f"  bare SimPy twin  {bare_small:8.2f} s -> {bare_large:6.2f} s: ratio "
          f"{bare_large / bare_small:.2f}x (the engine's own growth)")
    print(f"  model's growth over the engine's  {(large / small) / (bare_large / bare_small):.2f}x"
          "   (<= 1 adds nothing superlinear)")
    print("where the time goes (1,000 -> 10,000 machines):")
    rows = [("the world (all but the checks)", small - in_small, large - in_large),
            ("inside the checks' next", in_small, in_large)]
    rows += [(f"  {name}", small_checks[name], large_checks[name]) for name in BUILTIN_CHECKS]
    for label, before, after in rows:
        ratio = f"{after / before:6.2f}x" if before > 0 else "      -"
        print(f"  {label:32s} {before:7.2f} s -> {after:7.2f} s  {ratio}")


if __name__ == "__main__":
    main()
