"""Signals for the command line: Ctrl-C and SIGTERM end a command, whatever a check does.

Both become ``checks.drive.Interrupt`` subclasses, which the check driver lets through,
while a ``KeyboardInterrupt`` a user's check raises itself is that check's ``error``.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from checks.drive import Interrupt


class Terminated(Interrupt):
    """SIGTERM arrived: end the command as Ctrl-C would, with the shell's status 143."""


class Interrupted(Interrupt, KeyboardInterrupt):
    """The user's Ctrl-C: unlike a KeyboardInterrupt a check raises, it ends the command."""


def exit_on_signals() -> Any:
    """SIGTERM -> ``Terminated``, SIGINT -> ``Interrupted`` (main thread only).

    Both are ``checks.drive.Interrupt``, which the check driver lets through, so a signal
    arriving while a check runs still ends the command. Returns the handlers replaced.
    """
    if threading.current_thread() is not threading.main_thread():
        return None

    def terminated(signum: int, frame: object) -> None:
        raise Terminated

    def interrupted(signum: int, frame: object) -> None:
        raise Interrupted

    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted)
    return signal.signal(signal.SIGTERM, terminated), previous_int


def restore_signals(previous: Any) -> None:
    """Put back the handlers ``exit_on_signals`` replaced."""
    if previous is not None:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
