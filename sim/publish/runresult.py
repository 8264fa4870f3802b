"""What a run of one world returns: the verdict, the looks, the site's tally, a trace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from platform_testbed.checks import Event, Look, Verdict
from platform_testbed.sim.config.scenario import Outcome
from platform_testbed.sim.publish.site import SiteTally


class RecordedLook(NamedTuple):
    """A look as the check saw it, plus what the platform hid from it (dropped events)."""

    look: Look
    dropped: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MachineTrace:
    """Everything one machine did in a run: state changes and every event, none dropped."""

    id: str
    states: tuple[tuple[float, str], ...]
    events: tuple[Event, ...]


@dataclass(frozen=True, slots=True)
class Trace:
    """The full story of a run, for timelines: times in simulated seconds from 0."""

    publish_at_s: float
    horizon_s: float
    epoch_ms: int
    machines: tuple[MachineTrace, ...]
    site: tuple[tuple[float, str], ...]
    previous_image: str | None
    release_image: str


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one check concluded in one world, and what that cost the site."""

    check: str
    seed: int
    verdict: Verdict | None
    decided_at_s: float | None
    rollback: str | None
    late_failure_at_s: float | None
    site: SiteTally
    looks: tuple[RecordedLook, ...]
    bad: bool
    error: str | None = None
    #: The traceback of the check's own exception, when it raised (``--debug`` shows it).
    error_detail: str | None = None
    trace: Trace | None = None

    @property
    def outcome(self) -> Outcome:
        """caught / missed / passed / false_alarm, against the behaviour's ground truth."""
        if self.error is not None:
            return "error"
        if self.verdict is None:
            return "undecided"
        if not self.verdict.judged:
            return "blind"
        if self.bad:
            return "missed" if self.verdict.ok else "caught"
        return "passed" if self.verdict.ok else "false_alarm"
