"""Rolling deploys behind a load balancer: drain timing, the watchdog race, counting 502s."""

from platform_testbed.sim.rollout.config import RolloutScenario, load
from platform_testbed.sim.rollout.result import RolloutResult
from platform_testbed.sim.rollout.world import run

__all__ = ["RolloutResult", "RolloutScenario", "load", "run"]
