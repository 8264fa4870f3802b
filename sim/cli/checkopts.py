"""The flags every command that runs checks shares, each defined once (pip's cmdoptions style).

``--check``, ``--check-opt``, ``--set``, ``--seed``, the ``--check-cmd`` trio, the check's
limits and ``--junit``; values, defaults and ranges come from the registry
(``sim.config.options``). Light on purpose: the parser imports it, so nothing here
imports ``checks`` or the model.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import TYPE_CHECKING, Any

from platform_testbed.sim.config import options
from platform_testbed.sim.config.settings import BadInput, parse_value

if TYPE_CHECKING:
    from pathlib import Path

#: The three forms the loader accepts (sim.checkload.loader names the same three when it refuses one).
FORMS = "package.module:name or path/to/file.py:name"
#: What adds an argument: a parser or one of its groups.
Adder = argparse.ArgumentParser | argparse._ArgumentGroup


def add_check_option(
    parser: Adder,
    *,
    what: str = "a built-in check (testbed checks lists them)",
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


def add_check_opt_option(parser: Adder) -> None:
    """Add ``--check-opt [NAME.]KEY=VALUE`` to a subcommand: appended, read by ``check_options``."""
    parser.add_argument("--check-opt", action="append", default=[], metavar="[NAME.]KEY=VALUE",
                        help=CHECK_OPT_HELP)


def add_set_option(parser: Adder, *, what: str = "a scenario value", dest: str = "set") -> None:
    """Add ``--set KEY=VALUE`` (repeatable): a value over the file's, as the file's own key."""
    parser.add_argument("--set", dest=dest, action="append", default=[], metavar="KEY=VALUE",
                        help=f"override {what}, e.g. --set platform.event_log_cap=3 (repeatable)")


def add_seed_option(parser: Adder, command: str) -> None:
    """Add ``--seed`` as the registry states it for ``command`` (hunt: hypothesis' seed)."""
    options.add(parser, "search_seed" if command == "hunt" else "seed", command)


def add_check_cmd_options(parser: Adder, single: bool = False) -> None:
    """Add ``--check-cmd`` and ``--check-cmd-name`` to a subcommand (its timeout is a limit's).

    ``single``: the command takes exactly one check (hunt), and the help says so.
    """
    parser.add_argument(
        "--check-cmd", action="append", default=[], metavar="COMMAND",
        help="the check to hunt, run as a subprocess speaking JSON Lines "
        "(the project's docs/check-protocol.md), instead of --check; exactly one" if single else
        "a check run as a subprocess speaking JSON Lines (the project's docs/check-protocol.md); "
        "runs beside the --check ones (alone when there are none); repeatable",
    )
    parser.add_argument(
        "--check-cmd-name", action="append", default=[], metavar="NAME",
        help="the --check-cmd check's name (default: its program, or the script an "
        "interpreter runs)" if single else
        "the name of the n-th --check-cmd (default: its program, or the script an "
        "interpreter runs)",
    )


def add_check_limits(parser: Adder, command: str) -> None:
    """Add ``--check-timeout SECONDS`` and ``--max-looks N`` (the registry's) to a subcommand."""
    options.add(parser, "check_timeout_s", command)
    options.add(parser, "max_looks", command)


def report_path(path: str) -> Path:
    """The report's path (an argparse type): refused at once if its folder does not exist."""
    from pathlib import Path  # noqa: PLC0415 -- only when --junit is given

    out = Path(path)
    if out.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a folder, expected a file name")
    if not out.resolve().parent.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: folder {out.parent} does not exist")
    return out


def add_junit_option(parser: Adder, what: str = "a test case per check and scenario (or "
                     "recorded run), a failure per unmet expectation") -> None:
    """Add ``--junit FILE.xml`` (and ``--force``, if the command has none).

    Its folder is checked as the command line is read; a symlink or a device at the path
    is refused unless ``--force``, which the handler checks (``sim.show.junit.checked``)
    before any work, as it does for every other output path.
    """
    parser.add_argument("--junit", metavar="FILE.xml", type=report_path,
                        help=f"also write a JUnit XML report: {what} (through a symlink or to "
                        "a device: with --force)")
    # compare has its own --force (for all its outputs); the others get one for --junit,
    # so that "give --force" is true wherever --junit refuses a path.
    with contextlib.suppress(argparse.ArgumentError):
        parser.add_argument("--force", action="store_true",
                            help="write --junit to a device or through a symlink")


def add_process_options(*parsers: Adder, command: str, where: str = "") -> None:
    """Add ``--check-http``, ``--deploy-cmd`` and ``--speed`` to each parser.

    ``where``: a sentence the two commands' help adds (how this command runs them).
    """
    for parser in parsers:
        _add(parser, command, f"; {where}" if where else "")


def _add(parser: Adder, command: str, note: str) -> None:
    parser.add_argument(
        "--check-http", action="append", default=[], metavar="COMMAND",
        help="a real process as a check: the testbed publishes, COMMAND judges over Fly's "
        "Machines API (FLY_API_HOSTNAME, FLY_API_TOKEN, FLY_APP_NAME); exit 0 = live, else "
        "failed, and the pipeline rolls back; its reason is its last line on stdout, else its "
        f"last on stderr; repeatable{note}",
    )
    parser.add_argument(
        "--deploy-cmd", action="append", default=[], metavar="COMMAND",
        help="a real deploy step: COMMAND updates the machines to FLY_IMAGE_REF, judges, and "
        "rolls back to FLY_PREVIOUS_IMAGE_REF if it decides to; the testbed only observes; "
        f"repeatable{note}",
    )
    parser.add_argument(
        "--time", choices=("virtual", "scaled"), default=None,
        help="the process's clock: virtual (the default) = it and what it starts read the "
        "world's clock and sleep on it, which stands still while they compute and moves when "
        "they all wait; scaled = the wall clock, the world at --speed (static binaries)",
    )
    # None when not given: --speed alone implies --time scaled (sim.cli.twinopts.steps).
    options.add(parser, "speed", command, default=None)  # --http-timeout: the limits group's


def check_options(items: list[str]) -> dict[str, Any]:
    """``--check-opt`` values as ``{KEY: value}``: each value read as ``--set`` reads one (TOML).

    Which check takes a key, and its type and range, are the loader's to judge
    (sim.checkload.loader); here only the ``KEY=VALUE`` shape is, before any work.
    """
    chosen = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--check-opt {item!r}: expected KEY=VALUE")
        chosen[key] = parse_value(value)
    return chosen
