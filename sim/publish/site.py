"""The site as its users see it: which release is live, and what each request gets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from platform_testbed.sim.platform.serving import Serving
from platform_testbed.sim.platform.traffic import requests_per_segment

if TYPE_CHECKING:
    import simpy

SERVED, NOT_FOUND, BAD_GATEWAY = "served", "not_found", "bad_gateway"
# Machine states in which the machine is neither up nor on its way up.
DOWN_STATES = frozenset({"stopped", "failed", "destroyed"})


@dataclass(frozen=True, slots=True)
class SiteTally:
    """What the traffic got from the publish onwards, and how long the site served 404."""

    requests: int
    served: int
    not_found: int
    bad_gateway: int
    down_s: float


class Site(Serving):
    """Routing rule: no live release -> 404; a live one with a started machine -> served; else 502.

    The site is a timeline of intervals with one outcome each; requests are counted
    afterwards per interval (``tally``), so traffic costs no simulated process.
    """

    __slots__ = ("env", "ever_live", "live", "segments")

    def __init__(self, env: simpy.Environment, live: str | None) -> None:
        self.env = env
        self.live = live
        self.ever_live = live is not None
        #: The site is the count of the app's machines that read started (``Serving``):
        #: they keep it current (``Machine.serving``) and it marks the change.
        super().__init__()
        self.segments: list[tuple[float, str]] = [(env.now, self._outcome())]

    def set_live(self, release: str | None) -> None:
        """Mark a release live (or none: the site serves 404)."""
        self.live = release
        self.ever_live = self.ever_live or release is not None
        self.changed()

    @property
    def serving(self) -> bool:
        """True when some machine of the fleet reads started."""
        return self.count > 0

    def _outcome(self) -> str:
        if self.live is None:
            return NOT_FOUND
        return SERVED if self.count else BAD_GATEWAY

    def changed(self) -> None:
        """Mark the outcome from now on if it differs from the last one.

        Called when the count becomes 0 or 1 (``Serving``) and when the live release changes.
        """
        # ``_outcome`` inlined: in a one-machine crash loop this runs at every start and crash.
        outcome = (
            NOT_FOUND if self.live is None else SERVED if self.count else BAD_GATEWAY
        )
        if outcome != self.segments[-1][1]:
            self.segments.append((self.env.now, outcome))

    def tally(self, start_s: float, end_s: float, rps: float, seed: int) -> SiteTally:
        """Requests over [start_s, end_s) per outcome; 404 time once the site had been up.

        Requests are counted per outcome, over the total time the site gave that outcome
        (a Poisson process's counts depend only on the lengths).
        """
        time_in = dict.fromkeys((SERVED, NOT_FOUND, BAD_GATEWAY), 0.0)
        down_s = 0.0
        live_seen = False
        segments = self.segments
        ends = [begin for begin, _ in segments[1:]]
        ends.append(end_s)
        for (begin, outcome), finish in zip(segments, ends, strict=True):
            live_seen = live_seen or outcome != NOT_FOUND
            lo = begin if begin > start_s else start_s
            hi = finish if finish < end_s else end_s
            if hi > lo:
                time_in[outcome] += hi - lo
                # 404s count as downtime only once the site had been up: a first
                # publish's wait is not an outage.
                if outcome == NOT_FOUND and live_seen:
                    down_s += hi - lo
        served, not_found, bad_gateway = requests_per_segment(seed, rps, list(time_in.values()))
        return SiteTally(
            requests=served + not_found + bad_gateway,
            served=served,
            not_found=not_found,
            bad_gateway=bad_gateway,
            down_s=round(down_s, 3),
        )
