"""Sweeps: one base scenario over a grid of settings and seeds, every check in each world.

A sweep file names a base scenario, the checks to compare, the seeds, and axes over
scenario keys (``table.key`` as in ``--set``). Every (point, seed) is one world in which
all the checks run; it gives one row per check. Units of work are numbered
point-major, so rows come out in the same order whoever computed them: one process,
a local pool, or a Dask cluster.

The parts: ``sim.sweep.file`` (the file and its axes), ``sim.sweep.units`` (one world's
rows), ``sim.sweep.run`` (tasks, the local pool, Dask) and ``sim.sweep.output`` (the
summary and the rows file). This module gathers their public names.
"""

from __future__ import annotations

from platform_testbed.sim.sweep.file import (
    Axis,
    HeatmapTable,
    RandomAxis,
    RangeAxis,
    Scalar,
    Sweep,
    SweepFile,
    from_spec,
    load_sweep,
)
from platform_testbed.sim.sweep.output import SweepResult, read_rows, summarise, summary_table, write_rows
from platform_testbed.sim.sweep.run import TASK_CEILING_S, TASK_TARGET_S, run_sweep
from platform_testbed.sim.sweep.units import RESULT_COLUMNS, Progress, Row, columns, run_units, unit_rows

__all__ = [
    "RESULT_COLUMNS", "TASK_CEILING_S", "TASK_TARGET_S", "Axis", "HeatmapTable", "Progress",
    "RandomAxis", "RangeAxis", "Row", "Scalar", "Sweep", "SweepFile", "SweepResult", "columns",
    "from_spec", "load_sweep", "read_rows", "run_sweep", "run_units", "summarise",
    "summary_table", "unit_rows", "write_rows",
]
