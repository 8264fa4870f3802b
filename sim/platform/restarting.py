"""flyd's restart policy: does a machine whose app exited get restarted?

superfly/docs ``machines/guides-examples/machine-restart-policy.html.markerb`` l.16
(docs@aa73f3e4, unchanged at docs@5c22c8ce): ``no`` never restarts; ``always`` restarts
"regardless of the exit code"; ``on-failure`` restarts "if it exits with a non-zero exit
code", "up to max_retries (default 10) times within a 5-minute window". An OOM kill is a
non-zero exit (137): the page does not single it out.

The window is **fixed**: superfly/docs PR #1911 (merged 2026-07-06 as aa73f3e4) says in its
description and commit message that "the max number of restarts is evaluated within a
fixed 5-minute window" (github.com/superfly/docs/pull/1911; the page itself says only
"within a 5-minute window"). Where a fixed window opens is
**not public: assumed** here at the first restart counted in it; it lasts
``retry_window_s`` and the next restart after it opens the next one. ``sliding`` (a window
trailing each exit, this model's reading before PR #1911) stays a scenario option
(``[platform] retry_window``); ``retry_window_s = 0`` counts a whole budget's restarts.

A budget once spent stays spent across an autostart: edoardok-cmd/BoomCard@ec15ad8c
(``backend-api/prisma/scripts/bc-qa-051-dedupe-phone-role.js`` l.143-162, 2026-08-20) shows
machines that "exhausted their restart budget days ago", woken by fly-proxy, exit 1 and
stay stopped with no restart, days after any 5-minute window closed. The evidence is the
author's summary of the event list, not the list itself (thin): the other reading, an
autostart that refills the budget, is ``[platform] autostart_refills_retries``. A new
image (an update) starts a new budget: not public, assumed.
"""

from __future__ import annotations

from collections import deque

from platform_testbed.sim.config.scenario import RetryWindow


class RestartBudget:
    """on-failure's restarts of one machine: those within the window, and whether it gave up."""

    __slots__ = ("_times", "max_retries", "opened", "spent", "used", "window_s")

    def __init__(self, max_retries: int, window_s: float, window: RetryWindow = "fixed") -> None:
        self.max_retries = max_retries
        self.window_s = window_s
        #: The restart times within the sliding window (None: the window is fixed).
        self._times: deque[float] | None = deque() if window == "sliding" else None
        #: The fixed window: when it opened and how many restarts it holds.
        self.opened = 0.0
        self.used = 0
        #: The machine gave up: no exit restarts it again (until a new budget).
        self.spent = False

    def copy(self) -> RestartBudget:
        """Another budget in the same state (a forked world's machine)."""
        new = RestartBudget.__new__(RestartBudget)
        new.max_retries, new.window_s = self.max_retries, self.window_s
        new._times = None if self._times is None else self._times.copy()
        new.opened, new.used, new.spent = self.opened, self.used, self.spent
        return new

    def restart(self, now: float) -> bool:
        """A failed exit at ``now``: does flyd restart the machine? Counts the restart if so."""
        if self.spent:
            return False
        window = self.window_s
        times = self._times
        if times is None:
            if window and self.used and now - self.opened >= window:
                self.used = 0  # the window closed: the next restart opens a new one
            if not self.used:
                self.opened = now
            recent = self.used
        else:
            recent = recent_restarts(times, now, window)
        if recent >= self.max_retries:
            self.spent = True
            return False
        if times is None:
            self.used += 1
        else:
            times.append(now)
        return True


def recent_restarts(restarted: deque[float], now: float, window: float) -> int:
    """How many of the restart times in ``restarted`` lie within ``window`` before ``now``.

    Drops the older ones; ``window`` 0 counts every restart of the budget.
    """
    if window:
        while restarted and restarted[0] <= now - window:
            restarted.popleft()
    return len(restarted)
