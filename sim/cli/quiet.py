"""Signal handlers that end the command at once, quietly: for the time before anything starts.

Standard library only, so the console script (``sim.cli.launch``) installs them before
the CLI loads, and ``sim.cli.parser.main`` keeps them while the line is read; the
model's handlers come with the command.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

_WORD: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


def _quiet_exit(signum: int, frame: object) -> None:
    # Nothing has started yet: nothing to keep or clean up, so end at once, as main would.
    sys.stderr.write(f"testbed: {_WORD.get(signum, 'stopped')}\n")
    sys.stderr.flush()
    os._exit(128 + signum)


def quiet_handlers(previous: dict[int, Any] | None = None) -> dict[int, Any]:
    """Install the quiet handlers (returning those replaced), or put ``previous`` back.

    Main thread only, as ``signal.signal`` is; elsewhere nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        return {}
    if previous is not None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        return previous
    return {s: signal.signal(s, _quiet_exit) for s in _WORD}
