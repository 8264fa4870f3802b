"""How a world's cost grows with its machines: all six built-in checks, 1,000 vs 10,000.

Run: ``.venv/bin/python benchmarks/bench_scale.py`` (``make bench`` runs it too). The
incident world (a crash loop) with ``release.machines`` set to N, every built-in check
in the same world (``run_checks``). Linear work would cost 10x for 10x the machines; the
goal (issue 12) is at most 10x. Prints the ratios measured in this run, never an absolute
time to compare against.

The yardstick: the bare SimPy twin of bench_core.py run at both sizes. SimPy itself grows
faster than its process count on one core (cache misses on a large event heap and many
generator frames), so the line to read beside the goal is the model's growth over the
engine's: at most 1 means the model adds nothing superlinear of its own. Model and twin
run interleaved, round by round (model 1k, twin 1k, model 10k, twin 10k, the order turned
every round), each round's growth ratios taken from its own four runs, and the median over
the rounds printed with the range; the collector is paused in both (``gc_paused``), and
each job's garbage is collected after it, untimed, so no job pays for another's.

The total is split in two, so the ratio says where growth comes from: the time spent
inside the checks' ``next`` (timed around each call) and the rest, which is the
simulated world (machines, snapshots, the driver) and does not depend on how a check
decides. (Timing the calls adds two clock reads and, for a wrapper outside ``checks``,
the driver's per-look alarm: microseconds per look against seconds per run.)
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from platform_testbed.checks import BUILTIN_CHECKS, Look, make_check
from platform_testbed.checks.protocol import Check, Step
from platform_testbed.sim.config import scenario as scenarios
from platform_testbed.sim.publish.gcpause import gc_paused
from platform_testbed.sim.publish.sharing import run_checks
from platform_testbed.sim.publish.world import run

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import bare_world, load_average


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


def model_once(machines: int, seed: int) -> tuple[float, dict[str, float]]:
    """Wall time of every built-in check in one world of ``machines`` machines, and the
    time inside each check's ``next``."""
    world = scenarios.load("sept25-crash-loop", [f"release.machines={machines}"])
    checks = [Timed(make_check(name, world.check.model_dump())) for name in BUILTIN_CHECKS]
    began = time.perf_counter()
    run_checks(world, seed, checks)
    return time.perf_counter() - began, {c.name: c.spent for c in checks}


def twin_once(machines: int, seed: int) -> float:
    """The bare SimPy twin of the same world (benchmarks/bench_core.py), crash-looping and
    polled for one minute after the publish (the built-in checks decide within it), with
    the cyclic collector paused as the full model pauses it. Only its growth from 1,000 to
    10,000 machines is used, so its span need not equal the full runs'."""
    world = scenarios.load("sept25-crash-loop", [f"release.machines={machines}", "horizon_s=90"])
    with gc_paused():
        began = time.perf_counter()
        bare_world(world, seed)
        return time.perf_counter() - began


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f}x, range {min(values):.2f}-{max(values):.2f}x"


def main(rounds: int = 3) -> None:
    """Print the growth ratios (median of interleaved rounds) and the split between world
    and checks."""
    print(f"sept25-crash-loop, every built-in check in one world, {rounds} interleaved rounds; "
          f"{load_average()} at start")
    growth, engine, over = [], [], []
    small_split: dict[str, float] = {}
    large_split: dict[str, float] = {}
    small_all, large_all = [], []
    for r in range(rounds):
        took: dict[str, float] = {}
        jobs = ["model 1k", "twin 1k", "model 10k", "twin 10k"]
        for job in jobs[r % 4:] + jobs[:r % 4]:
            machines = 1_000 if job.endswith(" 1k") else 10_000
            if job.startswith("model"):
                took[job], split = model_once(machines, r)
                (small_split if machines == 1_000 else large_split).update(
                    {k: v + (small_split if machines == 1_000 else large_split).get(k, 0.0)
                     for k, v in split.items()})
            else:
                took[job] = twin_once(machines, r)
            # The job's world leaves its reference cycles to the collector's next young
            # pass, which would run inside the next job's timing: collected here, untimed.
            gc.collect(0)
        small_all.append(took["model 1k"])
        large_all.append(took["model 10k"])
        growth.append(took["model 10k"] / took["model 1k"])
        engine.append(took["twin 10k"] / took["twin 1k"])
        over.append(growth[-1] / engine[-1])
    small, large = statistics.median(small_all), statistics.median(large_all)
    print(f"  1,000 machines   {small:8.2f} s (median)")
    print(f"  10,000 machines  {large:8.2f} s (median)")
    print(f"  growth           {_spread(growth)}   (goal <= 10x: linear in machines)")
    # The yardstick: SimPy itself is not linear in processes on one core (a 10,000-entry
    # event heap and 10,000 generator frames leave the caches: per machine, a bare crash
    # loop costs about twice as much at 10,000 as at 1,000). The model can only be asked
    # not to add growth of its own on top of the engine's.
    print(f"  bare SimPy twin  {_spread(engine)} (the engine's own growth, same rounds)")
    print(f"  model's growth over the engine's  {_spread(over)}   (<= 1 adds nothing "
          "superlinear)")
    print("where the time goes (1,000 -> 10,000 machines, summed over the rounds):")
    in_small, in_large = sum(small_split.values()), sum(large_split.values())
    rows = [("the world (all but the checks)", sum(small_all) - in_small,
             sum(large_all) - in_large), ("inside the checks' next", in_small, in_large)]
    rows += [(f"  {name}", small_split[name], large_split[name]) for name in BUILTIN_CHECKS]
    for label, before, after in rows:
        ratio = f"{after / before:6.2f}x" if before > 0 else "      -"
        print(f"  {label:32s} {before:7.2f} s -> {after:7.2f} s  {ratio}")
    print(f"  {load_average()} at end")


def one_world(which: str) -> None:
    """Run one 1,000-machine world of ``bench_core.py large`` (``model``, ``twin``) or none
    (``none``: imports only), for an instruction count under valgrind (benchmarks/README.md)."""
    from bench_core import KeepLooking, large_world  # noqa: PLC0415

    sc = large_world()
    if which == "model":
        run(sc, 1, KeepLooking(sc.check.look_delay_s))
    elif which == "twin":
        with gc_paused():
            bare_world(sc, 1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["one"]:
        one_world(sys.argv[2])
    else:
        main()
