"""One server's deploy seen against the balancer: when it drained, stopped, left rotation."""

from __future__ import annotations

from dataclasses import dataclass

from platform_testbed.sim.rollout.result import RolloutResult
from platform_testbed.sim.rollout.server import HealthAnswer


@dataclass(frozen=True, slots=True)
class ServerTimeline:
    """Key instants of one server's update and the balancer's probes of it (seconds)."""

    server: str
    drain_at_s: float
    stop_listening_at_s: float
    exited_at_s: float
    listening_again_at_s: float | None
    out_of_rotation_at_s: float | None
    back_in_rotation_at_s: float | None
    probes: tuple[tuple[float, HealthAnswer], ...]
    bad_gateway: int

    @property
    def bad_gateway_window(self) -> tuple[float, float] | None:
        """When requests routed here found no listener: from stop-listening until the
        balancer took the server out of rotation or the new api listened, if that is later."""
        ends = [t for t in (self.out_of_rotation_at_s, self.listening_again_at_s) if t is not None]
        end = min(ends) if ends else None
        if end is None or end <= self.stop_listening_at_s:
            return None
        return self.stop_listening_at_s, end


def server_timeline(result: RolloutResult, index: int) -> ServerTimeline:
    """The timeline of the ``index``-th server (0-based) in one run."""
    step = result.trace.steps[index]
    segments = [s for s in result.trace.segments if s.at_s >= step.drain_at_s]
    listening_again = next(
        (s.at_s for s in segments if s.at_s > step.exited_at_s and s.listening[index]), None
    )
    out = next((s.at_s for s in segments if not s.rotation[index]), None)
    back = (
        next((s.at_s for s in segments if s.at_s > out and s.rotation[index]), None)
        if out is not None
        else None
    )
    return ServerTimeline(
        server=step.server,
        drain_at_s=step.drain_at_s,
        stop_listening_at_s=step.stop_listening_at_s,
        exited_at_s=step.exited_at_s,
        listening_again_at_s=listening_again,
        out_of_rotation_at_s=out,
        back_in_rotation_at_s=back,
        probes=tuple((p.at_s, p.answer) for p in result.trace.probes if p.target == index),
        bad_gateway=result.servers[index].bad_gateway,
    )
