"""``--workers`` and ``--dask`` for ``compare`` and ``checks``: the sweep's pool for seeds.

A light module (the parser imports it); the pool itself (``sim.sweep.seeds``) loads only
when a command runs on one.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from platform_testbed.sim.config import options
from platform_testbed.sim.config.settings import BadInput

if TYPE_CHECKING:
    from platform_testbed.sim.checkload.budget import CheckBudget
    from platform_testbed.sim.cli.checkopts import Adder
    from platform_testbed.sim.config.scenario import Scenario
    from platform_testbed.sim.publish.compare import Runner

#: The registry's limit on local worker processes (sim.config.options, with why).
MAX_WORKERS = options.limit("max_workers", {})
WORKERS_ENV = str(options.option("max_workers").env_name)
#: Without --workers, fewer seeds than this run here: a pool's start (a few hundred ms,
#: more on a loaded machine) would cost more than a second core saves.
POOLED_RUNS = 1000


def add_pool_options(parser: Adder, command: str) -> None:
    """``--workers N`` and ``--dask ADDRESS`` (as ``testbed sweep`` has them)."""
    options.add(parser, "workers", command)
    parser.add_argument("--dask", metavar="SCHEDULER_ADDRESS",
                        help="run on a Dask distributed cluster (needs the 'dask' extra)")


def check_workers(args: argparse.Namespace) -> None:
    """Refuse a --workers out of range, or --workers with --dask, before any work."""
    if args.workers is not None:
        options.from_args("workers", args)  # 1 to the limit (TESTBED_MAX_WORKERS raises it)
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
