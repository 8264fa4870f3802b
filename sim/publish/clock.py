"""The event loop of a lazy world, and what a run does around it."""

from __future__ import annotations

import gc
import heapq
from collections.abc import Generator
from typing import Any, Protocol


class Clock(Protocol):
    """What machines and the site need of their world's loop: the time now."""

    @property
    def now(self) -> float: ...


class LazyClock:
    """The event loop of a lazy world, in SimPy's order, for the few processes it runs.

    With lazy machines a world runs only the publish, the previous release and the
    reconciler, a handful of timeouts each: SimPy's Event, Process and callback objects
    for those cost more than the rest of such a run. The processes are the same
    generators; here ``timeout`` is just the delay, scheduled when yielded (nothing is
    scheduled between a SimPy timeout's creation and its yield in those processes).
    The order is SimPy's: (time, priority, creation count), a new process first runs
    at once (urgent) after what is running now, and ``run(until)`` stops before
    anything at ``until``.
    """

    __slots__ = ("_count", "_queue", "now")

    URGENT, NORMAL = 0, 1

    def __init__(self) -> None:
        self.now: float = 0.0
        # (time, priority, count, process); process None is a stop (see ``stop``).
        self._queue: list[tuple[float, int, int, Generator[float, Any, None] | None]] = []
        self._count = 0

    def timeout(self, delay: float) -> float:
        """What a process yields to wait ``delay`` seconds."""
        return delay

    def process(self, process: Generator[float, Any, None]) -> None:
        """Start a process: it runs first after the current one yields (SimPy's Initialize)."""
        self._schedule(self.now, self.URGENT, process)

    def stop(self) -> None:
        """End ``run`` after what is already due now (SimPy's StopSimulation event)."""
        self._schedule(self.now, self.NORMAL, None)

    def _schedule(
        self, at: float, priority: int, process: Generator[float, Any, None] | None
    ) -> None:
        heapq.heappush(self._queue, (at, priority, self._count, process))
        self._count += 1

    def run(self, until: float) -> None:
        """Run the processes up to ``until`` (exclusive), or until ``stop``."""
        queue = self._queue
        pop = heapq.heappop
        while queue and queue[0][0] < until:
            at, _, _, process = pop(queue)
            self.now = at
            if process is None:
                return
            try:
                delay = next(process)
            except StopIteration:
                continue
            self._schedule(at + delay, self.NORMAL, process)
        # As SimPy: an int horizon stays an int.
        self.now = until if isinstance(until, int) else float(until)



class gc_paused:  # lower case: used like a function, ``with gc_paused():``
    """Pause the cyclic garbage collector for one run; collect its young objects if due.

    A run allocates many objects that outlive it or die without cycles (events,
    snapshots, looks: a 1,000-machine world builds 300,000 events); the collector
    would walk them again and again as they pile up (a third of such a run). Paused,
    they are walked once, by one young-generation collection at the end, which also
    frees the world's own reference cycles. That collection runs here only when the
    run allocated enough to make one due, as the collector would have at the caller's
    next allocation: its cost is charged to this run, and a small run pays nothing
    extra. A collector someone else paused stays paused. (A class, not a
    ``contextlib.contextmanager``: this wraps every run, and a generator costs more.)
    """

    __slots__ = ("_paused",)

    def __enter__(self) -> None:
        self._paused = gc.isenabled()
        if self._paused:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._paused:
            gc.enable()
            if gc.get_count()[0] > gc.get_threshold()[0]:
                gc.collect(0)
