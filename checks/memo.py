"""A memo of one fold over a drive's looks, so a check folds each look once, not at every call.

A driver calls a check with the looks so far, one more each time (``checks.drive``).
A check that folds every look from the first at every call does O(L^2 x N) work over
a drive of L looks of N machines. With a ``LookMemo`` it keeps the state it folded, and
at the next call folds only the looks it has not seen: O(L x N) over the drive.

The contract stays "a pure function of the looks": the memo is used only when the
looks it folded are, value for value, a prefix of the looks now given (same key: the
check's parameters and the publish time); any other call (fewer looks, other looks,
another publish) folds from the first look, as without a memo. The comparison is of
the looks themselves (identity first, at C speed), never of their snapshots, so it
costs a pointer per past look, not a visit per snapshot.

One memo slot per thread (``threading.local``): the simulator drives one check at a
time in a thread, and threads that share a check object never share its state. A
caller takes the state out (``resume``: the slot is empty while it folds, so an exception
halfway leaves nothing half-folded behind) and puts it back (``keep``) only when the drive
goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from .model import Look

S = TypeVar("S")


class LookMemo(Generic[S]):
    """The state of one fold over looks, remembered per thread between a check's calls."""

    __slots__ = ("_local",)

    def __init__(self) -> None:
        self._local = threading.local()

    def take(self, key: object, looks: Sequence[Look]) -> tuple[S, int] | None:
        """The state kept for ``key`` and how many looks it folded, if they begin ``looks``.

        The slot is emptied either way: ``keep`` puts a state back.
        """
        slot: tuple[object, list[Look], S] | None = getattr(self._local, "slot", None)
        if slot is None:
            return None
        self._local.slot = None
        kept_key, folded, state = slot
        done = len(folded)
        if done > len(looks) or kept_key != key or folded != list(looks[:done]):
            return None
        return state, done

    def resume(self, key: object, looks: Sequence[Look], fresh: Callable[[], S]) -> tuple[S, Sequence[Look]]:
        """The state to fold ``looks`` into and the looks still to fold, as ``take`` rules.

        The kept state and the looks after those it folded, or ``fresh()`` and every look.
        """
        resumed = self.take(key, looks)
        if resumed is None:
            return fresh(), looks
        state, done = resumed
        return state, looks[done:]

    def keep(self, key: object, looks: Sequence[Look], state: S) -> None:
        """Remember ``state`` as the fold of every look in ``looks`` under ``key``."""
        self._local.slot = (key, list(looks), state)
