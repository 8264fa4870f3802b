"""The drive's two ways of calling a check: built-ins directly, user checks under the alarm.

Exact, hand-built cases (no simulator): a built-in check (a class of this package) is
called with no wall-clock alarm and no call through ``call_check``; what it raises
must still end the drive the same way, and only the look limit is read for it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from platform_testbed.checks.drive import LOOK_TIMEOUT_S, CheckFailed, Interrupt, call_check, drive, limits
from platform_testbed.checks.model import Look, Verdict, Wait
from tests.exact_events import T0


class _Raises:
    """A check that raises ``error`` at its first call."""

    name = "raises"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Wait:
        raise self.error


class _BuiltinRaises(_Raises):
    """The same, as if defined in this package: driven with no alarm."""


_BuiltinRaises.__module__ = "checks.fake"


class _Sleeps:
    """A user check that takes ``seconds`` of wall-clock time to answer, then waits 1 s."""

    name = "sleeps"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Wait | Verdict:
        time.sleep(self.seconds)
        return Wait(1)


class _BuiltinSleeps(_Sleeps):
    """The same, as if defined in this package: no alarm stops it."""


_BuiltinSleeps.__module__ = "checks.fake"


@pytest.mark.parametrize("check_type", [_Raises, _BuiltinRaises])
def test_what_a_check_raises_ends_the_drive_with_its_cause(check_type: type[_Raises]) -> None:
    """With or without the alarm, an exception becomes CheckFailed naming it, cause kept."""
    error = ValueError("boom")
    steps = drive(check_type(error), T0)
    with pytest.raises(CheckFailed) as failed:
        next(steps)
    assert str(failed.value) == "check raised ValueError: boom"
    assert failed.value.__cause__ is error


@pytest.mark.parametrize("check_type", [_Raises, _BuiltinRaises])
def test_the_driving_programs_interrupt_passes_through(check_type: type[_Raises]) -> None:
    """Interrupt (the program's Ctrl-C or SIGTERM) is never the check's error."""
    steps = drive(check_type(Interrupt()), T0)
    with pytest.raises(Interrupt):
        next(steps)


def test_limits_read_the_timeout_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both limits come from the environment; without ``timeout`` the default timeout."""
    monkeypatch.setenv("TESTBED_MAX_LOOKS", "7")
    monkeypatch.setenv("TESTBED_CHECK_TIMEOUT_S", "2.5")
    assert limits() == (7, 2.5)
    assert limits(timeout=True) == (7, 2.5)
    assert limits(timeout=False) == (7, LOOK_TIMEOUT_S)


def test_a_user_check_over_the_timeout_fails_and_a_builtin_is_not_timed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The environment's wall-clock limit stops a user check; a built-in runs untimed."""
    monkeypatch.setenv("TESTBED_CHECK_TIMEOUT_S", "0.05")
    steps = drive(_Sleeps(0.5), T0)
    with pytest.raises(CheckFailed, match=r"^check took longer than 0.05 s to answer look 0"):
        next(steps)
    builtin = drive(_BuiltinSleeps(0.1), T0)
    assert next(builtin) == 1.0


def test_the_look_limit_applies_to_a_builtin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment's look limit is read for every check, built-in or not."""
    monkeypatch.setenv("TESTBED_MAX_LOOKS", "2")
    steps = drive(_BuiltinSleeps(0.0), T0)
    next(steps)
    steps.send(Look(T0, ()))
    with pytest.raises(CheckFailed, match=r"^check took 2 looks without a verdict"):
        steps.send(Look(T0, ()))


class _BuiltinRecords:
    """A check as if defined in this package that records what each call is given."""

    name = "records"

    def __init__(self) -> None:
        self.given: list[tuple[int, list[Look]]] = []

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Wait | Verdict:
        self.given.append((publish_started_ms, list(looks)))
        return Verdict(True, "seen") if len(looks) == 2 else Wait(1)


_BuiltinRecords.__module__ = "checks.fake"


def test_a_builtin_is_given_the_publish_time_and_every_look_so_far() -> None:
    """Called directly, a built-in still gets the publish's start and the looks in order."""
    check = _BuiltinRecords()
    first, second = Look(T0 + 1, ()), Look(T0 + 2, ())
    steps = drive(check, T0)
    assert next(steps) == 1.0
    assert steps.send(first) == 1.0
    with pytest.raises(StopIteration) as done:
        steps.send(second)
    assert done.value.value == Verdict(True, "seen")
    assert check.given == [(T0, []), (T0, [first]), (T0, [first, second])]


@pytest.mark.parametrize("alarm", [False, True])
def test_call_check_gives_the_check_its_arguments(alarm: bool) -> None:
    """One call, with or without the alarm: the check gets the publish time and the looks."""
    check = _BuiltinRecords()
    looks = [Look(T0 + 1, ())]
    assert call_check(check, T0, looks, 5.0, alarm) == Wait(1)
    assert check.given == [(T0, looks)]


def test_a_user_check_within_the_timeout_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user check slower than the alarm's repeat but within the limit is not stopped."""
    monkeypatch.setenv("TESTBED_CHECK_TIMEOUT_S", "1.0")
    steps = drive(_Sleeps(0.15), T0)
    assert next(steps) == 1.0
