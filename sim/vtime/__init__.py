"""Virtual time for real processes: an ``LD_PRELOAD`` clock, the file it shares, the tree it runs in."""

from platform_testbed.sim.vtime.build import Unavailable, library_path
from platform_testbed.sim.vtime.shared import ENV, SharedClock
from platform_testbed.sim.vtime.sockets import PortProbe
from platform_testbed.sim.vtime.tree import ProcessTree, Sample, sample_threads

__all__ = ["ENV", "PortProbe", "ProcessTree", "Sample", "SharedClock", "Unavailable", "library_path",
           "sample_threads"]
