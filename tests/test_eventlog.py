"""The capped event list against a plain list model."""

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from platform_testbed.checks import Event
from platform_testbed.sim.platform.eventlog import EventLog


class CappedEventList(RuleBasedStateMachine):
    """Every append keeps the newest ``cap`` events, newest first, and counts what fell off."""

    @initialize(cap=st.integers(1, 8))
    def make(self, cap: int) -> None:
        self.log = EventLog(cap)
        self.model: list[Event] = []
        self.clock = 0

    @rule(kind=st.sampled_from(["start", "exit", "update", "launch"]), gap=st.integers(0, 5_000))
    def append(self, kind: str, gap: int) -> None:
        self.clock += gap
        event = Event(kind, "x", self.clock)
        self.log.append(event)
        self.model.append(event)

    @invariant()
    def holds_at_most_cap(self) -> None:
        assert len(self.log) <= self.log.cap

    @invariant()
    def shows_the_newest_cap_events_newest_first(self) -> None:
        assert self.log.newest_first() == tuple(reversed(self.model[-self.log.cap :]))

    @invariant()
    def counts_what_fell_off(self) -> None:
        assert self.log.dropped == max(0, len(self.model) - self.log.cap)


TestCappedEventList = CappedEventList.TestCase


def test_cap_below_one_is_refused():
    """A cap of 0 is not a platform: the constructor says so."""
    with pytest.raises(ValueError, match="event_log_cap"):
        EventLog(0)
