"""``compare --runs N`` on 1 worker and on 2: the speed-up, and what the parent itself costs.

Runs ``testbed compare SCENARIO --runs N --summary --json`` in this process (the command's
own ``main``), on ``--workers 1`` and ``--workers 2`` alternately (A B B A A B ...: the
order turned every round, so a load that drifts burdens both alike), and prints the best
and the median of each, their ratio, and the CPU seconds this process (the parent: its
main thread and the pool's threads, ``getrusage(RUSAGE_SELF)``) used in each 2-worker run,
also as a share of the whole work (the 1-worker run's CPU): that includes the seeds it runs
itself (the calibration, and short tasks while the workers start), so it is an upper bound
of what the pool costs it. The parent's CPU does not move with other users' load as wall
time does: it is the figure to judge the parent by on a shared machine. The outputs of
every run must be the same bytes, or the bench stops.

The control is ``bench_core.burn_speedup``: what 2 processes get over 1 right now for a
pure-Python loop, before and after, the most the pool could give on this machine today.
A pooled run here starts its workers (as the command does) from a forkserver that is
already up: one untimed pooled run first pays for the server's imports.

    python benchmarks/bench_compare.py [--runs 8000] [--rounds 3] [--scenario sept25-crash-loop]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import statistics
import sys
import time
from dataclasses import dataclass

from bench_core import burn_speedup, load_average

from platform_testbed.sim.cli.parser import main as testbed


@dataclass(frozen=True, slots=True)
class Timed:
    """One command run: its stdout, wall seconds, and this process's CPU seconds."""

    out: str
    wall_s: float
    cpu_s: float


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(scenario: str, runs: int, workers: int) -> Timed:
    """``testbed compare SCENARIO --runs N --summary --json --workers W``, in this process."""
    out = io.StringIO()
    cpu, began = _cpu_s(), time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = testbed(["compare", scenario, "--runs", str(runs), "--summary", "--json",
                        "--workers", str(workers)])
    wall, cpu = time.perf_counter() - began, _cpu_s() - cpu
    if code not in (0, 1):  # 1: an expectation did not hold, still a comparison
        raise SystemExit(f"compare exited {code}")
    return Timed(out.getvalue(), wall, cpu)


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8000, help="seeds per run (default 8000)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each (default 3)")
    parser.add_argument("--scenario", default="sept25-crash-loop")
    args = parser.parse_args()
    print(f"compare {args.scenario} --runs {args.runs:,} --summary --json, "
          f"{args.rounds} alternating rounds; {load_average()}")
    run(args.scenario, 20, 1)  # warm: imports, caches
    run(args.scenario, 50, 2)  # and the forkserver, whose imports no command run pays twice
    before = burn_speedup()
    ones: list[Timed] = []
    twos: list[Timed] = []
    for r in range(args.rounds):
        pair = [(ones, 1), (twos, 2)]
        for kept, workers in pair if r % 2 == 0 else reversed(pair):
            kept.append(run(args.scenario, args.runs, workers))
    after = burn_speedup()
    if len({t.out for t in ones + twos}) != 1:
        raise SystemExit("the outputs differ between runs: the pool changed the comparison")
    one = min(t.wall_s for t in ones)
    two = min(t.wall_s for t in twos)
    work = statistics.median(t.cpu_s for t in ones)
    parent = [t.cpu_s for t in twos]
    print(f"  1 worker     best {one:7.2f} s  median {statistics.median(t.wall_s for t in ones):7.2f} s"
          f"  ({args.runs / one:,.0f} seeds/s; {work:.2f} CPU-s of work)")
    print(f"  2 workers    best {two:7.2f} s  median {statistics.median(t.wall_s for t in twos):7.2f} s"
          f"  (pool start-up included)")
    print(f"  speed-up     {one / two:7.2f}x best/best, "
          f"{statistics.median(t.wall_s for t in ones) / statistics.median(t.wall_s for t in twos):.2f}x"
          " median/median   (goal >= 1.7x at 100,000 runs)")
    print(f"  parent CPU   {min(parent):.2f}-{max(parent):.2f} s in each 2-worker run "
          f"({100 * statistics.median(parent) / work:.1f} % of the work; "
          f"{1e6 * statistics.median(parent) / args.runs:.0f} us a seed)")
    print(f"  control: a pure-Python loop gets {before:.2f}x before and {after:.2f}x after on "
          f"2 processes (other users' load); {load_average()}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
