"""``compare --runs N`` and ``checks --runs N`` on the sweep's pool: seeds as units.

Each task rebuilds the checks from their names in its worker (built-ins come from the
per-process cache of ``sim.checkload.loader``) and runs its seeds' worlds. What comes
back is what ``compare`` asks for (its ``Want``): every seed's results, or, for a summary
alone, the task's ``SeedTally`` (outcome codes and the float fields the stats sum, made
in the worker, so the calling process's cost per seed is a few C loops, not an unpickled
``RunResult`` per check and a Python fold of each). Either way ``compare`` folds them in
seed order, so the comparison is the same whatever the number of workers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.checkload.loader import build_checks
from platform_testbed.sim.config.scenario import Scenario
from platform_testbed.sim.publish.compare import Batch, Runner, SeedTally, Want
from platform_testbed.sim.publish.sharing import run_checks
from platform_testbed.sim.publish.world import RunResult
from platform_testbed.sim.runtime.signals import reraise_pending
from platform_testbed.sim.sweep.run import TASK_TARGET_S, run_tasks
from platform_testbed.sim.sweep.units import Progress

SeedResults = tuple[int, tuple[RunResult, ...]]

#: Seconds of work a summary's task carries: its tally is a few hundred bytes whatever its
#: length, so only the pool's cost per task is left to spread, and it is not small (about
#: 0.8 ms of the parent's CPU a task on 2 loaded cores: 28 us a seed in tasks of 0.1 s,
#: 7 us in tasks of 0.5 s, about 0.3 % of a seed's worlds).
SUMMARY_TASK_S = 0.5


@dataclass(frozen=True, slots=True)
class SeedWork:
    """Unit ``i``: every check in the world of ``seeds[i]`` (a ``range`` pickles small)."""

    scenario: Scenario
    names: tuple[str, ...]
    extra: Mapping[str, Any]
    seeds: Sequence[int]
    #: What a task gives back (``sim.publish.compare.Want``).
    want: Want
    budget: CheckBudget = DEFAULT_CHECK_BUDGET

    @property
    def units(self) -> int:
        """One unit per seed."""
        return len(self.seeds)

    def __call__(self, lo: int, hi: int) -> tuple[int, Batch]:
        """Seeds ``lo`` to ``hi`` (by index): each seed with its checks' results, or their tally."""
        checks = [b.check for b in build_checks(self.names, self.scenario.check, self.extra)]
        seeds = self.seeds[lo:hi]
        runs = (run_checks(self.scenario, seed, checks, self.budget) for seed in seeds)
        if self.want == "tally":
            return lo, SeedTally.of(seeds, runs)
        out: list[SeedResults] = []
        for seed, results in zip(seeds, runs, strict=True):
            bare = results if self.want == "looks" else [
                dataclasses.replace(r, looks=()) for r in results]
            out.append((seed, tuple(bare)))
        return lo, out


def pooled(
    scenario: Scenario, names: Sequence[str], extra: Mapping[str, Any],
    workers: int | None, dask: str | None, *, progress: Progress | None = None,
    per_task: int | None = None, budget: CheckBudget = DEFAULT_CHECK_BUDGET,
) -> Runner:
    """A ``compare`` runner that runs the seeds on ``workers`` processes or on Dask
    (``per_task`` seeds a task; default: measured, as a sweep's)."""

    def runner(seeds: Sequence[int], want: Want, fold: Callable[[Batch], None]) -> None:
        work = SeedWork(scenario, tuple(names), dict(extra), seeds, want, budget)
        ran = run_tasks(work, workers, dask, progress, per_task, sink=fold,
                        task_s=SUMMARY_TASK_S if want == "tally" else TASK_TARGET_S)
        if ran.interrupted:  # the pool is down; the command ends as the signal asks
            reraise_pending()
            raise KeyboardInterrupt

    return runner
