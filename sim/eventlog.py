"""A machine's event list, capped like the platform's, counting what fell off."""

from __future__ import annotations

from collections import deque

from checks import Event


class EventLog:
    """The newest ``cap`` events of one machine; older ones are dropped and counted."""

    __slots__ = ("_events", "appended", "cap")

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"event_log_cap must be at least 1, got {cap}")
        self.cap = cap
        self._events: deque[Event] = deque(maxlen=cap)
        self.appended = 0

    def append(self, event: Event) -> None:
        """Record an event; the oldest falls off once the list holds ``cap``."""
        self._events.append(event)
        self.appended += 1

    @property
    def dropped(self) -> int:
        """How many events fell off the list so far."""
        return self.appended - len(self._events)

    def newest_first(self) -> tuple[Event, ...]:
        """The visible events as the API returns them: newest first."""
        return tuple(reversed(self._events))

    def __len__(self) -> int:
        return len(self._events)
