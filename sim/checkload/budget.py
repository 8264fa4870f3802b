"""The budget a user's check runs under: wall-clock seconds per look, looks per drive.

Built and validated once at the door -- ``check_budget(args)`` for the command line
(``--check-timeout``/``--max-looks``, else ``TESTBED_CHECK_TIMEOUT_S``/``TESTBED_MAX_LOOKS``,
read there and nowhere else), ``CheckBudget(...)`` in Python -- and handed down as a
value to where checks are driven: ``sim.publish.world.run``/``sharing.run_checks``, replay
(``sim.publish.recording.replay_all``), series, a sweep's units (pickled with each task,
so a pool's worker or a Dask worker gets it with the work) and the hunt. ``checks/``
itself reads no environment and installs no signal: the driver there takes ``max_looks``
as an argument, and the wall-clock limit is a wrapper put around a user's check here
(``CheckBudget.guard``), which the built-ins never pay for.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from platform_testbed.checks import BUILTIN_CHECKS, Check, Look
from platform_testbed.checks.drive import MAX_LOOKS, CheckFailed
from platform_testbed.checks.protocol import Step
from platform_testbed.sim.config.settings import (
    CHECK_TIMEOUT_ENV,
    MAX_CHECK_TIMEOUT_S,
    MAX_LOOKS_ENV,
    env_limit,
    env_number,
    seconds_rule,
    whole_rule,
)
from platform_testbed.sim.runtime.signals import Overtime, alarm_usable, under_alarm

#: Wall-clock seconds one call of a check's ``next`` may take. Assumed: every built-in
#: answers a look in well under a millisecond, a thousand-machine look in under a second.
LOOK_TIMEOUT_S = 10.0
#: The environment a command line reads for a limit its flag does not give.
TIMEOUT_ENV, LOOKS_ENV = CHECK_TIMEOUT_ENV, MAX_LOOKS_ENV
#: The classes that never get the wall-clock wrapper: they answer in microseconds, and two
#: setitimer calls per look cost more than their answer (measured: ~8 % of the incident
#: world's run). By class, not by module name: a user's module may be called anything.
_BUILTIN_TYPES = frozenset(BUILTIN_CHECKS.values())



def _timeout_rule(where: str, value: object) -> None:
    seconds_rule(where, value, MAX_CHECK_TIMEOUT_S)


def _looks_rule(where: str, value: object) -> None:
    whole_rule(where, value)


@dataclass(frozen=True, slots=True)
class CheckBudget:
    """How long a check may take to answer one look, and how many looks it may ask for."""

    timeout_s: float = LOOK_TIMEOUT_S
    max_looks: int = MAX_LOOKS

    def __post_init__(self) -> None:
        _timeout_rule("timeout_s", self.timeout_s)
        _looks_rule("max_looks", self.max_looks)

    def guard(self, check: Check) -> Check:
        """``check`` under the wall-clock limit: a wrapper, except for a built-in (itself)."""
        if type(check) in _BUILTIN_TYPES:
            return check
        if isinstance(check, _Budgeted):
            check = check.check
        # A Check to the driver; its ``name`` is read-only, which only the driver reads.
        return cast(Check, _Budgeted(check, self.timeout_s))


#: The budget where none is given: the documented defaults.
DEFAULT_CHECK_BUDGET = CheckBudget()


class _Budgeted:
    """A user's check whose every ``next`` runs under the SIGALRM wall-clock limit.

    Made per drive by ``CheckBudget.guard``, seen by the driver only: results, reports and
    ``rolls_back`` are read from the check itself. Where no alarm can be used (a thread
    other than the main one, as in a Dask worker; a platform without setitimer; a program
    with its own SIGALRM handler) the check runs without the limit, as it did before.
    """

    __slots__ = ("_usable", "check", "timeout_s")

    def __init__(self, check: Check, timeout_s: float) -> None:
        self.check = check
        self.timeout_s = timeout_s
        self._usable: bool | None = None  # found out at the first call, in the drive's thread

    @property
    def name(self) -> Any:
        """The check's own ``name``; what it raises, the driver reports."""
        return getattr(self.check, "name", None)

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """The check's answer, or ``CheckFailed`` if it took longer than the limit."""
        if self._usable is None:
            self._usable = alarm_usable()
        if not self._usable:
            return self.check.next(publish_started_ms, looks)
        try:
            return under_alarm(self.timeout_s, self.check.next, publish_started_ms, looks)
        except Overtime:
            raise CheckFailed(
                f"check took longer than {self.timeout_s:g} s to answer look {len(looks)} "
                f"(the limit: --check-timeout or {TIMEOUT_ENV})"
            ) from None


def add_check_limits(*parsers: argparse.ArgumentParser) -> None:
    """Add ``--check-timeout SECONDS`` and ``--max-looks N`` to subcommands."""
    for parser in parsers:
        parser.add_argument(
            "--check-timeout", type=float, metavar="SECONDS",
            help=f"wall-clock seconds a check may take to answer one look before its run "
            f"ends as error (default {LOOK_TIMEOUT_S:g}, at most {MAX_CHECK_TIMEOUT_S:,g}; "
            f"env {TIMEOUT_ENV})",
        )
        parser.add_argument(
            "--max-looks", type=int, metavar="N",
            help=f"looks a check may ask for without deciding before its run ends as error "
            f"(default {MAX_LOOKS:,}; env {LOOKS_ENV})",
        )


def check_budget(
    args: argparse.Namespace, environ: Mapping[str, str] = os.environ
) -> CheckBudget:
    """The command line's budget: each flag, else its environment variable, else the default.

    The door: a bad value is one line naming the flag or variable (exit 2), before any work.
    Flag, variable and ``CheckBudget`` share one rule each (``sim.config.settings``:
    ``seconds_rule`` up to ``MAX_CHECK_TIMEOUT_S``, ``whole_rule``).
    """
    timeout = getattr(args, "check_timeout", None)
    if timeout is None:
        timeout = env_number(TIMEOUT_ENV, LOOK_TIMEOUT_S, MAX_CHECK_TIMEOUT_S, environ)
    else:
        _timeout_rule("--check-timeout", timeout)
    looks = getattr(args, "max_looks", None)
    if looks is None:
        looks = env_limit(LOOKS_ENV, MAX_LOOKS, environ)
    else:
        _looks_rule("--max-looks", looks)
    return CheckBudget(timeout, looks)
