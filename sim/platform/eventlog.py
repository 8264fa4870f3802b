"""A machine's event list, capped like the platform's, counting what fell off."""

from __future__ import annotations

from collections import deque
from itertools import islice
from typing import Any

from checks import Event
from sim.platform.profiles import Spec

# An event as the machine records it: ``Event``'s fields in order (timestamp in platform
# ms). It becomes an ``Event`` only if a look reads it, and then only once, with one
# ``Event(*record)``: a crash loop nobody looks at costs a tuple per event.
Record = tuple[str, str, int, str, int | None, bool, bool, bool, int]
#: The fields a ``Record`` holds, in order: ``Event``'s (a test keeps them in step).
RECORD_FIELDS = (
    "type", "status", "timestamp", "source", "exit_code", "oom_killed", "requested_stop",
    "restarting", "restart_count",
)


class EventLog:
    """The newest ``cap`` events of one machine; older ones are dropped and counted."""

    __slots__ = ("_events", "_view", "_view_at", "appended", "cap")

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"event_log_cap must be at least 1, got {cap}")
        self.cap = cap
        # Every entry is a Record: it becomes an Event only when a look reads the list,
        # so a crash loop nobody looks at builds no Event objects.
        self._events: deque[Record] = deque(maxlen=cap)
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
        self._events.append(record)
        self.appended += 1

    def write(
        self,
        specs: tuple[Spec, ...],
        stamp: int,
        exit_fields: tuple[Any, ...],
        keep: list[Event] | None = None,
    ) -> None:
        """Record the events of one transition at ``stamp`` (platform ms), as records.

        ``exit_fields`` fill an exit's fields; ``keep`` (a trace) also gets each as an Event.
        """
        events = self._events
        for kind, status, source, is_exit in specs:
            if is_exit:
                record: Record = (kind, status, stamp, source, *exit_fields)
            else:
                record = (kind, status, stamp, source, None, False, False, False, 0)
            events.append(record)
            if keep is not None:
                keep.append(Event(*record))
        self.appended += len(specs)

    @property
    def dropped(self) -> int:
        """How many events fell off the list so far."""
        return self.appended - len(self._events)

    def newest_first(self) -> tuple[Event, ...]:
        """The visible events as the API returns them: newest first.

        The same tuple is handed out until the next event: looks share it. After new
        events only those are built; the older ones still visible come from the last view.
        """
        new = self.appended - self._view_at
        if new:
            events = self._events
            kept = len(events) - new
            if kept > 0:
                fresh = [Event(*record) for record in islice(reversed(events), new)]
                self._view = tuple(fresh) + self._view[:kept]
            else:
                self._view = tuple([Event(*record) for record in reversed(events)])
            self._view_at = self.appended
        return self._view

    def __len__(self) -> int:
        return len(self._events)
