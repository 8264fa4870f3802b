"""Units of work: every check in one (point, seed) world, one row per check.

Units are numbered point-major, so rows come out in the same order whoever computed
them: one process, a local pool, or a Dask cluster.

A sweep may also run real processes against each world (``with_steps``: ``testbed sweep
--check-http``/``--deploy-cmd``): a ``ProcessSweep``, whose ``checks`` end with the
processes' row names so that every count of rows per world stays ``len(checks)``.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from platform_testbed.checks import BUILTIN_CHECKS, Check
from platform_testbed.checks.drive import check_name
from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.config.scenario import validate
from platform_testbed.sim.publish.compare import RESULT_COLUMNS, RunStep, result_row
from platform_testbed.sim.publish.sharing import run_checks
from platform_testbed.sim.publish.world import ground_truth
from platform_testbed.sim.sweep.file import Env, Sweep, validation_env

Row = dict[str, Any]
#: Called with the number of units just finished.
Progress = Callable[[int], None]

# Row columns after the axis columns, in file order: RESULT_COLUMNS (re-exported).
__all__ = ["RESULT_COLUMNS", "ProcessSweep", "Progress", "Row", "check_names", "columns",
           "each_unit", "run_units", "unit_rows", "with_steps"]


@dataclasses.dataclass(frozen=True)
class ProcessSweep(Sweep):
    """A sweep with a row per real process in each world: ``checks`` ends with their names.

    The processes (``steps``) need the twin and the wall clock of this machine, so such a
    sweep runs in one process here (``sim.cli.sweep`` refuses a pool and Dask for it).
    """

    steps: tuple[RunStep, ...] = ()

    def thinned(self, every: int) -> Sweep:
        """As ``Sweep.thinned``, the processes kept."""
        base = _plain(self)
        return with_steps(base.thinned(every), self.steps)


def _plain(sweep: Sweep) -> Sweep:
    """The sweep without its processes: ``checks`` only the check specs."""
    steps = getattr(sweep, "steps", ())
    values = {f.name: getattr(sweep, f.name) for f in dataclasses.fields(Sweep)}
    values["checks"] = sweep.checks[:len(sweep.checks) - len(steps)]
    return Sweep(**values)


def with_steps(sweep: Sweep, steps: Sequence[RunStep]) -> Sweep:
    """``sweep`` with a row per process of ``steps`` in every world, after the checks' rows."""
    if not steps:
        return sweep
    base = _plain(sweep)
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(Sweep)}
    values["checks"] = base.checks + tuple(s.name for s in steps)
    return ProcessSweep(**values, steps=tuple(steps))


def _split(sweep: Sweep) -> tuple[list[str], tuple[RunStep, ...]]:
    """The check specs to load, and the processes."""
    steps: tuple[RunStep, ...] = getattr(sweep, "steps", ())
    return list(sweep.checks[:len(sweep.checks) - len(steps)]), steps


def check_names(sweep: Sweep) -> tuple[str, ...]:
    """The names the sweep's checks report under (``file.py:Obj`` reports as its ``name``).

    Built once in the base scenario: a check's name does not depend on the point.
    """
    base = validate(sweep.base, sweep.name)
    specs, steps = _split(sweep)
    # check_name, as the rows do: a user's ``name`` that raises is named by its type.
    return (tuple(check_name(c) for c in load_checks(specs, base.check, dict(sweep.options)))
            + tuple(s.name for s in steps))


def columns(sweep: Sweep) -> list[str]:
    """Row columns in file order."""
    return ["point", "seed", *sweep.keys, *RESULT_COLUMNS]


def _rows_of_unit(sweep: Sweep, unit: int, budget: CheckBudget, env: Env | None = None) -> list[Row]:
    """All checks in one world; a world whose simulation raises gives error rows.

    ``env``: ``validation_env()`` read once for the task (``Sweep.scenario``)."""
    point, seed_index = divmod(unit, len(sweep.seeds))
    seed = sweep.seeds[seed_index]
    values = sweep.point(point)
    head: Row = {"point": point, "seed": seed} | dict(zip(sweep.keys, values, strict=True))
    try:
        world = sweep.scenario(values, env)
        # The point's [check] table: only the keys it sets reach a check (sim.checkload.loader).
        specs, steps = _split(sweep)
        checks = _checks_for(specs, world.check, dict(sweep.options))
        results = list(run_checks(world, seed, checks, budget)) if checks else []
        # Each process in the same world, judged on the same ground truth as the checks.
        bad = results[0].bad if results else ground_truth(world, seed)
        results += [step(world, seed, bad) for step in steps]
    except Exception as error:  # any failure of one world is that world's rows, not the sweep's
        message = f"{type(error).__name__}: {error}".replace("\n", " ")
        try:
            names = check_names(sweep)
        except Exception:  # the checks themselves cannot be built: name them as asked
            names = tuple(sweep.checks)
        return [
            head | dict.fromkeys(RESULT_COLUMNS) | {"check": name, "outcome": "error",
                                                    "error": message}
            for name in names
        ]
    return [head | result_row(result) for result in results]


#: The checks built for a [check] table object (``Sweep.scenario`` hands the same validated
#: table to every point with the same check values): (specs, the table, its checks). The
#: table is held and compared by identity, so a reused id is never taken for it.
_CHECKS: dict[int, tuple[tuple[str, ...], object, list[Check]]] = {}
_CHECKS_MAX = 1024


def _checks_for(specs: list[str], table: BaseModel, extra: Mapping[str, Any] | None = None) -> list[Check]:
    """``load_checks(specs, table)``, kept per table object: a sweep asks again at each point.

    Built-ins only, as the loader keeps them: a user's check is built as asked each time
    (and so is every check given ``--check-opt`` values, ``extra``).
    """
    if extra or not all(spec in BUILTIN_CHECKS for spec in specs):
        return load_checks(specs, table, extra)
    kept = _CHECKS.get(id(table))
    if kept is not None and kept[1] is table and kept[0] == tuple(specs):
        return kept[2]
    checks = load_checks(specs, table)
    if len(_CHECKS) >= _CHECKS_MAX:
        _CHECKS.clear()
    _CHECKS[id(table)] = (tuple(specs), table, checks)
    return checks


def run_units(
    sweep: Sweep, start: int, stop: int, budget: CheckBudget = DEFAULT_CHECK_BUDGET
) -> tuple[int, list[Row]]:
    """A task: units ``start`` to ``stop`` (exclusive). Returns ``start`` and their rows.

    ``budget`` travels with the task (pickled to a pool's or a cluster's worker).
    """
    rows: list[Row] = []
    for unit_rows_ in each_unit(sweep, start, stop, budget):
        rows.extend(unit_rows_)
    return start, rows


def each_unit(
    sweep: Sweep, start: int, stop: int, budget: CheckBudget = DEFAULT_CHECK_BUDGET
) -> Iterator[list[Row]]:
    """Units ``start`` to ``stop`` (exclusive), one list of rows (one per check) at a time."""
    env = validation_env()
    for unit in range(start, stop):
        yield _rows_of_unit(sweep, unit, budget, env)


def unit_rows(
    units: Sequence[int], sweep: Sweep, budget: CheckBudget = DEFAULT_CHECK_BUDGET
) -> list[Row]:
    """Rows of some units computed here (for tests and notebooks)."""
    env = validation_env()
    return list(itertools.chain.from_iterable(_rows_of_unit(sweep, u, budget, env) for u in units))
