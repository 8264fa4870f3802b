"""Wording shared by the checks' verdict reasons: times after the publish, machine states."""

from __future__ import annotations

from .model import MachineSnapshot, to_s


def since(ms: int, publish_started_ms: int) -> str:
    """Format a platform time as seconds after the publish began."""
    return f"+{to_s(ms - publish_started_ms):.1f} s"


def describe(machine: MachineSnapshot, publish_started_ms: int) -> str:
    """A short account of a machine's state and newest event, for reasons people act on."""
    if not machine.events:
        return f"state {machine.state}, no events"
    newest = machine.events[0]
    what = newest.type
    if newest.type == "exit":
        what = f"exit code {newest.exit_code}" + (" (OOM killed)" if newest.oom_killed else "")
    return f"state {machine.state}, newest event {what} at {since(newest.timestamp, publish_started_ms)}"
