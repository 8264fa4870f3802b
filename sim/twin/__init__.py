"""The simulated platform behind Fly's Machines API: one world, served over HTTP on the wall clock."""

from platform_testbed.sim.twin.app import ApiError, ServedApp
from platform_testbed.sim.twin.clock import Driver
from platform_testbed.sim.twin.server import HOST, TwinServer

__all__ = ["HOST", "ApiError", "Driver", "ServedApp", "TwinServer"]
