"""Virtual time against the wall clock: the example deploy steps' verdicts, and what a run costs.

For each script of ``examples/deploy/`` (``LOOK_DELAY_S`` at its default, 10 s), the
verdict of every seed at ``--time scaled --speed 1`` (the wall clock: the reference) beside
its verdict on virtual time with the machine as it is and with ``--busy`` busy loops
beside it (the load average each saw is printed), and at ``--speed 50`` on the scaled
clock (what a user had before virtual time). A verdict is the row's outcome (caught,
missed, passed, false_alarm, or an error); a cell counts the seeds whose outcome is the
reference's. The speed-1 runs of a script go ``--together`` at a time (they sleep most of
their 20-odd wall seconds; but on the wall clock a verdict moves with the machine's load,
which is the point: 20 at once on 2 cores at load 10 turned count's 20 "missed" into 19
"caught"); the virtual runs go one at a time, and their wall seconds (median and most)
are printed.

    python benchmarks/bench_vtime.py [--seeds 20] [--busy 4] [--together 2] [--scripts count.sh,...]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from platform_testbed.sim.config.scenario import Scenario, load
from platform_testbed.sim.twin.step import ProcessStep

DEPLOY = Path(__file__).resolve().parent.parent / "examples" / "deploy"
SCRIPTS = (("check-http", "check-count.sh"), ("check-http", "check-timestamp.sh"),
           ("deploy-cmd", "count.sh"), ("deploy-cmd", "timestamp.sh"))


def _burn() -> None:
    while True:
        pass


def outcome(step: ProcessStep, scenario: Scenario, seed: int) -> str:
    """The row's outcome for one seed, or ``error`` (the reason kept short)."""
    result = step(scenario, seed)
    return "error" if result.error is not None else result.outcome


def reference(mode: str, script: str, scenario: Scenario, seeds: Sequence[int],
              together: int) -> tuple[dict[int, str], str]:
    """Each seed's outcome on the wall clock (speed 1), ``together`` seeds at a time; the load seen."""
    found: dict[int, str] = {}
    todo = list(seeds)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                seed = todo.pop(0)
            step = ProcessStep(mode, (str(DEPLOY / script),), script, 120.0, 1.0, "scaled")  # type: ignore[arg-type]
            found[seed] = outcome(step, scenario, seed)

    threads = [threading.Thread(target=worker) for _ in range(together)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return found, f"{os.getloadavg()[0]:.1f}"


def series(mode: str, script: str, scenario: Scenario, seeds: Sequence[int], *, clock: str,
           speed: float) -> tuple[dict[int, str], list[float], str]:
    """Each seed's outcome one run at a time, the wall seconds of each, and the load seen."""
    step = ProcessStep(mode, (str(DEPLOY / script),), script, 120.0, speed, clock)  # type: ignore[arg-type]
    found, walls = {}, []
    for seed in seeds:
        start = time.monotonic()
        found[seed] = outcome(step, scenario, seed)
        walls.append(time.monotonic() - start)
    return found, walls, f"{os.getloadavg()[0]:.1f}"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the agreement table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--busy", type=int, default=4, help="busy loops beside the second virtual pass")
    parser.add_argument("--scenario", default="sept25-crash-loop")
    parser.add_argument("--together", type=int, default=2, help="speed-1 runs at a time")
    parser.add_argument("--scripts", default=",".join(s for _m, s in SCRIPTS))
    args = parser.parse_args(argv)
    os.environ.pop("LOOK_DELAY_S", None)
    scenario = load(args.scenario)
    seeds = range(1, args.seeds + 1)
    print(f"{args.scenario}, seeds 1-{args.seeds}, LOOK_DELAY_S default; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} at start", flush=True)
    print(f"{'script':<20} {'speed 1 (reference)':<28} {'virtual':<16} {'virtual +busy':<16} "
          f"{'scaled x50':<12} virtual wall s (median, most)")
    wanted = args.scripts.split(",")
    for mode, script in SCRIPTS:
        if script not in wanted:
            continue
        ref, ref_load = reference(mode, script, scenario, seeds, args.together)
        calm, walls, calm_load = series(mode, script, scenario, seeds, clock="virtual", speed=1.0)
        burners = [multiprocessing.Process(target=_burn, daemon=True) for _ in range(args.busy)]
        for burner in burners:
            burner.start()
        try:
            busy, busy_walls, busy_load = series(mode, script, scenario, seeds, clock="virtual", speed=1.0)
        finally:
            for burner in burners:
                burner.kill()
                burner.join()
        fast, _, _ = series(mode, script, scenario, seeds, clock="scaled", speed=50.0)
        tally = ", ".join(f"{o} {sum(1 for v in ref.values() if v == o)}"
                          for o in sorted(set(ref.values()))) + f" @{ref_load}"

        def agree(got: dict[int, str], ref: dict[int, str] = ref) -> str:
            return f"{sum(1 for s in seeds if got[s] == ref[s])}/{len(seeds)}"

        walls_all = walls + busy_walls
        print(f"{script:<20} {tally:<28} {agree(calm) + ' @' + calm_load:<16} "
              f"{agree(busy) + ' @' + busy_load:<16} {agree(fast):<12} "
              f"{statistics.median(walls_all):.2f}, {max(walls_all):.2f}", flush=True)
        differ = [s for s in seeds if calm[s] != ref[s] or busy[s] != ref[s]]
        if differ:
            print("  differ: " + "; ".join(f"seed {s}: {ref[s]} / {calm[s]} / {busy[s]}" for s in differ))
    return 0


if __name__ == "__main__":
    sys.exit(main())
