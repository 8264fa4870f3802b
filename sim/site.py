"""The site as its users see it: which release is live, and what each request gets."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import simpy

from sim.machine import Machine

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


class Site:
    """Routing rule: no live release → 404; a live one with a started machine → served; else 502.

    The site is a timeline of intervals with one outcome each; requests are drawn
    afterwards against it, so traffic costs no simulated process per request.
    """

    def __init__(self, env: simpy.Environment, live: str | None) -> None:
        self.env = env
        self.live = live
        self.ever_live = live is not None
        self._started: set[str] = set()
        self.segments: list[tuple[float, str]] = [(env.now, self._outcome())]

    def machine_changed(self, machine: Machine) -> None:
        """Hook for machines: keep the count of started machines and the timeline current."""
        if machine.state == "started":
            self._started.add(machine.id)
        else:
            self._started.discard(machine.id)
        self._mark()

    def set_live(self, release: str | None) -> None:
        """Mark a release live (or none: the site serves 404)."""
        self.live = release
        self.ever_live = self.ever_live or release is not None
        self._mark()

    def _outcome(self) -> str:
        if self.live is None:
            return NOT_FOUND
        return SERVED if self._started else BAD_GATEWAY

    def _mark(self) -> None:
        outcome = self._outcome()
        if outcome != self.segments[-1][1]:
            self.segments.append((self.env.now, outcome))

    def tally(self, start_s: float, end_s: float, rps: float, rng: random.Random) -> SiteTally:
        """Draw Poisson arrivals over [start_s, end_s) and classify each by the timeline."""
        counts = {SERVED: 0, NOT_FOUND: 0, BAD_GATEWAY: 0}
        bounds = [*self.segments, (end_s, "")]
        down_s = 0.0
        live_seen = False
        for (begin, outcome), (finish, _) in itertools.pairwise(bounds):
            live_seen = live_seen or outcome != NOT_FOUND
            lo, hi = max(begin, start_s), min(finish, end_s)
            # 404s count as downtime only once the site had been up: a first publish's
            # wait is not an outage.
            if hi > lo and outcome == NOT_FOUND and live_seen:
                down_s += hi - lo
        if rps > 0:
            index = 0
            t = start_s + rng.expovariate(rps)
            while t < end_s:
                while bounds[index + 1][0] <= t:
                    index += 1
                counts[bounds[index][1]] += 1
                t += rng.expovariate(rps)
        return SiteTally(
            requests=sum(counts.values()),
            served=counts[SERVED],
            not_found=counts[NOT_FOUND],
            bad_gateway=counts[BAD_GATEWAY],
            down_s=round(down_s, 3),
        )
