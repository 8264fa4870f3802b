"""Open-loop user requests through the balancer, drawn against the routing timeline."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Segment:
    """From ``at_s`` on: which targets are in rotation and which are listening."""

    at_s: float
    rotation: tuple[bool, ...]
    listening: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class TrafficTally:
    """What the users' requests got: served, or 502 (routed to a target not listening)."""

    requests: int
    served: int
    bad_gateway: int
    bad_gateway_by_target: tuple[int, ...]


class RoutingTimeline:
    """The routing state as a list of segments; traffic is drawn afterwards, per request."""

    def __init__(self, rotation: tuple[bool, ...], listening: tuple[bool, ...]) -> None:
        self.segments = [Segment(0.0, rotation, listening)]

    def mark(self, at_s: float, rotation: tuple[bool, ...], listening: tuple[bool, ...]) -> None:
        """Record the state from ``at_s`` on (a change at the same instant replaces the last)."""
        last = self.segments[-1]
        if (rotation, listening) == (last.rotation, last.listening):
            return
        if at_s == last.at_s:
            self.segments.pop()
        self.segments.append(Segment(at_s, rotation, listening))

    def tally(self, start_s: float, end_s: float, rps: float, rng: random.Random) -> TrafficTally:
        """Poisson arrivals over [start_s, end_s); each goes to a random target in rotation."""
        targets = len(self.segments[0].rotation)
        bad = [0] * targets
        served = 0
        if rps > 0:
            index = 0
            t = start_s + rng.expovariate(rps)
            while t < end_s:
                while index + 1 < len(self.segments) and self.segments[index + 1].at_s <= t:
                    index += 1
                segment = self.segments[index]
                candidates = [i for i, routed in enumerate(segment.rotation) if routed]
                chosen = candidates[rng.randrange(len(candidates))]
                if segment.listening[chosen]:
                    served += 1
                else:
                    bad[chosen] += 1
                t += rng.expovariate(rps)
        return TrafficTally(served + sum(bad), served, sum(bad), tuple(bad))
