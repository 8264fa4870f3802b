"""Events are written as their fields in order (``tuple.__new__(Event, record)``): the
layout must stay Event's."""

from __future__ import annotations

from platform_testbed.checks import Event
from platform_testbed.sim.platform.eventlog import RECORD_FIELDS, EventLog


def test_record_fields_are_events_fields_in_order() -> None:
    """A field added to or moved in ``Event`` must be mirrored in the machine's records."""
    assert Event._fields == RECORD_FIELDS


def test_a_look_shows_the_written_events_and_shares_the_older_ones() -> None:
    """Written records read back as Events; the view after more records holds the same older
    Events (no copy), and is handed out again until the next event."""
    log = EventLog(3)
    log.record(("start", "started", 1000, "flyd", None, False, False, False, 0))
    first = log.newest_first()
    assert first == (Event("start", "started", 1000),)
    log.record(("exit", "stopped", 3500, "flyd", 1, False, False, True, 0))
    log.append(Event("update", "replaced", 4000))
    second = log.newest_first()
    assert second == (
        Event("update", "replaced", 4000),
        Event("exit", "stopped", 3500, exit_code=1, restarting=True),
        Event("start", "started", 1000),
    )
    assert second[2] is first[0]
    assert log.newest_first() is second
    for at in (5000, 6000, 7000, 8000):
        log.record(("start", "started", at, "flyd", None, False, False, False, 0))
    assert [e.timestamp for e in log.newest_first()] == [8000, 7000, 6000]
    assert log.dropped == 4
