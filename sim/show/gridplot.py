"""The detection grid as a figure: one panel per check, the outcome of each world in a cell."""

from __future__ import annotations

import textwrap
from collections import Counter

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from platform_testbed.sim.show.explore import DetectionGrid

OUTCOME_COLOURS = {
    "caught": "#74c476",
    "passed": "#9ecae1",
    "missed": "#ef3b2c",
    "false_alarm": "#fd8d3c",
    "blind": "#9e9ac8",
    "undecided": "#bdbdbd",
    "error": "#000000",
}


# Which layer of the layered check decided, in a few words for a grid cell.
LAYER_LABELS = {
    "look-twice": "look twice",
    "gave-up": "gave up",
    "crashes-since-publish": "3rd look",
    "start-timeout": "timeout",
}


#: Panels side by side before the next row starts: two keep a 10-cap grid's cell text legible
#: on a page (six panels in one row drew a 3331 x 520 px figure whose labels overlapped).
PANELS_PER_ROW = 2
#: Inches per grid cell: room for two short lines of 6.5 pt text.
CELL_W, CELL_H = 0.62, 0.42


def _layer_text(layer: str) -> str:
    """A layer's name in a few words, wrapped to fit a cell."""
    return textwrap.fill(LAYER_LABELS.get(layer, layer.replace("-", " ")), width=12)


def detection_grid_figure(grid: DetectionGrid) -> Figure:
    """One panel per check: the outcome in each world of event-log cap and crash period.

    Each cell names its outcome (also its colour); the layer that decided is in the panel's
    title when one layer decided most worlds, and written in a cell only where another did.
    """
    names = list(grid.outcomes)
    columns = min(len(names), PANELS_PER_ROW)
    rows_of_panels = -(-len(names) // columns)
    panel_w = 1.0 + CELL_W * len(grid.caps)
    panel_h = 0.9 + CELL_H * len(grid.periods)
    figure = Figure(figsize=(0.6 + panel_w * columns, 0.9 + panel_h * rows_of_panels),
                    layout="constrained")
    grid_axes = figure.subplots(rows_of_panels, columns, sharey=True, squeeze=False).flatten()
    for unused in grid_axes[len(names):]:
        figure.delaxes(unused)
    order = list(OUTCOME_COLOURS)
    colours = ListedColormap([OUTCOME_COLOURS[o] for o in order])
    for index, (ax, name) in enumerate(zip(grid_axes, names, strict=False)):
        rows = grid.outcomes[name]
        codes = np.array([[order.index(o) for o in row] for row in rows])
        ax.imshow(codes, cmap=colours, vmin=-0.5, vmax=len(order) - 0.5, aspect="auto",
                  gid=f"grid:{name}")
        layers = Counter(layer for row in grid.layers[name] for layer in row if layer)
        usual = layers.most_common(1)[0][0] if layers else None
        for i, (row, layer_row) in enumerate(zip(rows, grid.layers[name], strict=True)):
            for j, (outcome, layer) in enumerate(zip(row, layer_row, strict=True)):
                text = outcome.replace("_", " ")
                if layer and layer != usual:
                    text += "\n" + _layer_text(layer)
                ax.text(j, i, text, ha="center", va="center", fontsize=6.5,
                        color="white" if outcome in ("missed", "error") else "black",
                        gid=f"cell:{name}:{i}:{j}")
        ax.set_xticks(range(len(grid.caps)), [str(c) for c in grid.caps])
        ax.set_yticks(range(len(grid.periods)), [f"{p:g} s" for p in grid.periods])
        decided = f"  (decided by: {LAYER_LABELS.get(usual, usual.replace('-', ' '))}, unless a cell says)" \
            if usual else ""
        ax.set_title(f"check: {name}{decided}", loc="left", fontsize=9)
        if index + columns >= len(names):  # the lowest panel of its column
            ax.set_xlabel("event-log cap (events kept per machine)")
    figure.supylabel("crash period (crash_after_s)", fontsize=10)
    figure.suptitle(f"{grid.scenario} · seed {grid.seed} · verdict outcome per world",
                    x=0.01, ha="left", fontweight="bold")
    used = sorted({o for rows in grid.outcomes.values() for row in rows for o in row},
                  key=order.index)
    figure.legend(handles=[Patch(color=OUTCOME_COLOURS[o], label=o.replace("_", " "))
                           for o in used],
                  loc="outside lower center", ncol=len(used), frameon=False, fontsize=9)
    return figure
