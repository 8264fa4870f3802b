"""What a run does around its simulation: the cyclic garbage collector paused."""

from __future__ import annotations

import gc


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
            counts, thresholds = gc.get_count(), gc.get_threshold()
            if counts[0] > thresholds[0]:
                # The older generations on the collector's own schedule: collecting only the
                # young one let the cycles a run promotes pile up in them for good (compare
                # --runs 100000 grew past 1.3 GB).
                older = [g for g in (2, 1) if counts[g] >= thresholds[g]]
                gc.collect(older[0] if older else 0)
