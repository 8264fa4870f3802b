"""The miss-region heatmap of a sweep: two axes, one panel per check, colour = miss rate.

Built on matplotlib's object API (``Figure``), never pyplot's global state, so it is
safe in workers, tests and notebooks alike.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure

from platform_testbed.sim.runtime.outputs import save_figure
from platform_testbed.sim.sweep.facets import value_ticks
from platform_testbed.sim.sweep.units import check_names

if TYPE_CHECKING:
    from platform_testbed.sim.sweep import Sweep

Row = dict[str, Any]


def miss_grid(
    rows: Iterable[Row], x: str, y: str, check: str
) -> tuple[list[float], list[float], np.ndarray[Any, np.dtype[np.float64]]]:
    """Miss rate over the bad worlds of each (x, y) cell; NaN where no world was bad.

    Rows may come straight from a sweep or back from its CSV (values as text); other
    axes and seeds are pooled into the cell.
    """
    missed: dict[tuple[float, float], int] = defaultdict(int)
    bad: dict[tuple[float, float], int] = defaultdict(int)
    for row in rows:
        if row["check"] != check or row["outcome"] not in ("caught", "missed"):
            continue
        cell = (float(row[x]), float(row[y]))
        bad[cell] += 1
        missed[cell] += row["outcome"] == "missed"
    xs = sorted({cx for cx, _ in bad})
    ys = sorted({cy for _, cy in bad})
    grid = np.full((len(ys), len(xs)), np.nan)
    col = {v: i for i, v in enumerate(xs)}
    line = {v: i for i, v in enumerate(ys)}
    for (cx, cy), n in bad.items():
        grid[line[cy], col[cx]] = missed[(cx, cy)] / n
    return xs, ys, grid


def heatmap(
    rows: Sequence[Row], x: str, y: str, checks: Sequence[str] | None = None,
    title: str | None = None,
) -> Figure:
    """A figure with one panel per check: where (x, y) makes the check miss a bad release.

    The axes are categorical: one equal square per sampled value, ticked and labelled at
    the values that ran (every k-th past a dozen), so uneven values (caps 1, 2, 3, 5, 10)
    neither stretch their cells nor gain ticks at values never run. The title says what is
    drawn unless ``title`` is given.
    """
    names = list(checks) if checks else list(dict.fromkeys(r["check"] for r in rows))
    figure = Figure(figsize=(4.2 * len(names) + 1.2, 4.2), layout="constrained")
    panels = figure.subplots(1, len(names), sharex=True, sharey=True, squeeze=False)[0]
    mesh = None
    for panel, name in zip(panels, names, strict=True):
        xs, ys, grid = miss_grid(rows, x, y, name)
        panel.set_title(name)
        panel.set_xlabel(x)
        panel.set_facecolor("#d9d9d9")  # grey: no bad world in the cell
        if xs and ys:
            mesh = panel.pcolormesh(grid, cmap="magma_r", vmin=0, vmax=1)
            value_ticks(panel, [f"{v:g}" for v in xs], [f"{v:g}" for v in ys], fontsize=8)
    panels[0].set_ylabel(y)
    if mesh is not None:
        figure.colorbar(mesh, ax=list(panels), label="miss rate (bad releases marked live)")
    figure.suptitle(title or f"where {', '.join(names)} miss: {x} × {y} (other axes pooled)")
    return figure


def facet_paths(sweep: Sweep, path: Path) -> list[Path]:
    """The files ``--heatmap path`` writes: ``path`` itself, or with four [heatmap] axes
    one per check, ``-CHECK`` before the suffix (by the names the rows carry)."""
    if sweep.heatmap is not None and len(sweep.heatmap) == 4:
        from platform_testbed.sim.sweep.facets import facet_path  # noqa: PLC0415 (as save_heatmap imports it)

        return [facet_path(path, check) for check in check_names(sweep)]
    return [path]


def save_heatmap(rows: Sequence[Row], sweep: Sweep, path: Path, force: bool = False) -> None:
    """Draw the sweep's heatmap (its [heatmap] axes, else its first two) to ``path``.

    With four [heatmap] axes (x, y, columns, rows), one grid figure per check instead
    (``sim.sweep.facets``, files named by ``facet_paths``), the base scenario's point
    outlined.
    """
    if sweep.heatmap is not None and len(sweep.heatmap) == 4:
        from platform_testbed.sim.sweep.facets import save_facet_maps  # noqa: PLC0415

        keys = (sweep.heatmap[0], sweep.heatmap[1], sweep.heatmap[2], sweep.heatmap[3])
        mark = {key: _base_value(sweep.base, key) for key in keys}
        # Panels by the names rows carry (a user's ``file.py:Obj`` reports as its ``name``).
        save_facet_maps(
            rows, list(check_names(sweep)), axes=dict(sweep.axes), keys=keys, mark=mark,
            path=path, name=sweep.name, force=force,
        )
        return
    x, y = sweep.heatmap or (sweep.keys[0], sweep.keys[1])
    figure = heatmap(rows, x, y, list(check_names(sweep)),
                     title=f"{sweep.name}: where checks miss")
    save_figure(figure, path, dpi=110)


def _base_value(base: dict[str, Any], key: str) -> Any:
    """The base scenario's value of ``table.field`` (its default when the file omits it)."""
    from platform_testbed.sim.config.scenario import validate  # noqa: PLC0415

    scenario = validate(base, "base")
    table, _, name = key.rpartition(".")
    holder: Any = getattr(scenario, table) if table else scenario
    return getattr(holder, name)
