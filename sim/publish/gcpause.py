"""What a run does around its simulation: the cyclic garbage collector paused."""

from __future__ import annotations

import gc


class gc_paused:  # lower case: used like a function, ``with gc_paused():``
    """Pause the cyclic garbage collector for one run, and let it resume as usual after.

    A run allocates many objects that outlive it or die without cycles (events,
    snapshots, looks: a 1,000-machine world builds 300,000 events); the collector
    would walk them again and again as they pile up (a third of such a run). Paused,
    none is walked during the run. After it the collector resumes with its usual
    schedule: what the caller drops is freed by reference counting (which also takes
    it off the collector's young count), so a run whose result is dropped leaves the
    collector only the world's own reference cycles; a result the caller keeps is
    walked by the next young collection, as any object the caller keeps would be.
    (Forcing that collection here walked every look of the result while it was still
    alive: measured 0.2-0.3 s of a 2.5 s 1,000-machine run.) A collector someone else
    paused stays paused. (A class, not a ``contextlib.contextmanager``: this wraps every
    run, and a generator costs more.)
    """

    __slots__ = ("_paused",)

    def __enter__(self) -> None:
        self._paused = gc.isenabled()
        if self._paused:
            gc.disable()

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        # Named parameters, not ``*exc``: packing them would allocate a tuple after the
        # collector resumes, and that allocation would run the collection at once.
        if self._paused:
            gc.enable()
