"""``--workers`` and ``--dask`` for ``compare`` and ``checks``: the sweep's pool for seeds.

A light module (the parser imports it); the pool itself (``sim.sweep.seeds``) loads only
when a command runs on one.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from platform_testbed.sim.config.settings import BadInput, at_most, env_limit

if TYPE_CHECKING:
    from platform_testbed.sim.checkload.budget import CheckBudget
    from platform_testbed.sim.config.scenario import Scenario
    from platform_testbed.sim.publish.compare import Runner

#: The most local worker processes: each holds a simulator (tens of MB), and past a few per
#: core they only contend. Raise it with TESTBED_MAX_WORKERS.
MAX_WORKERS = 256
WORKERS_ENV = "TESTBED_MAX_WORKERS"
#: Without --workers, fewer seeds than this run here: a pool's start (a few hundred ms,
#: more on a loaded machine) would cost more than a second core saves.
POOLED_RUNS = 1000


def add_pool_options(*parsers: argparse.ArgumentParser) -> None:
    """``--workers N`` and ``--dask ADDRESS`` on each parser (as ``testbed sweep`` has them)."""
    for parser in parsers:
        parser.add_argument("--workers", type=int, metavar="N",
                            help=f"local worker processes (default: one per core from "
                            f"{POOLED_RUNS} runs, else 1; 1: no pool); the output is the same")
        parser.add_argument("--dask", metavar="SCHEDULER_ADDRESS",
                            help="run the seeds on a Dask distributed cluster ('dask' extra)")


def check_workers(args: argparse.Namespace) -> None:
    """Refuse a --workers out of range, or --workers with --dask, before any work."""
    if args.workers is not None:
        at_most("--workers", args.workers, env_limit(WORKERS_ENV, MAX_WORKERS), WORKERS_ENV)
    if args.workers is not None and args.dask:
        raise BadInput("--workers and --dask: choose one (Dask decides its own workers)")


def seed_runner(args: argparse.Namespace, scenario: Scenario, names: Sequence[str],
                extra: Mapping[str, Any], budget: CheckBudget, *,
                progress: Callable[[int], None] | None = None) -> Runner | None:
    """The pool ``compare`` runs ``args.runs`` seeds on (the budget goes with every task),
    or None to run them here. ``progress`` hears how many seeds each finished task ran."""
    check_workers(args)
    if args.dask is not None:  # judged and reached before any world runs, as a sweep's
        from platform_testbed.sim.runtime.scheduler import check_scheduler  # noqa: PLC0415

        args.dask = check_scheduler(args.dask)
    workers = args.workers
    if args.dask is None and (workers == 1 or (workers is None and args.runs < POOLED_RUNS)):
        return None
    from platform_testbed.sim.sweep.seeds import pooled  # noqa: PLC0415 -- the model, only now

    return pooled(scenario, names, extra, workers, args.dask, budget=budget, progress=progress)
