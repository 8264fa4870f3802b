"""A million worlds: the shipped sweep ``million_worlds`` on the command line, timed whole.

Prints the wall time, the rate (worlds per second), the peak memory of the whole process
tree (the command, its forkserver and its workers: their resident sets summed, sampled
every 0.5 s from /proc) and the load average before and after, so a figure read on a
busy machine says so. ``--sweep NAME`` times another sweep the same way (a quick check:
``--sweep crash_period_vs_look_delay``); ``--workers N`` as the command takes it.

    python benchmarks/bench_million.py [--sweep million_worlds] [--workers 2] [--count-only]

First it counts, in its own process over about 2,000 units spread evenly over the sweep,
the worlds a (point, seed) costs: simulated from t = 0 (goal at most 1.05), copied at a
divergence (``sim.publish.forking``), and oracles.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from platform_testbed.sim.publish import sharing
from platform_testbed.sim.sweep import load_sweep
from platform_testbed.sim.sweep.file import Sweep
from platform_testbed.sim.sweep.units import unit_rows

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_S = 0.5


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc (pid -> child pids)."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB; PSS shares each shared page among its users
    (the workers share the forkserver's imported pages), so PSS sums to the tree's use."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def cpu_s(pid: int) -> float:
    """The user + system CPU seconds ``pid`` itself has used (not its children's)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_memory_kib(root: int) -> tuple[int, int]:
    """RSS and PSS of ``root`` and all its descendants, each summed (KiB)."""
    tree = _children()
    rss = pss = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        one = _memory_kib(pid)
        rss, pss = rss + one[0], pss + one[1]
        todo.extend(tree.get(pid, ()))
    return rss, pss


def worlds_per_unit(sweep_name: str, count: int = 2000) -> dict[str, float]:
    """What one (point, seed) costs in worlds, counted in this process on about ``count``
    units spread evenly over the sweep (a stride that is no multiple of an axis' length):
    worlds simulated from t = 0 (the shared world, plus any oracle from t = 0), copies of
    a world, oracles from a copy."""
    sweep = load_sweep(ROOT / "scenarios" / "sweeps" / f"{sweep_name}.toml")
    stride = max(1, sweep.units // count) | 1
    units = list(range(stride // 2, sweep.units, stride))
    return count_worlds(sweep, units) | {"units": len(units)}


def count_worlds(sweep: Sweep, units: Sequence[int]) -> dict[str, float]:
    """Per unit of ``units``: worlds built from t = 0, oracles from t = 0, copies, oracles
    from a copy (``run_checks``' own calls, counted while the units run here)."""
    counts = dict.fromkeys(("build", "ground_truth", "fork", "rest_crashes"), 0)
    originals = {name: getattr(sharing, name) for name in counts}

    def counting(name: str) -> Any:
        def call(*args: Any) -> Any:
            counts[name] += 1
            return originals[name](*args)
        return call

    try:
        for name in counts:
            setattr(sharing, name, counting(name))
        unit_rows(units, sweep)
    finally:
        for name, original in originals.items():
            setattr(sharing, name, original)
    return {name: n / len(units) for name, n in counts.items()}


def main() -> None:
    """Run the sweep once; print wall, rate, peak tree memory and the load average."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", default="million_worlds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--count-only", action="store_true",
                        help="print the worlds per (point, seed) and stop (no sweep run)")
    args = parser.parse_args()
    counted = worlds_per_unit(args.sweep)
    print(f"sweep {args.sweep}: worlds simulated per (point, seed) "
          f"{counted['build'] + counted['ground_truth']:.3f} from t = 0 (goal <= 1.05; "
          f"{counted['ground_truth']:.3f} of them oracles), {counted['fork']:.3f} copies of a "
          f"world, {counted['rest_crashes']:.3f} oracles from a copy "
          f"({counted['units']:,.0f} units counted in this process)")
    if args.count_only:
        return
    testbed = Path(sys.executable).with_name("testbed")
    before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "rows.csv"
        command = [str(testbed), "sweep", args.sweep, "--workers", str(args.workers),
                   "--out", str(out), "--force", "--no-progress", "--json"]
        began = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, cwd=ROOT)
        peak = [0, 0]
        parent_cpu = [0.0]  # the command's own CPU (its workers' is not in it)
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(SAMPLE_S):
                rss, pss = tree_memory_kib(child.pid)
                peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)
                parent_cpu[0] = max(parent_cpu[0], cpu_s(child.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        output, _ = child.communicate()
        wall = time.perf_counter() - began
        stop.set()
        sampler.join()
        rows = sum(1 for _ in out.open(encoding="utf-8")) - 1 if out.exists() else 0
    if child.returncode != 0:
        sys.exit(f"testbed sweep exited {child.returncode}")
    worlds = json.loads(output)["units_done"]
    after = os.getloadavg()
    print(f"sweep {args.sweep} on {args.workers} workers: {worlds:,} worlds, {rows:,} rows "
          f"in {wall:.1f} s wall")
    print(f"  rate         {worlds / wall:,.0f} worlds/s  (goal: 1,000,000 in <= 60 s on 2 free cores)")
    print(f"  peak memory  {peak[1] / 1024:.1f} MiB PSS, {peak[0] / 1024:.1f} MiB RSS summed, "
          f"for the process tree, sampled every {SAMPLE_S} s  (goal < 300 MB)")
    print(f"  parent CPU   {parent_cpu[0]:.1f} s (the command's own, last sampled; the "
          "workers' is not in it)")
    print(f"  load average {before[0]:.2f} before, {after[0]:.2f} after")
    print(f"  summary      {output.decode().strip()[:160]}...")


if __name__ == "__main__":
    main()
