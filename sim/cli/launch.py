"""The ``testbed`` console script: quiet on Ctrl-C or SIGTERM from its first instruction.

``sim.cli.parser.main`` turns a signal into exit 130 or 143 with one line, but only once its
module is imported; a signal during that import (tens of milliseconds) would print
Python's ``KeyboardInterrupt`` traceback, or die silently with -15. Standard library
only, so these handlers are in place before anything heavy loads.
"""

from __future__ import annotations

import os
import signal
import sys

_WORD: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


def _quiet_exit(signum: int, frame: object) -> None:
    # Nothing has started yet: nothing to keep or clean up, so end at once, as main would.
    sys.stderr.write(f"testbed: {_WORD.get(signum, 'stopped')}\n")
    sys.stderr.flush()
    os._exit(128 + signum)


def main() -> int:
    """Import the CLI under quiet handlers, then hand over to ``sim.cli.parser.main``."""
    previous = {s: signal.signal(s, _quiet_exit) for s in _WORD}
    from platform_testbed.sim.cli.parser import main as run  # noqa: PLC0415 -- the import these handlers cover

    for signum, handler in previous.items():
        signal.signal(signum, handler)  # main installs its own first thing
    return run()


if __name__ == "__main__":
    sys.exit(main())
