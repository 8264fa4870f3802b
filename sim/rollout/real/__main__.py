"""``python -m platform_testbed.sim.rollout.real``: real HAProxy deploys beside the model, as a table."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from platform_testbed.sim.rollout.real.figures import haproxy_version, table, table_of
from platform_testbed.sim.rollout.real.haproxy import HaproxyMissing
from platform_testbed.sim.rollout.real.harness import kill_all, run_all
from platform_testbed.sim.rollout.real.variants import DEFAULT_FACTOR, EXTRAS, STANDARD

NAMES = {v.name: v for v in STANDARD}


def main(argv: list[str] | None = None) -> int:
    """Parse, run, print; 2 on bad input or when HAProxy is missing and cannot be installed."""
    parser = argparse.ArgumentParser(
        prog="python -m platform_testbed.sim.rollout.real",
        description="Run rolling deploys on real HAProxy and server processes (127.0.0.1 only) "
        "and beside them the model at the same scaled timings.",
    )
    parser.add_argument("configs", nargs="*", metavar="CONFIG",
                        help="original, intermediate, fixed (default: all three)")
    parser.add_argument("--deploys", type=int, default=10, help="real deploys per configuration")
    parser.add_argument("--model-seeds", type=int, default=100, help="model seeds per configuration")
    parser.add_argument("--factor", type=float, default=DEFAULT_FACTOR,
                        help="divide every time by this (rps multiplied by it)")
    parser.add_argument("--extras", action="store_true",
                        help="also the configurations the write-up does not give")
    parser.add_argument("--first-seed", type=int, default=0, help="seed of the first deploy")
    parser.add_argument("--jobs", type=int, default=3, help="real deploys run at once")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--from-json", metavar="FILE",
                        help="print the table of a saved --json document and exit (runs nothing)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    if not 1 <= args.deploys <= 1000 or not 1 <= args.model_seeds <= 100_000:
        parser.error("--deploys must be 1..1000 and --model-seeds 1..100000")
    if not 0 <= args.first_seed <= 10**9:
        parser.error("--first-seed must be 0..1000000000")
    if not 1 <= args.jobs <= 16:
        parser.error("--jobs must be 1..16")
    if not 1 <= args.factor <= 100:
        parser.error("--factor must be between 1 and 100")
    if args.from_json:
        with open(args.from_json) as handle:
            document = json.loads(handle.read().strip().splitlines()[-1])
        print(table_of(document["configurations"], document.get("haproxy", "?")))
        return 0
    unknown = [c for c in args.configs if c not in NAMES]
    if unknown:
        parser.error(f"unknown configuration {unknown[0]!r}: choose from {', '.join(NAMES)}")
    variants = [NAMES[c] for c in args.configs] if args.configs else list(STANDARD)
    if args.extras:
        variants += list(EXTRAS)

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    def stop(signum: int, frame: object) -> None:
        # Worker threads cannot be interrupted: end every child now, then the process.
        kill_all()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        rows = run_all(variants, factor=args.factor, deploys=args.deploys,
                       model_seeds=args.model_seeds, jobs=args.jobs,
                       first_seed=args.first_seed, progress=progress)
    except HaproxyMissing as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"factor": args.factor, "haproxy": haproxy_version(),
                          "configurations": [r.json() for r in rows]}))
    else:
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
