"""A machine's event list, capped like the platform's, counting what fell off."""

from __future__ import annotations

from collections import deque
from itertools import islice

from platform_testbed.checks.model import Event

# An event as the machine records it: ``Event``'s fields in order (timestamp in platform
# ms). It becomes an ``Event`` only if a look reads it, and then only once, with one
# ``Event(*record)`` (built as ``_event(Event, record)``, the same tuple): a crash loop
# nobody looks at costs a tuple per event.
Record = tuple[str, str, int, str, int | None, bool, bool, bool, int]
#: The fields a ``Record`` holds, in order: ``Event``'s (a test keeps them in step).
RECORD_FIELDS = (
    "type", "status", "timestamp", "source", "exit_code", "oom_killed", "requested_stop",
    "restarting", "restart_count",
)


#: ``tuple.__new__``: a Record has exactly Event's nine fields in order (a test keeps them
#: in step), so ``_event(Event, record)`` is ``Event(*record)`` without the named tuple's
#: Python-level ``__new__`` (measured: ~120 ns against ~240 ns an event; a look builds
#: every event that is new since the last look).
_event = tuple.__new__


class EventLog:
    """The newest ``cap`` events of one machine; older ones are dropped and counted."""

    __slots__ = ("_view", "_view_at", "appended", "cap", "records")

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"event_log_cap must be at least 1, got {cap}")
        self.cap = cap
        #: The list itself, oldest first. Every entry is a Record: it becomes an Event only
        #: when a look reads the list, so a crash loop nobody looks at builds no Events.
        #: The machine appends to it directly and adds to ``appended`` (no call per event).
        self.records: deque[Record] = deque(maxlen=cap)
        #: How many events were ever recorded.
        self.appended = 0
        self._view: tuple[Event, ...] = ()
        self._view_at = 0

    def append(self, event: Event) -> None:
        """Record an event; the oldest falls off once the list holds ``cap``."""
        self.record(
            (
                event.type, event.status, event.timestamp, event.source, event.exit_code,
                event.oom_killed, event.requested_stop, event.restarting, event.restart_count,
            )
        )

    def record(self, record: Record) -> None:
        """Record an event given as a ``Record`` (the ``Event`` is built when first read)."""
        self.records.append(record)
        self.appended += 1

    @property
    def dropped(self) -> int:
        """How many events fell off the list so far."""
        return self.appended - len(self.records)

    def newest_first(self) -> tuple[Event, ...]:
        """The visible events as the API returns them: newest first.

        The same tuple is handed out until the next event: looks share it. After new
        events only those are built; the older ones still visible come from the last view.
        """
        new = self.appended - self._view_at
        if new:
            events = self.records
            kept = len(events) - new
            if kept > 0:
                fresh = [_event(Event, record) for record in islice(reversed(events), new)]
                self._view = tuple(fresh) + self._view[:kept]
            else:
                self._view = tuple([_event(Event, record) for record in reversed(events)])
            self._view_at = self.appended
        return self._view

    def __len__(self) -> int:
        return len(self.records)
