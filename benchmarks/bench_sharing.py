"""What sharing one world among a seed's checks costs or saves (``run_checks``'s ``share``).

Run: ``.venv/bin/python benchmarks/bench_sharing.py`` (about a minute). For each list of
checks, three ways run interleaved on the same fresh seeds, pair after pair (the order
turned every pair): a world per check (``share=False``), shared worlds (``share=True``)
and ``run_checks``' default (``share=None``: the same as True since issue 33, where a
world is copied at the divergence instead of simulated again). Process time, not wall
time (this process's own CPU: less moved by other users' load); the median of the pairs'
ratios over the world-per-check way, with the quartiles, and the worlds a seed takes
when shared.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence

from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.sim.checkload.loader import build_checks
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish import sharing

WAYS: dict[str, bool | None] = {"alone": False, "shared": True, "chosen": None}


def worlds_a_seed(loaded: scenario.Scenario, checks: Sequence[object], seeds: range) -> float:
    """How many worlds shared runs simulate a seed (``build`` counted)."""
    built = [0]
    build = sharing.build

    def counted(*args: object, **kwargs: object) -> object:
        built[0] += 1
        return build(*args, **kwargs)  # type: ignore[arg-type]

    sharing.build = counted  # type: ignore[assignment]
    try:
        for seed in seeds:
            sharing.run_checks(loaded, seed, checks, share=True)  # type: ignore[arg-type]
    finally:
        sharing.build = build
    return built[0] / len(seeds)


def measure(name: str, names: list[str], pairs: int = 30, block: int = 8) -> None:
    """Print each way's median ratio over a world per check."""
    loaded = scenario.load(name)
    checks = [b.check for b in build_checks(names, loaded.check, {})]
    sharing.run_checks(loaded, 1, checks)  # warm: imports, caches
    ratios: dict[str, list[float]] = {"shared": [], "chosen": []}
    for p in range(pairs):
        seeds = range(100 + p * block, 100 + (p + 1) * block)
        took = {}
        for way in list(WAYS) if p % 2 == 0 else list(WAYS)[::-1]:
            began = time.process_time()
            for seed in seeds:
                sharing.run_checks(loaded, seed, checks, share=WAYS[way])
            took[way] = time.process_time() - began
        for way, kept in ratios.items():
            kept.append(took[way] / took["alone"])
    shared = worlds_a_seed(loaded, checks, range(100, 150))
    print(f"{name}, {len(checks)} checks ({shared:.2f} worlds a seed when shared), "
          f"{pairs} pairs of {block} seeds:")
    for way, kept in ratios.items():
        low, _, high = statistics.quantiles(kept, n=4)
        print(f"  {way:7s} {statistics.median(kept):.2f}x a world per check "
              f"(quartiles {low:.2f}-{high:.2f}x)")


def main() -> None:
    """The 6 built-ins of compare, and the 2 checks of the shipped sweeps."""
    print("load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + " at start")
    measure("sept25-crash-loop", list(BUILTIN_CHECKS))
    measure("sept25-crash-loop", ["count", "timestamp"])


if __name__ == "__main__":
    main()
