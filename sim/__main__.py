"""``python -m sim`` is the ``testbed`` command."""

import sys

from sim.launch import main

sys.exit(main())
