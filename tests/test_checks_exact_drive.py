"""The driver and the simulator's budget: built-ins called directly, user checks under the alarm.

Exact, hand-built cases (no simulator): ``checks.drive.drive`` takes its look limit as an
argument and times nothing; ``CheckBudget.guard`` wraps a user's check (never a built-in)
so each call runs under the SIGALRM limit; what a check raises ends the drive the same
way either way, and the budget is validated where it is made.
"""

from __future__ import annotations

import argparse
import pickle
import time
from collections.abc import Sequence

import pytest

from platform_testbed.checks import CountCheck, TimestampCheck
from platform_testbed.checks.drive import MAX_LOOKS, CheckFailed, Interrupt, drive
from platform_testbed.checks.model import Look, Verdict, Wait
from platform_testbed.sim.checkload.budget import (
    DEFAULT_CHECK_BUDGET,
    LOOK_TIMEOUT_S,
    CheckBudget,
    check_budget,
)
from platform_testbed.sim.config.settings import BadInput
from tests.exact_events import T0


class _Raises:
    """A check that raises ``error`` at its first call."""

    name = "raises"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Wait:
        raise self.error


class _Sleeps:
    """A user check that takes ``seconds`` of wall-clock time to answer, then waits 1 s."""

    name = "sleeps"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Wait | Verdict:
        time.sleep(self.seconds)
        return Wait(1)


class _Records:
    """A check that records what each call is given."""

    name = "records"

    def __init__(self) -> None:
        self.given: list[tuple[int, list[Look]]] = []

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Wait | Verdict:
        self.given.append((publish_started_ms, list(looks)))
        return Verdict(True, "seen") if len(looks) == 2 else Wait(1)


_TIGHT = CheckBudget(timeout_s=0.05)


@pytest.mark.parametrize("guarded", [False, True])
def test_what_a_check_raises_ends_the_drive_with_its_cause(guarded: bool) -> None:
    """With or without the alarm, an exception becomes CheckFailed naming it, cause kept."""
    error = ValueError("boom")
    check = _Raises(error)
    steps = drive(_TIGHT.guard(check) if guarded else check, T0)
    with pytest.raises(CheckFailed) as failed:
        next(steps)
    assert str(failed.value) == "check raised ValueError: boom"
    assert failed.value.__cause__ is error


@pytest.mark.parametrize("guarded", [False, True])
def test_the_driving_programs_interrupt_passes_through(guarded: bool) -> None:
    """Interrupt (the program's Ctrl-C or SIGTERM) is never the check's error."""
    check = _Raises(Interrupt())
    steps = drive(_TIGHT.guard(check) if guarded else check, T0)
    with pytest.raises(Interrupt):
        next(steps)


def test_a_guarded_user_check_over_the_timeout_fails() -> None:
    """The budget's wall-clock limit stops a user check and says which limit it hit."""
    steps = drive(_TIGHT.guard(_Sleeps(0.5)), T0)
    began = time.perf_counter()
    with pytest.raises(CheckFailed, match=r"^check took longer than 0.05 s to answer look 0 "
                       r"\(the limit: --check-timeout or TESTBED_CHECK_TIMEOUT_S\)$") as failed:
        next(steps)
    assert time.perf_counter() - began < 0.4
    assert failed.value.__cause__ is None


def test_the_driver_alone_times_nothing() -> None:
    """Unguarded, even a slow check answers: the limit is the simulator's, not the driver's."""
    steps = drive(_Sleeps(0.1), T0)
    assert next(steps) == 1.0


def test_a_guarded_user_check_within_the_timeout_answers() -> None:
    """A user check slower than the alarm's repeat but within the limit is not stopped."""
    steps = drive(CheckBudget(timeout_s=1.0).guard(_Sleeps(0.15)), T0)
    assert next(steps) == 1.0


def test_a_builtin_is_never_wrapped_and_a_user_check_is_wrapped_once() -> None:
    """Built-ins run as they are (no alarm to pay for); a wrapper is re-made, never nested."""
    builtin = TimestampCheck()
    assert _TIGHT.guard(builtin) is builtin
    assert DEFAULT_CHECK_BUDGET.guard(CountCheck()) == CountCheck()
    user = _Records()
    wrapped = _TIGHT.guard(user)
    assert wrapped is not user
    assert wrapped.name == "records"
    again = CheckBudget(timeout_s=2.0).guard(wrapped)
    assert again.check is user  # type: ignore[attr-defined]
    assert again.timeout_s == 2.0  # type: ignore[attr-defined]


def test_a_user_class_named_like_a_builtin_module_is_still_wrapped() -> None:
    """Which checks skip the alarm is decided by class, not by a module name a user can pick."""

    class Mine(_Records):
        pass

    Mine.__module__ = "platform_testbed.checks.mine"
    mine = Mine()
    assert _TIGHT.guard(mine).check is mine  # type: ignore[attr-defined]


