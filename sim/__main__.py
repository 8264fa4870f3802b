"""``python -m platform_testbed.sim`` is the ``testbed`` command (so is ``python -m platform_testbed``)."""

import sys

from platform_testbed.sim.cli.launch import main

sys.exit(main())
