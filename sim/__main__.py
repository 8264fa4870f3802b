"""``python -m sim`` is the ``testbed`` command."""

import sys

from sim.cli import main

sys.exit(main())
