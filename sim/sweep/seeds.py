"""``compare --runs N`` and ``checks --runs N`` on the sweep's pool: seeds as units.

Each task rebuilds the checks from their names in its worker (built-ins come from the
per-process cache of ``sim.checkload.loader``) and runs its seeds' worlds; the results
come back in seed order and are folded in the calling process by ``compare`` itself, so
the comparison is the same whatever the number of workers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.checkload.loader import build_checks
from platform_testbed.sim.config.scenario import Scenario
from platform_testbed.sim.publish.compare import Runner
from platform_testbed.sim.publish.sharing import run_checks
from platform_testbed.sim.publish.world import RunResult
from platform_testbed.sim.runtime.signals import reraise_pending
from platform_testbed.sim.sweep.run import run_tasks
from platform_testbed.sim.sweep.units import Progress

SeedResults = tuple[int, tuple[RunResult, ...]]


@dataclass(frozen=True, slots=True)
class SeedWork:
    """Unit ``i``: every check in the world of ``seeds[i]`` (a ``range`` pickles small)."""

    scenario: Scenario
    names: tuple[str, ...]
    extra: Mapping[str, Any]
    seeds: Sequence[int]
    #: False: the results travel without their looks (only the summary needs them back).
    looks: bool
    budget: CheckBudget = DEFAULT_CHECK_BUDGET

    @property
    def units(self) -> int:
        """One unit per seed."""
        return len(self.seeds)

    def __call__(self, lo: int, hi: int) -> tuple[int, list[SeedResults]]:
        """Seeds ``lo`` to ``hi`` (by index): each seed with its checks' results."""
        checks = [b.check for b in build_checks(self.names, self.scenario.check, self.extra)]
        out: list[SeedResults] = []
        for seed in self.seeds[lo:hi]:
            results = run_checks(self.scenario, seed, checks, self.budget)
            if not self.looks:
                results = [dataclasses.replace(r, looks=()) for r in results]
            out.append((seed, tuple(results)))
        return lo, out


def pooled(
    scenario: Scenario, names: Sequence[str], extra: Mapping[str, Any],
    workers: int | None, dask: str | None, *, progress: Progress | None = None,
    per_task: int | None = None, budget: CheckBudget = DEFAULT_CHECK_BUDGET,
) -> Runner:
    """A ``compare`` runner that runs the seeds on ``workers`` processes or on Dask
    (``per_task`` seeds a task; default: measured, as a sweep's)."""

    def runner(seeds: Sequence[int], take: Callable[[int, Sequence[RunResult]], None],
               looks: bool) -> None:
        work = SeedWork(scenario, tuple(names), dict(extra), seeds, looks, budget)

        def sink(batch: list[SeedResults]) -> None:
            for seed, results in batch:
                take(seed, results)

        ran = run_tasks(work, workers, dask, progress, per_task, sink=sink)
        if ran.interrupted:  # the pool is down; the command ends as the signal asks
            reraise_pending()
            raise KeyboardInterrupt

    return runner
