"""``--check NAME`` and ``--check-opt [NAME.]KEY=VALUE``, each defined once for every command
that runs checks (pip's cmdoptions style), and ``--check-opt``'s reading, once."""

from __future__ import annotations

import argparse
from typing import Any

from platform_testbed.sim.config.settings import BadInput, parse_value

#: The three forms the loader accepts (sim.checkload.loader names the same three when it refuses one).
FORMS = "package.module:name or path/to/file.py:name"


def add_check_option(
    parser: argparse.ArgumentParser,
    *,
    what: str = "a built-in check",
    note: str = "default: all built-ins",
    how: str = "repeatable",
) -> None:
    """Add ``--check NAME`` to a subcommand: appended, so a second one never replaces the first.

    ``what`` leads the help, ``note`` says what runs without one, ``how`` how many the
    command takes.
    """
    parser.add_argument(
        "--check", action="append", default=[], metavar="NAME",
        help=f"{what}, {FORMS} ({note}); {how}",
    )


#: ``--check-opt``'s help, the same on every command that takes it.
CHECK_OPT_HELP = (
    "an option for every chosen check declaring KEY, built-in or yours, or for check NAME "
    "alone (repeatable; overrides a scenario's [check] table or a recording's check_options)"
)


def add_check_opt_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--check-opt [NAME.]KEY=VALUE`` to a subcommand: appended, read by ``check_options``."""
    parser.add_argument("--check-opt", action="append", default=[], metavar="[NAME.]KEY=VALUE",
                        help=CHECK_OPT_HELP)


def check_options(items: list[str]) -> dict[str, Any]:
    """``--check-opt`` values as ``{KEY: value}``: each value read as ``--set`` reads one (TOML).

    Which check takes a key, and its type and range, are the loader's to judge
    (sim.checkload.loader); here only the ``KEY=VALUE`` shape is, before any work.
    """
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--check-opt {item!r}: expected KEY=VALUE")
        options[key] = parse_value(value)
    return options
