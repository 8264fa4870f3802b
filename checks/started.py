"""The phase every platform check opens with: poll until every machine reads started."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from .model import Look, Verdict, Wait, in_ms, to_s
from .reasons import describe


class AwaitsStart(Protocol):
    """A check that opens by polling, every ``poll_s``, until every machine reads started.

    A machine not started ``start_timeout_s`` after the publish began fails the check, with
    a reason that begins with the check's ``name``.
    """

    @property
    def name(self) -> str: ...
    @property
    def start_timeout_s(self) -> float: ...
    @property
    def poll_s(self) -> float: ...


def wait_at_least(seconds: float) -> Wait:
    """Wait ``seconds`` rounded up to a whole millisecond (at least one), the clock's tick.

    A wait a fraction of a millisecond short of a deadline would take the next look at
    the same millisecond, still short of it, and again, forever.
    """
    return Wait(to_s(max(1, math.ceil(round(in_ms(seconds), 6)))))


def first_all_started(looks: Sequence[Look]) -> int | None:
    """The index of the first look in which every machine reads ``started``, if any."""
    # Loops, not ``next``/``all`` over generators: checks call this at every look, and
    # the two generators cost ~0.9 us a call against ~0.2 us (an incident world's run
    # calls it four times).
    for i, look in enumerate(looks):
        for machine in look.machines:
            if machine.state != "started":
                break
        else:
            return i
    return None


def await_started(check: AwaitsStart, publish_started_ms: int, looks: Sequence[Look]) -> Wait | Verdict | int:
    """The index of the first all-started look, or the next poll, or the start-timeout verdict."""
    if not looks:
        return Wait(0.0)
    found = first_all_started(looks)
    if found is not None:
        return found
    return awaiting(check, publish_started_ms, looks[-1])


def awaiting(check: AwaitsStart, publish_started_ms: int, latest: Look) -> Wait | Verdict:
    """Not every machine has read started in one look yet: the next poll, or the timeout."""
    waited_s = to_s(latest.at_ms - publish_started_ms)
    if waited_s >= check.start_timeout_s:
        waiting = next(m for m in latest.machines if m.state != "started")
        return Verdict(
            False,
            f"{check.name}: machine {waiting.id} never read started within "
            f"{check.start_timeout_s:g} s of the publish ({describe(waiting, publish_started_ms)}); "
            "check the image's start command and boot time",
            waiting.id,
            layer="start-timeout",
        )
    return wait_at_least(min(check.poll_s, check.start_timeout_s - waited_s))
