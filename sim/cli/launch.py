"""The ``testbed`` console script: quiet on Ctrl-C or SIGTERM from its first instruction.

``sim.cli.parser.main`` turns a signal into exit 130 or 143 with one line, but only once its
module is imported; a signal during that import (tens of milliseconds) would print
Python's ``KeyboardInterrupt`` traceback, or die silently with -15. Standard library
only, so these handlers are in place before anything heavy loads.
"""

from __future__ import annotations

import sys

from platform_testbed.sim.cli.quiet import quiet_handlers


def main() -> int:
    """Import the CLI under quiet handlers, then hand over to ``sim.cli.parser.main``."""
    previous = quiet_handlers()
    from platform_testbed.sim.cli.parser import main as run  # noqa: PLC0415 -- the import these handlers cover

    quiet_handlers(previous)  # main installs its own first thing
    return run()


if __name__ == "__main__":
    sys.exit(main())
