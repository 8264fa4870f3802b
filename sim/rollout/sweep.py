"""502s over a grid of serve-after-drain times and health-check intervals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from platform_testbed.sim.rollout.config import RolloutScenario
from platform_testbed.sim.rollout.world import run


@dataclass(frozen=True, slots=True)
class Grid:
    """Mean 502s per deploy: ``mean[i][j]`` for ``intervals_s[i]`` and ``serves_s[j]``."""

    serves_s: tuple[float, ...]
    intervals_s: tuple[float, ...]
    unhealthy_threshold: int
    mean: tuple[tuple[float, ...], ...]


def bad_gateway_grid(
    scenario: RolloutScenario,
    serves_s: Sequence[float],
    intervals_s: Sequence[float],
    seeds: Sequence[int],
) -> Grid:
    """Run the scenario for every (interval, serve) pair and seed; average the 502 counts."""
    rows = []
    for interval in intervals_s:
        row = []
        for serve in serves_s:
            variant = scenario.model_copy(
                update={
                    "balancer": scenario.balancer.model_copy(update={"interval_s": interval}),
                    "deploy": scenario.deploy.model_copy(
                        update={
                            "serve_after_drain_s": serve,
                            # Keep the kill out of the picture: this grid is about the drain.
                            "stop_grace_period_s": max(
                                scenario.deploy.stop_grace_period_s,
                                serve + scenario.deploy.shutdown_s,
                            ),
                        }
                    ),
                }
            )
            counts = [run(variant, seed).bad_gateway for seed in seeds]
            row.append(sum(counts) / len(counts))
        rows.append(tuple(row))
    return Grid(
        tuple(serves_s), tuple(intervals_s), scenario.balancer.unhealthy_threshold, tuple(rows)
    )
