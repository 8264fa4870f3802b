"""The ``testbed`` command line: its parser, and the one place a command's end is decided.

Building the parser imports light modules only (argparse, ``checks``, the option helpers),
so ``--help``, ``--version``, a mistyped option and a shell's Tab answer at once. Each
command's module, and with it the model (simpy, numpy, pydantic, rich, hypothesis), is
imported by its handler, after the Ctrl-C and SIGTERM handlers are in place: a signal
during that import ends the command as it would mid-run (130 or 143, no traceback).
``tests/test_startup.py`` holds the parser to that.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.sim import checkcmd
from platform_testbed.sim.checkload.budget import add_check_limits
from platform_testbed.sim.cli import completion, expect, twinopts
from platform_testbed.sim.cli.checkopts import add_check_opt_option, add_check_option
from platform_testbed.sim.cli.compareopts import add_gate_options, add_output_options
from platform_testbed.sim.cli.hunt import add_hunt_parser
from platform_testbed.sim.cli.parsers import add_lint_timing_parser, add_rollout_parser, add_sweep_parser
from platform_testbed.sim.cli.pool import add_pool_options
from platform_testbed.sim.config.settings import BadInput, check_environment
from platform_testbed.sim.runtime.outputs import command_output
from platform_testbed.sim.runtime.signals import HungUp, Terminated, exit_on_signals, restore_signals
from platform_testbed.sim.show import junit
from platform_testbed.sim.show.columns import settle_columns
from platform_testbed.sim.show.text import one_line, printable_streams

EXIT_BAD_INPUT = 2
# As a shell reports a command ended by SIGINT (Ctrl-C) or SIGTERM: 128 + the signal.
EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_HUNG_UP = 130, 143, 129
#: The reader of stdout went away (``| head``): the status a shell gives a command SIGPIPE
#: ended, not 0, so under ``set -o pipefail`` a gate whose result was never read fails.
EXIT_BROKEN_PIPE = 141
#: Where a check's options come from (also in the README, "Check options").
PRECEDENCE = (
    "check options, lowest first: the check's own default < the scenario's [check] table, "
    "for each key the scenario sets (in the file or by --set check.KEY=...) and the check "
    "declares as a field < --check-opt KEY=VALUE, for every chosen check declaring KEY "
    "(--check-opt NAME.KEY=VALUE: check NAME alone). An option no chosen check declares, or a "
    "value of the wrong type, is bad input (exit 2). A --check-cmd check gets the whole [check] "
    "table and every --check-opt. The report's header says which options each check ran with "
    "and where each came from."
)


class _Parser(argparse.ArgumentParser):
    """argparse with the project's contract: a one-line error and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see --help)\n")


