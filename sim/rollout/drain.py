"""How a container stops: SIGTERM starts the drain, the runtime force-kills at the grace period."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StopPlan:
    """Seconds after the drain began at which the api stops listening and the container exits."""

    stop_listening_s: float
    exit_s: float
    force_killed: bool


def stop_plan(
    serve_after_drain_s: float, shutdown_s: float, stop_grace_period_s: float
) -> StopPlan:
    """The stop sequence: serve, shut down, or be killed when the grace period runs out."""
    natural_exit_s = serve_after_drain_s + shutdown_s
    if natural_exit_s <= stop_grace_period_s:
        return StopPlan(serve_after_drain_s, natural_exit_s, force_killed=False)
    # The kill cuts everything short, the serving window included.
    return StopPlan(
        min(serve_after_drain_s, stop_grace_period_s), stop_grace_period_s, force_killed=True
    )
