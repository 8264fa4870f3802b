"""How a world's cost grows with its machines: all six built-in checks, 1,000 vs 10,000.

Run: ``.venv/bin/python benchmarks/bench_scale.py`` (``make bench`` runs it too). The
incident world (a crash loop) with ``release.machines`` set to N, every built-in check
in the same world (``run_checks``), best of a few rounds. Linear work would cost 10x for
10x the machines; the goal (issue 12) is at most 10x. Prints the ratio measured in this
run, never an absolute time to compare against.
"""

from __future__ import annotations

import time

from checks import BUILTIN_CHECKS, make_check
from sim import scenario as scenarios
from sim.publish.world import run_checks


def seconds(machines: int, rounds: int) -> float:
    """Best wall time of ``run_checks`` with every built-in check on ``machines`` machines."""
    world = scenarios.load("sept25-crash-loop", [f"release.machines={machines}"])
    checks = [make_check(name, world.check.model_dump()) for name in BUILTIN_CHECKS]
    best = float("inf")
    for seed in range(rounds):
        began = time.perf_counter()
        run_checks(world, seed, checks)
        best = min(best, time.perf_counter() - began)
    return best


def main() -> None:
    """Print the two times and their ratio."""
    small = seconds(1_000, 3)
    large = seconds(10_000, 2)
    print("sept25-crash-loop, every built-in check in one world (best round):")
    print(f"  1,000 machines   {small:8.2f} s")
    print(f"  10,000 machines  {large:8.2f} s")
    print(f"  ratio            {large / small:8.2f}x   (goal <= 10x: linear in machines)")


if __name__ == "__main__":
    main()
