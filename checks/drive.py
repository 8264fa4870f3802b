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

A check that deploys (``checks.protocol.Deploying``) may answer ``Update(machine_ids)``:
``drive_deploying`` yields it to a driver that carries it out (update those machines now,
look in the same instant, send the look); ``drive`` refuses it with ``CheckFailed``, one
line saying why, since its driver cannot update (replay: the recorded deploy already
updated the machines). An ``Update`` needs a non-empty tuple of machine id strings, and
counts as a look against ``max_looks`` (a look follows it).

Pure: no clock, no signal, no environment; the driver chooses ``max_looks``.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import cast

from .model import Look, Update, Verdict, Wait
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
    # With updates off the loop never yields an Update: only floats.
    return cast(Generator[float, Look, Verdict],
                _loop(check, publish_started_ms, max_looks, updates=False))


def drive_deploying(
    check: Check, publish_started_ms: int, max_looks: int = MAX_LOOKS
) -> Generator[float | Update, Look, Verdict]:
    """As ``drive``, and yield each ``Update`` the check asks: carry it out, then look at once."""
    return _loop(check, publish_started_ms, max_looks, updates=True)


def _update(step: Update, updates: bool) -> Update:
    """The check's Update, validated; refused when the driver cannot carry it out."""
    ids = step.machine_ids
    if not isinstance(ids, tuple) or not ids or not all(isinstance(i, str) for i in ids):
        raise CheckFailed(f"check returned {step!r}; an Update needs a non-empty tuple of "
                          "machine id strings")
    if not updates:
        raise CheckFailed(f"check asked to update {', '.join(ids)}, which this driver cannot "
                          "do (a replay's machines were updated by the recorded deploy; a "
                          "check command cannot deploy): run it in the simulator, or with "
                          "rollout = \"at-publish\"")
    return step


class _Absent:
    """A field the result does not have: the class itself is the marker (nothing mutable
    at module level, and no value a user's object can hold is this class by accident)."""


def _same_shape(step: object) -> Verdict | Wait:
    """A result of another module read as ours by its shape: ``ok`` and ``reason`` make a
    Verdict, ``seconds`` a Wait (a vendored copy of this package, or the old top-level
    ``checks``, has classes of its own). Anything else: ``CheckFailed`` naming both
    modules and the import that gives this driver's classes."""
    try:
        ok, reason = getattr(step, "ok", _Absent), getattr(step, "reason", _Absent)
        if ok is not _Absent and reason is not _Absent:
            return Verdict(cast(bool, ok), cast(str, reason), getattr(step, "machine", None),
                           getattr(step, "layer", "") or "", getattr(step, "judged", True))
        seconds = getattr(step, "seconds", _Absent)
        if seconds is not _Absent and not isinstance(step, int | float | str | bytes):
            return Wait(cast(float, seconds))
    except Interrupt:
        raise
    except Exception as error:  # a property of the user's object that raises
        raise CheckFailed(f"check returned {step!r}, whose fields raised "
                          f"{type(error).__name__}: {error}") from error
    ours = Wait.__module__.rpartition(".")[0] or Wait.__module__
    kind = type(step)
    raise CheckFailed(
        f"check returned {step!r} ({kind.__module__}.{kind.__qualname__}); this driver takes "
        f"{Wait.__module__}.Wait(seconds) or {Verdict.__module__}.Verdict(ok, reason), or an "
        f"object of that shape: from {ours} import Verdict, Wait")


def _loop(
    check: Check, publish_started_ms: int, max_looks: int, updates: bool
) -> Generator[float | Update, Look, Verdict]:
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
        if not isinstance(step, Verdict | Update | Wait):
            step = _same_shape(step)
        if isinstance(step, Verdict):
            if not isinstance(step.ok, bool) or not isinstance(step.reason, str):
                raise CheckFailed(f"check returned {step!r}; a Verdict needs ok: bool, reason: str")
            return step
        if isinstance(step, Update):
            asked = _update(step, updates)
            if len(looks) >= max_looks:
                raise CheckFailed(f"check took {max_looks} looks without a verdict (the limit: "
                                  "--max-looks or TESTBED_MAX_LOOKS)")
            looks.append((yield asked))
            continue
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
