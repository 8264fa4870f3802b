"""Hand-built events for the exact check tests: times in ms after the publish at ``T0``."""

from __future__ import annotations

from platform_testbed.checks.model import Event, Verdict

T0 = 1_000_000


def start(t: int) -> Event:
    """A start ``t`` ms after the publish."""
    return Event("start", "started", T0 + t)


def crash(t: int, count: int = 0, restarting: bool = True, code: int | None = 1) -> Event:
    """A crash exit ``t`` ms after the publish."""
    return Event("exit", "stopped", T0 + t, exit_code=code, restarting=restarting, restart_count=count)


def decided(step: object) -> Verdict:
    """The step, which must be a verdict."""
    assert isinstance(step, Verdict), step
    return step
