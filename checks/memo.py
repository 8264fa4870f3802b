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

A memo belongs to one check object (``PerCheck``: made with the object, never shared
between objects, never module state), and in it one slot per thread (``threading.local``):
the simulator drives one check at a time in a thread, and threads that share a check
object never share its state. A caller takes the state out (``resume``: the slot is empty
while it folds, so an exception halfway leaves nothing half-folded behind) and puts it
back (``keep``) only when the drive goes on. A memo is a cache, so a copied or pickled
check (a sweep's worker, ``copy.deepcopy``) starts with an empty one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar, overload

from .model import Look

S = TypeVar("S")


class LookMemo(Generic[S]):
    """The state of one fold over looks, remembered per thread between a check's calls."""

    __slots__ = ("_local",)

    def __init__(self) -> None:
        self._local = threading.local()

    def __reduce__(self) -> tuple[Any, ...]:
        # A thread's slot cannot be pickled, and a copy has no thread of its own yet.
        return (LookMemo, ())

    def __deepcopy__(self, memo: dict[int, Any]) -> LookMemo[S]:
        return LookMemo()

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

    def drop(self) -> None:
        """Forget what this thread kept: a drive that decided needs none of it.

        A check object can outlive its drive by far (a sweep keeps its built checks for
        every world): what a decided drive left here would hold that world's looks.
        """
        self._local.slot = None


class PerCheck(Generic[S]):
    """A ``LookMemo`` of each check object, made at its first use (a class attribute).

    ``_folds = PerCheck[Fold]()`` in a check's class gives each of its objects a memo of
    its own, kept in the object's ``__dict__`` (so a frozen dataclass keeps it too; it is
    no field: not compared, hashed, shown or taken as an option). ``dict.setdefault``
    makes it once even when two threads ask at the same time.
    """

    __slots__ = ("_attr",)

    def __init__(self) -> None:
        self._attr = ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._attr = f"_memo{name}"

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> PerCheck[S]: ...

    @overload
    def __get__(self, obj: object, owner: type[Any]) -> LookMemo[S]: ...

    def __get__(self, obj: object, owner: type[Any]) -> LookMemo[S] | PerCheck[S]:
        if obj is None:
            return self
        kept: dict[str, Any] = obj.__dict__
        memo = kept.get(self._attr)
        if memo is None:
            memo = kept.setdefault(self._attr, LookMemo())
        return memo  # type: ignore[no-any-return]
