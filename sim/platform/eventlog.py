"""A machine's event list, capped like the platform's, counting what fell off."""

from __future__ import annotations

from collections import deque

from platform_testbed.checks.model import Event

# An event's fields in order (timestamp in platform ms), as the machine writes them: built
# into an ``Event`` once, when it is written (``_event(Event, record)``), and that Event is
# what every look shows. (Built only when a look read it, the 1,000-machine world built
# every event twice, a tuple and then its Event, and the looks cost a third of its run:
# measured, least CPU of rotated runs, 0.98 s -> see the commit.)
Record = tuple[str, str, int, str, int | None, bool, bool, bool, int]
#: The fields a ``Record`` holds, in order: ``Event``'s (a test keeps them in step).
RECORD_FIELDS = (
    "type", "status", "timestamp", "source", "exit_code", "oom_killed", "requested_stop",
    "restarting", "restart_count",
)


#: ``tuple.__new__``: a Record has exactly Event's nine fields in order (a test keeps them
#: in step), so ``_event(Event, record)`` is ``Event(*record)`` without the named tuple's
#: Python-level ``__new__`` (measured: ~120 ns against ~240 ns an event).
_event = tuple.__new__


class EventLog:
    """The newest ``cap`` events of one machine; older ones are dropped and counted."""

    __slots__ = ("_view", "_view_at", "appended", "cap", "records")

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"event_log_cap must be at least 1, got {cap}")
        self.cap = cap
        #: The list itself, oldest first. The machine appends its Events to it directly and
        #: adds to ``appended`` (no call per event).
        self.records: deque[Event] = deque(maxlen=cap)
        #: How many events were ever recorded.
        self.appended = 0
        self._view: tuple[Event, ...] = ()
        self._view_at = 0

    def copy(self) -> EventLog:
        """Another log holding the same events (events are immutable: shared)."""
        new = EventLog.__new__(EventLog)
        new.cap = self.cap
        new.records = self.records.copy()
        new.appended = self.appended
        new._view = self._view
        new._view_at = self._view_at
        return new

    def append(self, event: Event) -> None:
        """Record an event; the oldest falls off once the list holds ``cap``."""
        self.records.append(event)
        self.appended += 1

    def record(self, record: Record) -> None:
        """Record an event given as its fields in order."""
        self.append(_event(Event, record))

    @property
    def dropped(self) -> int:
        """How many events fell off the list so far."""
        return self.appended - len(self.records)

    def newest_first(self) -> tuple[Event, ...]:
        """The visible events as the API returns them: newest first.

        The same tuple is handed out until the next event: looks share it, and every view
        holds the Events the machine wrote (none is built here).
        """
        if self.appended != self._view_at:
            self._view = tuple(reversed(self.records))
            self._view_at = self.appended
        return self._view

    def __len__(self) -> int:
        return len(self.records)
