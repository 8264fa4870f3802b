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
takes longer than ``LOOK_TIMEOUT_S`` wall-clock seconds to answer one look, or keeps
asking for looks past ``max_looks`` ends the drive with ``CheckFailed``: its message is the
run's ``error`` outcome, and ``__cause__`` keeps the check's own exception for a traceback
(``--debug``). Only ``Interrupt`` (the driving program's Ctrl-C or SIGTERM) passes through.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import signal
import threading
from collections.abc import Generator, Sequence
from typing import Any

from .model import Look, Verdict, Wait
from .protocol import Check

#: A check that keeps asking for looks without deciding is a broken check, not a slow one.
#: ``TESTBED_MAX_LOOKS`` (the CLI's ``--max-looks``) changes it.
MAX_LOOKS = 10_000
#: Wall-clock seconds one call of a check's ``next`` may take. Assumed: every built-in
#: answers a look in well under a millisecond, a thousand-machine look in under a second.
#: ``TESTBED_CHECK_TIMEOUT_S`` (the CLI's ``--check-timeout``) changes it.
LOOK_TIMEOUT_S = 10.0
LOOKS_ENV, TIMEOUT_ENV = "TESTBED_MAX_LOOKS", "TESTBED_CHECK_TIMEOUT_S"
#: After the limit, the alarm repeats this often, so a check that catches one goes on
#: being interrupted (one that catches every one in a loop cannot be stopped in-process).
_REPEAT_S = 0.05
#: What a Wait's seconds may be (``int | float``, made once: not per step).
_NUMBER = (int, float)


class CheckFailed(Exception):
    """The check could not be driven to a verdict: it raised or broke the protocol."""


class Interrupt(BaseException):
    """Raised by the driving program's signal handlers (Ctrl-C, SIGTERM): it ends the program.

    Anything else a check's ``next`` raises -- a ``KeyboardInterrupt`` or ``SystemExit`` of
    its own included -- is the check's error, not a reason to stop.
    """


class _Overtime(BaseException):
    """The look's wall-clock budget ran out (raised by the SIGALRM handler)."""


def limits(timeout: bool = True) -> tuple[int, float]:
    """The look limit and the per-look wall-clock limit, from the environment if it says.

    The command line validates both (exit 2); a value it could not read falls back to the
    default here, so a driver never fails on it. ``timeout`` False: a drive with no alarm
    to enforce it does not read the wall-clock limit (the default comes back); every
    drive reads the limits, and an unset variable costs a raised and caught KeyError.
    """
    return _parsed_limits(
        os.environ.get(LOOKS_ENV), os.environ.get(TIMEOUT_ENV) if timeout else None
    )


@functools.lru_cache(maxsize=16)
def _parsed_limits(looks_text: str | None, timeout_text: str | None) -> tuple[int, float]:
    # Cached by the raw text: every drive reads the limits, and parsing them cost more
    # than a look of the incident world.
    looks, timeout = MAX_LOOKS, LOOK_TIMEOUT_S
    with contextlib.suppress(ValueError):
        looks = max(1, int(looks_text or MAX_LOOKS))
    with contextlib.suppress(ValueError):
        value = float(timeout_text or LOOK_TIMEOUT_S)
        if math.isfinite(value) and value > 0:
            timeout = value
    return looks, timeout


class _Alarm:
    """A per-call wall-clock limit with ``signal.setitimer`` (SIGALRM) in the main thread.

    Why a signal and not a worker thread: a thread that runs over cannot be stopped, so it
    would go on burning a core (and holding the GIL) beside every later run; SIGALRM
    interrupts the check itself, in ``time.sleep`` as in a busy loop. The limit only ever
    turns a run into ``error``; it never changes a verdict a check gives in time, so runs
    stay deterministic for every check that answers well within it. Where no alarm can be
    used (a thread other than the main one, as in a Dask worker; a platform without
    setitimer; a program with its own SIGALRM handler), checks run without the limit.
    """

    def __init__(self) -> None:
        self.active = False

    def _handler(self, signum: int, frame: Any) -> None:
        if self.active:
            raise _Overtime

    def usable(self) -> bool:
        if not hasattr(signal, "setitimer"):
            return False
        if threading.current_thread() is not threading.main_thread():
            return False
        current = signal.getsignal(signal.SIGALRM)
        if current == self._handler:
            return True
        if current in (signal.SIG_DFL, None):
            signal.signal(signal.SIGALRM, self._handler)
            return True
        return False

    def call(self, check: Check, publish_started_ms: int, looks: Sequence[Look],
             timeout_s: float, usable: bool) -> Any:
        if not usable:
            return check.next(publish_started_ms, looks)
        self.active = True
        signal.setitimer(signal.ITIMER_REAL, timeout_s, _REPEAT_S)
        try:
            return check.next(publish_started_ms, looks)
        finally:
            self.active = False  # first: an alarm from here on is ignored
            signal.setitimer(signal.ITIMER_REAL, 0)


_ALARM = _Alarm()


def call_check(
    check: Check,
    publish_started_ms: int,
    looks: Sequence[Look],
    timeout_s: float,
    alarm: bool | None = None,
) -> Any:
    """One call of ``check.next`` under the wall-clock limit; anything it raises: CheckFailed.

    ``alarm``: whether the SIGALRM limit can be used here (``None``: find out now).
    """
    usable = _ALARM.usable() if alarm is None else alarm
    try:
        return _ALARM.call(check, publish_started_ms, looks, timeout_s, usable)
    except Interrupt:
        raise
    except _Overtime:
        raise CheckFailed(f"check took longer than {timeout_s:g} s to answer look "
                          f"{len(looks)} (the limit: --check-timeout or {TIMEOUT_ENV})") from None
    except BaseException as error:
        raise CheckFailed(_raised(error)) from error


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
    check: Check, publish_started_ms: int, max_looks: int | None = None
) -> Generator[float, Look, Verdict]:
    """Yield how long to wait before each look; receive the look; return the verdict."""
    try:
        getattr(check, "name", None)
    except Interrupt:
        raise
    except BaseException as error:
        raise CheckFailed(f"check's name raised {type(error).__name__}: {error}") from error
    looks: list[Look] = []
    # Once per drive (a drive stays in the thread it started in). The budget is for the
    # user's checks: the built-ins (classes defined in this package) answer in
    # microseconds, and two setitimer calls per look cost more than their answer
    # (measured: ~8 % of the incident world's run).
    alarm = not type(check).__module__.startswith("checks.") and _ALARM.usable()
    env_looks, timeout_s = limits(timeout=alarm)
    max_looks = env_looks if max_looks is None else max_looks
    while True:
        if alarm:
            step = call_check(check, publish_started_ms, looks, timeout_s, True)
        else:
            # No alarm: ``call_check``'s work without its two calls a look.
            try:
                step = check.next(publish_started_ms, looks)
            except Interrupt:
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
            raise CheckFailed(f"check took {max_looks} looks without a verdict (the limit: "
                              f"--max-looks or {LOOKS_ENV})")
        look = yield float(seconds)
        looks.append(look)
