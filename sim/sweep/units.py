"""Units of work: every check in one (point, seed) world, one row per check.

Units are numbered point-major, so rows come out in the same order whoever computed
them: one process, a local pool, or a Dask cluster.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from platform_testbed.checks.drive import check_name
from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.config.scenario import validate
from platform_testbed.sim.publish.compare import RESULT_COLUMNS, result_row
from platform_testbed.sim.publish.world import run_checks

if TYPE_CHECKING:
    from platform_testbed.sim.sweep.file import Sweep

Row = dict[str, Any]
#: Called with the number of units just finished.
Progress = Callable[[int], None]

# Row columns after the axis columns, in file order: RESULT_COLUMNS (re-exported).
__all__ = ["RESULT_COLUMNS", "Progress", "Row", "check_names", "columns", "run_units", "unit_rows"]


def check_names(sweep: Sweep) -> tuple[str, ...]:
    """The names the sweep's checks report under (``file.py:Obj`` reports as its ``name``).

    Built once in the base scenario: a check's name does not depend on the point.
    """
    base = validate(sweep.base, sweep.name)
    # check_name, as the rows do: a user's ``name`` that raises is named by its type.
    return tuple(check_name(c) for c in load_checks(list(sweep.checks), base.check))


def columns(sweep: Sweep) -> list[str]:
    """Row columns in file order."""
    return ["point", "seed", *sweep.keys, *RESULT_COLUMNS]


def _rows_of_unit(sweep: Sweep, unit: int, budget: CheckBudget) -> list[Row]:
    """All checks in one world; a world whose simulation raises gives error rows."""
    point, seed_index = divmod(unit, len(sweep.seeds))
    seed = sweep.seeds[seed_index]
    values = sweep.point(point)
    head: Row = {"point": point, "seed": seed} | dict(zip(sweep.keys, values, strict=True))
    try:
        world = sweep.scenario(values)
        # The point's [check] table: only the keys it sets reach a check (sim.checkload.loader).
        checks = load_checks(list(sweep.checks), world.check)
        results = run_checks(world, seed, checks, budget)
    except Exception as error:  # any failure of one world is that world's rows, not the sweep's
        message = f"{type(error).__name__}: {error}".replace("\n", " ")
        try:
            names = check_names(sweep)
        except Exception:  # the checks themselves cannot be built: name them as asked
            names = sweep.checks
        return [
            head | dict.fromkeys(RESULT_COLUMNS) | {"check": name, "outcome": "error",
                                                    "error": message}
            for name in names
        ]
    return [head | result_row(result) for result in results]


def run_units(
    sweep: Sweep, start: int, stop: int, budget: CheckBudget = DEFAULT_CHECK_BUDGET
) -> tuple[int, list[Row]]:
    """A task: units ``start`` to ``stop`` (exclusive). Returns ``start`` and their rows.

    ``budget`` travels with the task (pickled to a pool's or a cluster's worker).
    """
    rows: list[Row] = []
    for unit in range(start, stop):
        rows.extend(_rows_of_unit(sweep, unit, budget))
    return start, rows


def unit_rows(
    units: Sequence[int], sweep: Sweep, budget: CheckBudget = DEFAULT_CHECK_BUDGET
) -> list[Row]:
    """Rows of some units computed here (for tests and notebooks)."""
    return list(itertools.chain.from_iterable(_rows_of_unit(sweep, u, budget) for u in units))
