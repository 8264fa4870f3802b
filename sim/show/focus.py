"""The x axis of a crash timeline: linear detail around the publish, then a compressed tail."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, FuncFormatter

from platform_testbed.sim.show.timeline import Timeline

#: Seconds shown before the publish began, unless a caller asks for another figure.
BEFORE_PUBLISH_S = 5.0


def _nice_step(span: float, ticks: int) -> float:
    """A 1-2-5 step giving about ``ticks`` ticks over ``span``."""
    raw = max(span / ticks, 1e-9)
    power = 10 ** math.floor(math.log10(raw))
    return float(next((m * power for m in (1, 2, 5, 10) if m * power >= raw), 10 * power))


class Focus:
    """The x range of a timeline: linear detail around the publish, then a compressed tail.

    The crash loop, the looks and the verdict happen within seconds; the reconciler's late
    failure and the 404 minutes later. One piecewise-linear axis shows both.
    """

    def __init__(self, start_s: float, split_s: float, end_s: float, tail_share: float = 0.3):
        self.start_s, self.split_s, self.end_s = start_s, split_s, end_s
        tail = end_s - split_s
        wanted = tail_share / (1 - tail_share) * (split_s - start_s)
        #: Seconds of the tail per second of the detail (1: no compression).
        self.squeeze = 1.0 if tail <= wanted else wanted / tail

    @classmethod
    def around(cls, timelines: Sequence[Timeline], before_s: float = BEFORE_PUBLISH_S) -> Focus:
        """From ``before_s`` before the publish to just after the last thing that happened."""
        last = max(t.last_moment_s for t in timelines)
        split = max(last + max(3.0, 0.12 * last), 15.0)
        end = max(t.end_s for t in timelines)
        start = max(-before_s, min(t.start_s for t in timelines))
        return cls(start, min(split, end), end)

    def forward(self, x: Any) -> Any:
        """Data seconds to axis units."""
        x = np.asarray(x, dtype=float)
        return np.where(x <= self.split_s, x, self.split_s + (x - self.split_s) * self.squeeze)

    def inverse(self, y: Any) -> Any:
        """Axis units back to data seconds."""
        y = np.asarray(y, dtype=float)
        return np.where(y <= self.split_s, y, self.split_s + (y - self.split_s) / self.squeeze)

    def ticks(self) -> list[float]:
        """Round ticks in the detail, a few in the tail."""
        step = _nice_step(self.split_s - self.start_s, 10)
        ticks = list(np.arange(math.ceil(self.start_s / step) * step, self.split_s + 1e-9, step))
        if self.squeeze < 1:
            tail_step = _nice_step(self.end_s - self.split_s, 4)
            first = math.ceil((self.split_s + 0.5 * tail_step) / tail_step) * tail_step
            ticks += list(np.arange(first, self.end_s + 1e-9, tail_step))
        return [float(t) for t in ticks]

    def label(self) -> str:
        """The x-axis label, saying where the tail is compressed."""
        text = "seconds after the publish began (simulated)"
        if self.squeeze < 1:
            text += (f"; after {self.split_s:+.0f} s the axis is compressed"
                     f" {1 / self.squeeze:.0f}:1 (dotted line)")
        return text

    def apply(self, ax: Axes) -> None:
        """Set the scale, limits and ticks of ``ax``; mark where the tail is compressed."""
        ax.set_xscale("function", functions=(self.forward, self.inverse))
        ax.set_xlim(self.start_s, self.end_s)
        ax.xaxis.set_major_locator(FixedLocator(self.ticks()))
        ax.xaxis.set_major_formatter(FuncFormatter(_format_s))
        if self.squeeze < 1:
            ax.axvline(self.split_s, color="#969696", linewidth=0.8, linestyle=(0, (1, 3)),
                       gid="focus-split")


def _format_s(x: float, _pos: int | None = None) -> str:
    return "0" if abs(x) < 1e-9 else f"{x:+g}"
