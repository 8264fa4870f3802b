"""A map of a sweep over four axes: a grid of small miss-rate maps, one figure per check.

Columns and rows of the grid are two axes (e.g. the event profile and the event cap);
inside each cell, x and y are two more (e.g. restart delay and boot time), drawn as
categories so uneven values (0.1, 0.3, 1, 3, 10) read evenly. Other axes and seeds are
pooled into each square. The base scenario's own point is outlined, so a reader sees
where the shipped world sits in the space of what nobody knows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from platform_testbed.sim.runtime.outputs import check_output, save_figure

Row = Mapping[str, Any]


def _key(value: Any) -> str:
    """One spelling for a value read from a sweep (number) or from its CSV (text)."""
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return str(value)


def _values(axis: Sequence[Any]) -> list[str]:
    return list(dict.fromkeys(_key(v) for v in axis))


#: At most this many labelled ticks on one axis: past it, every k-th sampled value.
MAX_TICKS = 12


def labelled(count: int, most: int = MAX_TICKS) -> list[int]:
    """Which of ``count`` sampled values get a tick: all, or every k-th from the first.

    Ticks stand only at values that ran (a cell's centre), never between them.
    """
    step = max(1, -(-count // most))
    return list(range(0, count, step))


def value_ticks(panel: Any, xs: Sequence[str], ys: Sequence[str], fontsize: float = 7) -> None:
    """Ticks at the centres of the cells, labelled with the sampled values (categorical axes)."""
    at_x, at_y = labelled(len(xs)), labelled(len(ys))
    panel.set_xticks([i + 0.5 for i in at_x], [xs[i] for i in at_x], fontsize=fontsize)
    panel.set_yticks([i + 0.5 for i in at_y], [ys[i] for i in at_y], fontsize=fontsize)


def miss_rates(
    rows: Sequence[Row], check: str, keys: tuple[str, str, str, str]
) -> dict[tuple[str, str, str, str], tuple[int, int]]:
    """(missed, bad) per (x, y, column, row) cell for one check; other axes pooled."""
    cells: dict[tuple[str, str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        if row["check"] != check or row["outcome"] not in ("caught", "missed"):
            continue
        cell = cells[tuple(_key(row[k]) for k in keys)]  # type: ignore[index]
        cell[0] += row["outcome"] == "missed"
        cell[1] += 1
    return {k: (v[0], v[1]) for k, v in cells.items()}


def facet_map(
    rows: Sequence[Row],
    check: str,
    *,
    axes: Mapping[str, Sequence[Any]],
    keys: tuple[str, str, str, str],
    mark: Mapping[str, Any] | None = None,
    title: str | None = None,
) -> Figure:
    """The grid of miss-rate maps of ``check``; ``mark`` outlines one point (the shipped one)."""
    x, y, col, row = keys
    xs, ys, cols, lines = (_values(axes[k]) for k in keys)
    rates = miss_rates(rows, check, keys)
    figure = Figure(figsize=(1.1 + 2.0 * len(cols), 0.9 + 1.8 * len(lines)), layout="constrained")
    panels = figure.subplots(len(lines), len(cols), sharex=True, sharey=True, squeeze=False)
    marked = {k: _key(v) for k, v in (mark or {}).items()}
    mesh = None
    for i, line in enumerate(lines):
        for j, column in enumerate(cols):
            grid = np.full((len(ys), len(xs)), np.nan)
            for a, xv in enumerate(xs):
                for b, yv in enumerate(ys):
                    missed, bad = rates.get((xv, yv, column, line), (0, 0))
                    if bad:
                        grid[b, a] = missed / bad
            panel = panels[i][j]
            panel.set_facecolor("#d9d9d9")  # grey: no bad world in the square
            mesh = panel.pcolormesh(grid, cmap="magma_r", vmin=0, vmax=1)
            if marked.get(col) == column and marked.get(row) == line and \
                    marked.get(x) in xs and marked.get(y) in ys:
                at = (xs.index(marked[x]), ys.index(marked[y]))
                panel.add_patch(Rectangle(at, 1, 1, fill=False, edgecolor="#00a0ff", linewidth=2.5))
            if i == 0:
                panel.set_title(f"{column}", fontsize=9)
            if j == 0:
                panel.set_ylabel(f"{row.split('.')[-1]} = {line}\n{y.split('.')[-1]}", fontsize=8)
            if i == len(lines) - 1:
                panel.set_xlabel(x.split(".")[-1], fontsize=8)
            value_ticks(panel, xs, ys)
    if mesh is not None:
        figure.colorbar(mesh, ax=panels.ravel().tolist(), shrink=0.6,
                        label=f"{check}: miss rate (bad releases marked live)")
    figure.suptitle(title or f"{check}: where it misses", fontsize=11)
    return figure


def facet_path(path: Path, check: str) -> Path:
    """Where one check's faceted map goes: ``path`` with ``-CHECK`` before its suffix."""
    return path.with_name(f"{path.stem}-{check}{path.suffix}")


def save_facet_maps(
    rows: Sequence[Row],
    checks: Sequence[str],
    *,
    axes: Mapping[str, Sequence[Any]],
    keys: tuple[str, str, str, str],
    mark: Mapping[str, Any],
    path: Path,
    name: str,
    force: bool = False,
) -> list[Path]:
    """One figure per check, ``path`` with ``-CHECK`` before its suffix; the paths written.

    ``--heatmap`` judged ``path`` before the sweep; the names made from it are judged here,
    all before the first is drawn, so a directory or a link in the way is one line, not a
    traceback after some figures are written. Each is written whole or not at all.
    """
    outs = [facet_path(path, check) for check in checks]
    for out in outs:
        check_output("--heatmap", out, force)
    for check, out in zip(checks, outs, strict=True):
        title = (f"{name}: where {check} misses (outlined: the shipped scenario's values; "
                 "other axes pooled)")
        save_figure(facet_map(rows, check, axes=axes, keys=keys, mark=mark, title=title), out,
                    dpi=90)
    return outs
