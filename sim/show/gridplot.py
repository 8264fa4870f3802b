"""The detection grid as a figure: one panel per check, the outcome of each world in a cell."""

from __future__ import annotations

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


def detection_grid_figure(grid: DetectionGrid) -> Figure:
    """One panel per check: the outcome in each world of event-log cap and crash period."""
    names = list(grid.outcomes)
    figure = Figure(figsize=(3.2 + 5.0 * len(names), 1.6 + 0.5 * len(grid.periods)),
                    layout="constrained")
    axes = figure.subplots(1, len(names), sharey=True, squeeze=False)[0]
    order = list(OUTCOME_COLOURS)
    colours = ListedColormap([OUTCOME_COLOURS[o] for o in order])
    for ax, name in zip(axes, names, strict=True):
        rows = grid.outcomes[name]
        codes = np.array([[order.index(o) for o in row] for row in rows])
        ax.imshow(codes, cmap=colours, vmin=-0.5, vmax=len(order) - 0.5, aspect="auto",
                  gid=f"grid:{name}")
        for i, (row, layer_row) in enumerate(zip(rows, grid.layers[name], strict=True)):
            for j, (outcome, layer) in enumerate(zip(row, layer_row, strict=True)):
                text = outcome.replace("_", " ")
                if layer:
                    text += "\n" + LAYER_LABELS.get(layer, layer)
                ax.text(j, i, text, ha="center", va="center", fontsize=6,
                        color="white" if outcome in ("missed", "error") else "black",
                        gid=f"cell:{name}:{i}:{j}")
        ax.set_xticks(range(len(grid.caps)), [str(c) for c in grid.caps])
        ax.set_yticks(range(len(grid.periods)), [f"{p:g} s" for p in grid.periods])
        ax.set_xlabel("event-log cap (events kept per machine)")
        ax.set_title(f"check: {name}", loc="left", fontweight="bold", fontsize=10)
    axes[0].set_ylabel("crash period (crash_after_s)")
    figure.suptitle(f"{grid.scenario} · seed {grid.seed} · verdict outcome per world",
                    x=0.01, ha="left", fontweight="bold")
    used = sorted({o for rows in grid.outcomes.values() for row in rows for o in row},
                  key=order.index)
    figure.legend(handles=[Patch(color=OUTCOME_COLOURS[o], label=o.replace("_", " "))
                           for o in used],
                  loc="outside lower center", ncol=len(used), frameon=False, fontsize=8)
    return figure