class _Version(argparse._VersionAction):
    """``--version``, with the installed version looked up only when it is asked for."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from platform_testbed.sim.cli import about  # noqa: PLC0415 -- importlib.metadata: tens of ms on every start

        self.version = f"%(prog)s {about.version()}"
        super().__call__(parser, namespace, values, option_string)


def _command(args: argparse.Namespace) -> int:
    """Run list, compare, replay, checks or series: their module (the model) loads only now."""
    from platform_testbed.sim.cli import commands  # noqa: PLC0415 -- see the module docstring

    code: int = getattr(commands, f"cmd_{args.command}")(args)
    return code


def _region(args: argparse.Namespace) -> int:
    from platform_testbed.sim.cli.region import cmd_region  # noqa: PLC0415 -- see the module docstring

    return cmd_region(args)


def _add_region_parser(sub: Any) -> None:
    """``region sept25 [--json] [--workers N] [--no-progress]`` (``sim.cli.region``)."""
    region = sub.add_parser(
        "region", help="print the unknowns consistent with an incident (sept25)",
        description="Run the incident's sweep of unknowns and print the points consistent with "
        "what happened: on 25 September count marked the publishes live and timestamp would "
        "have failed them.")
    region.add_argument("name", choices=["sept25"], help="the incident")
    region.add_argument("--workers", type=int, metavar="N",
                        help="local worker processes (default: one per core; 1: no pool)")
    region.add_argument("--json", action="store_true", help="one JSON object on stdout")
    region.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    region.set_defaults(handler=_region)


def _serve(args: argparse.Namespace) -> int:
    from platform_testbed.sim.cli.serve import serve_command  # noqa: PLC0415 -- see the module docstring

    return serve_command(args)


def _add_serve_parser(sub: Any) -> None:
    serve = sub.add_parser(
        "serve", help="serve a scenario's world over Fly's Machines API for a real deploy step",
        description="Serve the scenario's app on 127.0.0.1 in the shapes of Fly's Machines API "
        "(list, get, update, wait, start/stop/restart, leases; a bearer token required). The "
        "world runs instantly to the publish, then on the wall clock. On Ctrl-C or at the "
        "horizon: what the world did, the ground truth, and every request.",
    )
    serve.add_argument("scenario", help="a shipped scenario name or a .toml path")
    serve.add_argument("--seed", type=int, help="the world's seed (default: the scenario's)")
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    serve.add_argument("--speed", type=float, default=1.0, metavar="K",
                       help="simulated seconds per wall second (default 1: timestamps are wall time)")
    serve.add_argument("--token", help="the bearer token to require (default: a random one, printed)")
    serve.add_argument("--record", metavar="FILE",
                       help="write the looks the client took as a recording for `testbed replay`")
    serve.add_argument("--force", action="store_true", help="write --record through a symlink")
    serve.add_argument("--horizon-s", type=float, metavar="S",
                       help="end the world at S simulated seconds (default: the scenario's horizon)")
    serve.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                       help="override a scenario value (repeatable)")
    serve.add_argument("--json", action="store_true", help="the report as one JSON object on stdout")
    serve.set_defaults(handler=_serve)


def _add_debug(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of a check that raised")


def build_parser() -> argparse.ArgumentParser:  # noqa: PLR0915 -- every subcommand, in order
    """The argument parser with every subcommand."""
    parser = _Parser(
        prog="testbed",
        description="Find the worlds in which a deploy health check gives the wrong verdict.",
        epilog="exit status: 0 ran, 1 a declared [expect] did not hold, 2 bad input",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    listing = sub.add_parser(
        "list", help="the shipped scenarios and rollouts, each with what it models",
        description="List the shipped publish and rollout scenarios by name, each with its "
        "description (folded to the terminal's width); with --profiles, the event profiles.",
    )
    listing.add_argument("--profiles", action="store_true",
                         help="list the event profiles (which events a machine writes) instead")
    listing.add_argument("--json", action="store_true", help="with --profiles: one JSON object")
    listing.set_defaults(handler=_command)

    comp = sub.add_parser(
        "compare",
        help="run checks side by side in the same simulated world",
        description="Run each check in the same simulated world (same seed) and compare "
        "verdicts, outcomes against the ground truth, and what each cost the site.",
        epilog=PRECEDENCE,
    )
    comp.add_argument("scenario", help="a shipped scenario name (see `testbed list`) or a .toml path")
    add_check_option(comp, what=f"a built-in check ({', '.join(BUILTIN_CHECKS)})")
    add_check_opt_option(comp)
    comp.add_argument("--seed", type=int, help="seed of the first world (default: the scenario's)")
    comp.add_argument("--runs", type=int, default=1, metavar="N",
                      help="run N seeds: SEED … SEED+N-1 (default 1)")
    comp.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="override a scenario value, e.g. --set platform.event_log_cap=3 (repeatable)",
    )
    comp.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    add_output_options(comp)
    add_gate_options(comp)
    _add_debug(comp)
    checkcmd.add_arguments(comp)
    comp.set_defaults(handler=_command)

    rep = sub.add_parser(
        "replay",
        help="feed recorded looks (from --record or a real platform) to checks",
        description="Replay a JSON Lines recording of looks (Fly Machines API objects) to "
        "checks and print their verdicts. Each wait a check asks for is served by the next "
        "recorded look at or after the time it is due; unknown fields are ignored.",
    )
    rep.add_argument(
        "recording",
        help="a .jsonl file, one look per line, or a raw API payload (a machine, an array of "
        "machines, or {\"machines\": [...]}) replayed as one look",
    )
    rep.add_argument(
        "--at-ms", type=int, metavar="MS",
        help="raw payload only: the look's time (default: its newest event timestamp)",
    )
    rep.add_argument(
        "--publish-ms", type=int, metavar="MS",
        help="raw payload only: when the publish began (default: its newest launch/update event)",
    )
    add_check_option(rep, note="default: all built-ins; a run recorded by the simulator goes "
                     "to the check that recorded it")
    add_check_opt_option(rep)
    rep.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    _add_debug(rep)
    expect.add_argument(rep)
    checkcmd.add_arguments(rep)
    rep.set_defaults(handler=_command)

    table = sub.add_parser(
        "checks",
        help="the built-in checks, the rule each models, and its outcomes on every scenario",
        description="For each check, the rule it models; then a table of its outcomes on "
        "every shipped scenario over --runs seeds, each from the scenario's own seed.",
    )
    table.add_argument("--runs", type=int, default=10, metavar="N",
                       help="N seeds per scenario (default 10)")
    add_check_option(table)
    add_check_opt_option(table)
    table.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    table.add_argument("--markdown", action="store_true", help="print a Markdown table (the README's)")
    add_check_limits(comp, rep, table)
    add_pool_options(comp, table)
    junit.add_argument(comp, rep, table)
    checkcmd.add_arguments(table)
    twinopts.add_arguments(comp, table)  # checks: a row in every shipped scenario's worlds
    table.set_defaults(handler=_command)

    series = sub.add_parser(
        "series", help="several publishes (apps, one day), every check in each",
        description="Run every check in every publish of a series file "
        "(a .toml path, or a shipped series' name): a row per publish, and per check how many publishes it "
        "let go live that the reconciler failed later. Exit 1 if expect_late_failures fails.",
    )
    series.add_argument("series", help="a shipped series name (sept25-three-publishes) or a .toml path")
    add_check_option(series, note="default: count and timestamp")
    series.add_argument("--json", action="store_true", help="one JSON object on stdout")
    add_check_limits(series)
    series.set_defaults(handler=_command)

    for add in (add_sweep_parser, add_hunt_parser, add_rollout_parser, add_lint_timing_parser,
                _add_region_parser, completion.add_completion_parser, _add_serve_parser):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``testbed`` console script."""
    # Handlers first: a signal while the parser is built ends the command as one mid-run.
    previous = exit_on_signals()
    printable_streams()  # an ASCII-only terminal gets escapes, not a UnicodeEncodeError
    settle_columns()  # a bad COLUMNS is ignored, as terminals do: rich would raise on "²"
    try:
        parser = build_parser()
        completion.hook(parser)  # a shell asking for completions gets them here, and no more
        args = parser.parse_args(argv)
        check_environment()  # every TESTBED_* limit by its rule, before any work
        with command_output():  # stdout and file writes that fail: one line, exit 2
            code: int = args.handler(args)
    except KeyboardInterrupt:
        print("testbed: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except HungUp:
        print("testbed: hung up", file=sys.stderr)
        return EXIT_HUNG_UP
    except Terminated:
        print("testbed: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except BadInput as error:  # one line, whatever a name or a path in it holds
        print(f"testbed: {one_line(str(error))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (``| head``): nothing more to say, and nothing to say it to.
        # Not 0: the command stopped before its result (a failed --expect's 1) was known.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    finally:
        restore_signals(previous)
        checkcmd.close_all()  # no --check-cmd child outlives the command, whatever happened
    return code


if __name__ == "__main__":
    sys.exit(main())
