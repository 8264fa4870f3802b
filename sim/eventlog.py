"""A machine's event list, capped like the platform's, counting what fell off."""

from __future__ import annotations

from collections import deque

from checks import Event

# An event as the machine records it: the arguments of ``Event`` in field order. It
# becomes an ``Event`` only if a look reads it, and then only once.
Record = tuple[str, str, int, str, int | None, bool, bool, bool, int]


class EventLog:
    """The newest ``cap`` events of one machine; older ones are dropped and counted."""

    __slots__ = ("_events", "_view", "_view_at", "appended", "cap")

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"event_log_cap must be at least 1, got {cap}")
        self.cap = cap
        # Each entry is [Event or None, Record or None]: the record is kept until a look
        # needs the Event, so a crash loop nobody looks at builds no Event objects.
        self._events: deque[list[object]] = deque(maxlen=cap)
        self.appended = 0
        self._view: tuple[Event, ...] = ()
        self._view_at = 0

    def append(self, event: Event) -> None:
        """Record an event; the oldest falls off once the list holds ``cap``."""
        self._events.append([event, None])
        self.appended += 1

    def record(self, record: Record) -> None:
        """Record an event given as its ``Event`` arguments (built when first read)."""
        self._events.append([None, record])
        self.appended += 1

    @property
    def dropped(self) -> int:
        """How many events fell off the list so far."""
        return self.appended - len(self._events)

    def newest_first(self) -> tuple[Event, ...]:
        """The visible events as the API returns them: newest first."""
        if self._view_at != self.appended:
            view = []
            for entry in reversed(self._events):
                event = entry[0]
                if event is None:
                    event = entry[0] = Event(*entry[1])  # type: ignore[misc]
                    entry[1] = None
                view.append(event)
            # The same tuple is handed out until the next event: looks share it.
            self._view = tuple(view)  # type: ignore[arg-type]
            self._view_at = self.appended
        return self._view

    def __len__(self) -> int:
        return len(self._events)
