"""The one loop that drives any check: ask, wait, look, validate every step.

Every driver uses it -- the simulator, replay of a recording, the test kit, a check
running as a subprocess -- so a check's steps are validated once, the same way::

    steps = drive(check, publish_started_ms)
    wait = next(steps)                    # seconds to wait before the first look
    while True:
        ...wait ``wait`` seconds, take a look...
        try:
            wait = steps.send(look)
        except StopIteration as done:
            verdict = done.value          # the check's Verdict
            break

A check that raises anything (``KeyboardInterrupt`` and ``SystemExit`` included), whose
``name`` raises, that returns anything but ``Wait(finite seconds >= 0)`` or a ``Verdict``,
or keeps asking for looks past ``max_looks`` ends the drive with ``CheckFailed``: its
message is the run's ``error`` outcome, and ``__cause__`` keeps the check's own exception
for a traceback (``--debug``). Only ``Interrupt`` (the driving program's Ctrl-C or SIGTERM)
passes through, and a ``CheckFailed`` raised while the check answers passes as it is: that
is how a driver's wrapper around a check (the simulator's wall-clock budget on a user's
check, ``sim.checkload.budget``) says why the check failed.

Pure: no clock, no signal, no environment; the driver chooses ``max_looks``.
"""

from __future__ import annotations

import math
from collections.abc import Generator

from .model import Look, Verdict, Wait
from .protocol import Check

#: A check that keeps asking for looks without deciding is a broken check, not a slow one.
#: The default ``max_looks`` of a drive (the testbed's ``--max-looks`` changes it).
MAX_LOOKS = 10_000
#: What a Wait's seconds may be (``int | float``, made once: not per step).
_NUMBER = (int, float)


class CheckFailed(Exception):
    """The check could not be driven to a verdict: it raised or broke the protocol."""


class Interrupt(BaseException):
    """Raised by the driving program's signal handlers (Ctrl-C, SIGTERM): it ends the program.

    Anything else a check's ``next`` raises -- a ``KeyboardInterrupt`` or ``SystemExit`` of
    its own included -- is the check's error, not a reason to stop.
    """


def _raised(error: BaseException) -> str:
    return f"check raised {type(error).__name__}: {error}"


def check_name(check: object) -> str:
    """The check's ``name``, or its type's name when it has none (or it cannot be read)."""
    try:
        name = getattr(check, "name", None)
    except Exception:  # a user's property may raise anything; the type still names it
        name = None
    return name if isinstance(name, str) and name else type(check).__name__


def drive(
    check: Check, publish_started_ms: int, max_looks: int = MAX_LOOKS
) -> Generator[float, Look, Verdict]:
    """Yield how long to wait before each look; receive the look; return the verdict."""
    try:
        getattr(check, "name", None)
    except Interrupt:
        raise
    except BaseException as error:
        raise CheckFailed(f"check's name raised {type(error).__name__}: {error}") from error
    looks: list[Look] = []
    while True:
        try:
            step = check.next(publish_started_ms, looks)
        except (Interrupt, CheckFailed):
            raise
        except BaseException as error:
            raise CheckFailed(_raised(error)) from error
        if isinstance(step, Verdict):
            if not isinstance(step.ok, bool) or not isinstance(step.reason, str):
                raise CheckFailed(f"check returned {step!r}; a Verdict needs ok: bool, reason: str")
            return step
        if not isinstance(step, Wait):
            raise CheckFailed(f"check returned {step!r}; expected Wait(seconds) or Verdict")
        seconds = step.seconds
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, _NUMBER)
            or not math.isfinite(seconds)
            or seconds < 0
        ):
            raise CheckFailed(f"check returned {step!r}; a Wait needs finite seconds >= 0")
        if len(looks) >= max_looks:
            # The flag and variable the testbed reads it from (a vendored copy: its own).
            raise CheckFailed(f"check took {max_looks} looks without a verdict (the limit: "
                              "--max-looks or TESTBED_MAX_LOOKS)")
        look = yield float(seconds)
        looks.append(look)
