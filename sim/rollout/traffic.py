"""Open-loop user requests through the balancer, drawn against the routing timeline."""

from __future__ import annotations

from dataclasses import dataclass

from platform_testbed.sim.platform.traffic import generator


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

    def tally(self, start_s: float, end_s: float, rps: float, seed: int) -> TrafficTally:
        """Poisson requests over [start_s, end_s), each to a target in rotation at random.

        Per segment, one Poisson count and one multinomial split over the targets in
        rotation (each equally likely), drawn from the traffic's own NumPy stream.
        """
        targets = len(self.segments[0].rotation)
        bad = [0] * targets
        served = 0
        rng = generator(seed)
        bounds = [s.at_s for s in self.segments[1:]] + [end_s]
        for segment, finish in zip(self.segments, bounds, strict=True):
            lo, hi = max(segment.at_s, start_s), min(finish, end_s)
            candidates = [i for i, routed in enumerate(segment.rotation) if routed]
            if hi <= lo or rps <= 0 or not candidates:
                continue
            n = int(rng.poisson(rps * (hi - lo)))
            split = rng.multinomial(n, [1.0 / len(candidates)] * len(candidates)).tolist()
            for target, count in zip(candidates, split, strict=True):
                if segment.listening[target]:
                    served += count
                else:
                    bad[target] += count
        return TrafficTally(served + sum(bad), served, sum(bad), tuple(bad))
