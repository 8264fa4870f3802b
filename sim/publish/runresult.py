"""What a run of one world returns: the verdict, the looks, the site's tally, a trace."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from platform_testbed.checks import Event, Look, Verdict
from platform_testbed.sim.config.scenario import Outcome, Scenario
from platform_testbed.sim.publish.site import Site, SiteTally


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


class Ran(Protocol):
    """What a result reads of the world it ran in (``sim.publish.world.World`` is one)."""

    scenario: Scenario
    seed: int
    site: Site
    traffic_seed: int
    rollback: str | None
    late_failure_at_s: float | None

    @property
    def publish_at_s(self) -> float:
        """When the publish began (simulated seconds)."""


def result_in(
    world: Ran,
    check: str,
    *,
    verdict: Verdict | None,
    decided_at_s: float | None,
    looks: Sequence[RecordedLook],
    bad: bool,
    error: str | None = None,
    error_detail: str | None = None,
    trace: Trace | None = None,
    seed: int | None = None,
    site: SiteTally | None = None,
) -> RunResult:
    """``check``'s result in the simulated ``world``: the one place a ``RunResult`` is made.

    What the world did (its rollback, its late failure, the site's traffic from the
    publish to the horizon) is read here; what the check did (its verdict, when, its
    looks, its error) is the caller's. ``site``: the tally when the caller has it (a
    shared world's, once for all its checks); ``seed``: when it is not the world's.
    """
    if site is None:
        scenario = world.scenario
        site = world.site.tally(world.publish_at_s, scenario.horizon_s, scenario.traffic.rps,
                                world.traffic_seed)
    return RunResult(
        check=check,
        seed=world.seed if seed is None else seed,
        verdict=verdict,
        decided_at_s=decided_at_s,
        rollback=world.rollback,
        late_failure_at_s=world.late_failure_at_s,
        site=site,
        looks=tuple(looks),
        bad=bad,
        error=error,
        error_detail=error_detail,
        trace=trace,
    )
