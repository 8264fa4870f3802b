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
from platform_testbed.checks.drive import CheckFailed
from platform_testbed.checks.protocol import Step
from platform_testbed.sim.config.options import from_args, option, resolve
from platform_testbed.sim.runtime.signals import Overtime, alarm_usable, under_alarm

_TIMEOUT, _LOOKS = option("check_timeout_s"), option("max_looks")
#: Wall-clock seconds one call of a check's ``next`` may take, and looks per drive: the
#: registry's defaults (sim.config.options, where their sources are).
LOOK_TIMEOUT_S: float = float(_TIMEOUT.default or 0)
MAX_LOOKS: int = int(_LOOKS.default or 0)
#: The environment a command line reads for a limit its flag does not give.
TIMEOUT_ENV, LOOKS_ENV = str(_TIMEOUT.env_name), str(_LOOKS.env_name)
#: The classes that never get the wall-clock wrapper: they answer in microseconds, and two
#: setitimer calls per look cost more than their answer (measured: ~8 % of the incident
#: world's run). By class, not by module name: a user's module may be called anything.
_BUILTIN_TYPES = frozenset(BUILTIN_CHECKS.values())



@dataclass(frozen=True, slots=True)
class CheckBudget:
    """How long a check may take to answer one look, and how many looks it may ask for."""

    timeout_s: float = LOOK_TIMEOUT_S
    max_looks: int = MAX_LOOKS

    def __post_init__(self) -> None:
        _TIMEOUT.check("timeout_s", self.timeout_s)
        _LOOKS.check("max_looks", self.max_looks)

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


def check_budget(
    args: argparse.Namespace, environ: Mapping[str, str] = os.environ
) -> CheckBudget:
    """The command line's budget: each flag, else its environment variable, else the default.

    The door: a bad value is one line naming the flag or variable (exit 2), before any work
    (the registry's one precedence rule, ``sim.config.options.resolve``).
    """
    return CheckBudget(from_args("check_timeout_s", args, environ=environ),
                       from_args("max_looks", args, environ=environ))


def environment_budget(environ: Mapping[str, str] = os.environ) -> CheckBudget:
    """The budget where no flag or parameter gives one: each variable, else the default."""
    return CheckBudget(resolve("check_timeout_s", environ=environ),
                       resolve("max_looks", environ=environ))
