"""Rolling deploys behind a load balancer: drain timing, the watchdog race, counting 502s."""

from sim.rollout.config import RolloutScenario, load
from sim.rollout.result import RolloutResult
from sim.rollout.world import run

__all__ = ["RolloutResult", "RolloutScenario", "load", "run"]
