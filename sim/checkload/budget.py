"""``--check-timeout`` and ``--max-looks``: the budget every user check runs under.

The limits travel as environment variables (``checks.drive.TIMEOUT_ENV``/``LOOKS_ENV``),
so the worker processes a sweep starts inherit them; ``checks.drive`` reads them for each
drive. Validated here: a bad value is one line and exit 2.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from typing import TypeVar

from platform_testbed.checks.drive import LOOK_TIMEOUT_S, LOOKS_ENV, MAX_LOOKS, TIMEOUT_ENV
from platform_testbed.sim.config.settings import BadInput

_N = TypeVar("_N", int, float)


def add_check_limits(*parsers: argparse.ArgumentParser) -> None:
    """Add ``--check-timeout SECONDS`` and ``--max-looks N`` to subcommands."""
    for parser in parsers:
        _add(parser)


def save_limits() -> dict[str, str | None]:
    """The limits' environment now: the caller's values come back when a command ends
    (``main`` may run many commands in one process, a test's)."""
    return {key: os.environ.get(key) for key in (TIMEOUT_ENV, LOOKS_ENV)}


def restore_limits(saved: dict[str, str | None]) -> None:
    """Put back what ``save_limits`` saw."""
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check-timeout", type=float, metavar="SECONDS",
        help=f"wall-clock seconds a check may take to answer one look before its run ends "
        f"as error (default {LOOK_TIMEOUT_S:g}; env {TIMEOUT_ENV})",
    )
    parser.add_argument(
        "--max-looks", type=int, metavar="N",
        help=f"looks a check may ask for without deciding before its run ends as error "
        f"(default {MAX_LOOKS:,}; env {LOOKS_ENV})",
    )


def apply_check_limits(args: argparse.Namespace) -> None:
    """Validate the limits (flags over environment) and hand them on through the environment."""
    timeout, where = _given(getattr(args, "check_timeout", None), "--check-timeout",
                            TIMEOUT_ENV, float, "a number of seconds")
    if timeout is not None:
        if not math.isfinite(timeout):
            raise BadInput(f"{where}: must be a finite number of seconds (got {timeout})")
        if timeout <= 0:
            raise BadInput(f"{where}: must be greater than 0 (got {timeout:g})")
        os.environ[TIMEOUT_ENV] = repr(timeout)
    looks, where = _given(getattr(args, "max_looks", None), "--max-looks",
                          LOOKS_ENV, int, "a whole number")
    if looks is not None:
        if looks < 1:
            raise BadInput(f"{where}: must be at least 1 (got {looks})")
        os.environ[LOOKS_ENV] = str(looks)


def _given(
    flag: _N | None, flag_name: str, env: str, parse: Callable[[str], _N], kind: str
) -> tuple[_N | None, str]:
    """The value the flag gives, else the environment's (parsed), and where it came from."""
    if flag is not None or not os.environ.get(env):
        return flag, flag_name
    try:
        return parse(os.environ[env]), env
    except ValueError:
        raise BadInput(f"{env}: must be {kind} (got {os.environ[env]!r})") from None
