"""``--check NAME``, defined once for every command that runs checks (pip's cmdoptions style)."""

from __future__ import annotations

import argparse

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