def test_a_guarded_check_is_given_the_publish_time_and_every_look_so_far() -> None:
    """Through the wrapper a check still gets the publish's start and the looks in order."""
    check = _Records()
    first, second = Look(T0 + 1, ()), Look(T0 + 2, ())
    steps = drive(_TIGHT.guard(check), T0)
    assert next(steps) == 1.0
    assert steps.send(first) == 1.0
    with pytest.raises(StopIteration) as done:
        steps.send(second)
    assert done.value.value == Verdict(True, "seen")
    assert check.given == [(T0, []), (T0, [first]), (T0, [first, second])]


def test_a_name_that_raises_is_reported_through_the_wrapper() -> None:
    """The wrapper reads the check's own name, so a name that raises still ends the drive."""

    class BadName(_Records):
        @property
        def name(self) -> str:  # type: ignore[override]
            raise RuntimeError("no name today")

    with pytest.raises(CheckFailed, match=r"^check's name raised RuntimeError: no name today$"):
        next(drive(_TIGHT.guard(BadName()), T0))


def test_the_look_limit_is_the_drives_argument() -> None:
    """``max_looks`` is a parameter (default ``MAX_LOOKS``), for every check, built-in or not."""
    steps = drive(_Sleeps(0.0), T0, max_looks=2)
    next(steps)
    steps.send(Look(T0, ()))
    with pytest.raises(CheckFailed, match=r"^check took 2 looks without a verdict"):
        steps.send(Look(T0, ()))
    assert CheckBudget().max_looks == MAX_LOOKS == 10_000


@pytest.mark.parametrize(
    ("made", "message"),
    [
        (lambda: CheckBudget(timeout_s=0), r"^timeout_s: must be a number of seconds greater than 0 "
         r"and at most 86,400 \(got 0\)$"),
        (lambda: CheckBudget(timeout_s=1e300), r"^timeout_s: must be a number of seconds .* "
         r"at most 86,400 \(got 1e\+300\)$"),
        (lambda: CheckBudget(timeout_s=float("inf")), r"^timeout_s: must be a number of seconds"),
        (lambda: CheckBudget(timeout_s="5"), r"^timeout_s: must be a number of seconds"),
        (lambda: CheckBudget(max_looks=0), r"^max_looks: must be a whole number from 1 to .* \(got 0\)$"),
        (lambda: CheckBudget(max_looks=2.5), r"^max_looks: must be a whole number"),
        (lambda: CheckBudget(max_looks=True), r"^max_looks: must be a whole number"),
    ],
)
def test_a_budget_is_validated_where_it_is_made(made: object, message: str) -> None:
    """A bad value is BadInput naming the field and the rule, before any drive."""
    with pytest.raises(BadInput, match=message):
        made()  # type: ignore[operator]


def _args(timeout: float | None = None, looks: int | None = None) -> argparse.Namespace:
    return argparse.Namespace(check_timeout=timeout, max_looks=looks)


def test_the_command_line_budget_takes_flags_over_the_environment_over_defaults() -> None:
    """The door reads the flag, else the variable it was given, else the documented default."""
    env = {"TESTBED_CHECK_TIMEOUT_S": "2.5", "TESTBED_MAX_LOOKS": "7"}
    assert check_budget(_args(), {}) == CheckBudget(LOOK_TIMEOUT_S, MAX_LOOKS)
    assert check_budget(_args(), env) == CheckBudget(2.5, 7)
    assert check_budget(_args(0.5, 3), env) == CheckBudget(0.5, 3)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (_args(0.0), {}, r"^--check-timeout: must be a number of seconds greater than 0"),
        (_args(looks=0), {}, r"^--max-looks: must be a whole number from 1"),
        (_args(), {"TESTBED_CHECK_TIMEOUT_S": "soon"},
         r"^TESTBED_CHECK_TIMEOUT_S: must be a number of seconds greater than 0 and at most "
         r"86,400 \(got 'soon'\)$"),
        (_args(), {"TESTBED_CHECK_TIMEOUT_S": "1e300"},
         r"^TESTBED_CHECK_TIMEOUT_S: must be a number of seconds .* \(got '1e300'\)$"),
        (_args(), {"TESTBED_MAX_LOOKS": "-3"}, r"^TESTBED_MAX_LOOKS: must be a whole number from 1"),
        (_args(), {"TESTBED_MAX_LOOKS": "10**16"}, r"^TESTBED_MAX_LOOKS: must be a whole number"),
    ],
)
def test_the_command_line_budget_names_where_a_bad_value_came_from(
    args: argparse.Namespace, env: dict[str, str], message: str
) -> None:
    """A bad flag or variable is one line naming it (exit 2 at the command line)."""
    with pytest.raises(BadInput, match=message):
        check_budget(args, env)


def test_a_budget_pickles_as_a_value() -> None:
    """It goes to a sweep's pool workers with the task: pickled, it is the same budget."""
    budget = CheckBudget(0.3, 50)
    assert pickle.loads(pickle.dumps(budget)) == budget
