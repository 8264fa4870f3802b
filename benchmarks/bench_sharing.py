import os, statistics, time
from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.sim.checkload.loader import build_checks
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish import world as W

def measure(name, names, pairs=30, block=8):
    sc = scenario.load(name)
    checks = [b.check for b in build_checks(names, sc.check, {})]
    W.run_checks(sc, 1, checks)
    kinds = {"alone": False, "shared": True, "auto": None}
    ratios = {k: [] for k in ("shared", "auto")}; seed = 100
    for i in range(pairs):
        seeds = range(seed, seed + block); seed += block
        t = {}
        order = list(kinds) if i % 2 == 0 else list(kinds)[::-1]
        for kind in order:
            s = time.process_time()
            for x in seeds: W.run_checks(sc, x, checks, share=kinds[kind])
            t[kind] = time.process_time() - s
        for k in ratios: ratios[k].append(t[k] / t["alone"])
    for k, r in ratios.items():
        q = statistics.quantiles(r, n=4)
        print(f"{name} {len(checks)} checks: {k}/alone median {statistics.median(r):.2f}x "
              f"(IQR {q[0]:.2f}-{q[2]:.2f}, {pairs} pairs of {block} seeds, process time); load {os.getloadavg()[0]:.2f}")

measure("sept25-crash-loop", list(BUILTIN_CHECKS))
measure("sept25-crash-loop", ["count", "timestamp"])
