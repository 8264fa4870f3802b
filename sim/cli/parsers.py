"""Every subcommand's arguments, in groups, with examples: the parser, apart from the commands' code.

Importing a command's module loads the model; the parser is built from this module and
the light option modules instead (``checkopts``, ``compareopts``, ``pool``, ``twinopts``,
the registry ``sim.config.options``), and each handler imports its command's module only
when that command runs (``sim.cli.parser``). Every flag that a registry entry states is
added from the entry; ``tests/test_options_registry.py`` holds every parser to that.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from platform_testbed.sim.cli import checkopts, compareopts
from platform_testbed.sim.cli.checkopts import (
    add_check_cmd_options,
    add_check_limits,
    add_check_opt_option,
    add_check_option,
    add_junit_option,
    add_process_options,
    add_seed_option,
    add_set_option,
)
from platform_testbed.sim.cli.pool import add_pool_options
from platform_testbed.sim.config import options

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
#: Every value's precedence, in one line (the registry's rule: sim.config.options).
VALUES = ("values, highest first: the flag > its environment variable > the file's value > "
          "the default (the project's docs/options.md lists every option and limit)")


class Formatter(argparse.HelpFormatter):
    """Descriptions refilled to the terminal; an epilog kept line for line (its examples)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line + "\n" for line in text.splitlines()).rstrip("\n")
        return super()._fill_text(text, width, indent)


def epilog(examples: list[str], *notes: str, status: str | None = None) -> str:
    """The examples, one a line, then notes refilled, then the exit statuses."""
    lines = ["examples:", *(f"  {e}" for e in examples)]
    for note in notes:
        lines += ["", *textwrap.wrap(note, 88)]
    if status:
        lines += ["", status]
    return "\n".join(lines)


def _sub(subparsers: Any, name: str, *, help: str, description: str, examples: list[str],
         notes: tuple[str, ...] = (), status: str | None = None) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, help=help, description=description, formatter_class=Formatter,
        epilog=epilog(examples, *notes, status=status))
    return parser


def _handler(module: str, function: str) -> Any:
    """A handler that imports ``sim.cli.<module>`` (the model) only when its command runs."""

    def run(args: argparse.Namespace) -> int:
        import importlib  # noqa: PLC0415

        code: int = getattr(importlib.import_module(f"platform_testbed.sim.cli.{module}"),
                            function)(args)
        return code

    run.__name__ = f"{module}.{function}"
    return run


STATUS = "exit status: 0 ran, 1 a declared expectation or a --fail-on gate did not hold, 2 bad input"


def add_list_parser(sub: Any) -> None:
    """``list [--profiles] [--json]``."""
    listing = _sub(sub, "list", help="the shipped scenarios and rollouts, each with what it models",
                   description="List the shipped publish and rollout scenarios by name, each with "
                   "its description (folded to the terminal's width); with --profiles, the event "
                   "profiles.",
                   examples=["testbed list", "testbed list --profiles --json"])
    listing.add_argument("--profiles", action="store_true",
                         help="list the event profiles (which events a machine writes) instead")
    listing.add_argument("--json", action="store_true", help="with --profiles: one JSON object")
    listing.set_defaults(handler=_handler("commands", "cmd_list"))


def _checks_group(parser: argparse.ArgumentParser, command: str, **check: str) -> Any:
    group = parser.add_argument_group("checks")
    add_check_option(group, **check)
    add_check_opt_option(group)
    add_check_cmd_options(group)
    group.add_argument("--debug", action="store_true", help="show the traceback of a check that raised")
    return group


def _limits_group(parser: argparse.ArgumentParser, command: str, *, cmd: bool = True,
                  http: bool = False) -> Any:
    group = parser.add_argument_group("limits", VALUES)
    add_check_limits(group, command)
    if cmd:
        options.add(group, "check_cmd_timeout_s", command)
    if http:
        options.add(group, "http_timeout_s", command)
    return group


def _world_group(parser: argparse.ArgumentParser, command: str, scenario: str | None) -> Any:
    group = parser.add_argument_group("the world")
    if scenario:
        group.add_argument("scenario", help=scenario)
    add_seed_option(group, command)
    add_set_option(group)
    return group


def add_compare_parser(sub: Any) -> None:
    """``compare SCENARIO ...``: checks side by side in the same worlds."""
    comp = _sub(sub, "compare", help="run checks side by side in the same simulated world",
                description="Run each check in the same simulated world (same seed) and compare "
                "verdicts, outcomes against the ground truth, and what each cost the site.",
                examples=["testbed compare sept25-crash-loop",
                          "testbed compare sept25-crash-loop --check count --check timestamp --runs 100",
                          "testbed compare sept25-crash-loop --check mycheck.py:Mine "
                          "--check-opt look_delay_s=10",
                          "testbed compare sept25-crash-loop --set platform.event_log_cap=3 --json",
                          "testbed compare sept25-crash-loop --check-http examples/deploy/timestamp.sh",
                          "testbed compare sept25-crash-loop --expect timestamp=caught --junit out/c.xml"],
                notes=(PRECEDENCE,), status=STATUS)
    world = _world_group(comp, "compare", "a shipped scenario name (see `testbed list`) or a .toml path")
    options.add(world, "runs", "compare")
    _checks_group(comp, "compare")
    real = comp.add_argument_group("real processes (the Machines API twin)")
    add_process_options(real, command="compare")
    _limits_group(comp, "compare", http=True)
    out = comp.add_argument_group("outputs")
    out.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    compareopts.add_output_options(out)
    add_junit_option(out)
    compareopts.add_gate_options(comp.add_argument_group("CI gate"))
    add_pool_options(comp.add_argument_group("pool"), "compare")
    comp.set_defaults(handler=_handler("commands", "cmd_compare"))


def add_replay_parser(sub: Any) -> None:
    """``replay RECORDING ...``: recorded looks fed to checks."""
    rep = _sub(sub, "replay", help="feed recorded looks (from --record or a real platform) to checks",
               description="Replay a JSON Lines recording of looks (Fly Machines API objects) to "
               "checks and print their verdicts. Each wait a check asks for is served by the next "
               "recorded look at or after the time it is due; unknown fields are ignored. A "
               "recording has no world, so no --set or --seed.",
               examples=["testbed compare sept25-crash-loop --record looks.jsonl && "
                         "testbed replay looks.jsonl",
                         "testbed replay machines.json --check timestamp --expect timestamp=fail"],
               status=STATUS)
    rep.add_argument(
        "recording",
        help="a .jsonl file, one look per line, or a raw API payload (a machine, an array of "
        "machines, or {\"machines\": [...]}) replayed as one look",
    )
    raw = rep.add_argument_group("raw payloads")
    options.add(raw, "at_ms", "replay")
    options.add(raw, "publish_ms", "replay")
    _checks_group(rep, "replay", note="default: all built-ins; a run recorded by the simulator "
                  "goes to the check that recorded it")
    _limits_group(rep, "replay")
    out = rep.add_argument_group("outputs")
    out.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    add_junit_option(out)
    from platform_testbed.sim.cli import expect  # noqa: PLC0415 -- light; kept beside its use

    expect.add_argument(rep.add_argument_group("CI gate"))
    rep.set_defaults(handler=_handler("commands", "cmd_replay"))


def add_checks_parser(sub: Any) -> None:
    """``checks ...``: every check's outcomes on every shipped scenario."""
    table = _sub(sub, "checks",
                 help="the built-in checks, the rule each models, and its outcomes on every scenario",
                 description="For each check, the rule it models; then a table of its outcomes on "
                 "every shipped scenario over --runs seeds, each from the scenario's own seed "
                 "(or --seed), with every --set applied to every scenario.",
                 examples=["testbed checks", "testbed checks --runs 100 --markdown",
                           "testbed checks --check timestamp --check mycheck.py:Mine --json"])
    world = _world_group(table, "checks", None)
    options.add(world, "runs", "checks")
    _checks_group(table, "checks")
    real = table.add_argument_group("real processes (the Machines API twin)")
    add_process_options(real, command="checks", where="a row in every shipped scenario's worlds")
    _limits_group(table, "checks", http=True)
    out = table.add_argument_group("outputs")
    out.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    out.add_argument("--markdown", action="store_true",
                     help="print a Markdown table (as the docs' checks.md shows it)")
    add_junit_option(out)
    add_pool_options(table.add_argument_group("pool"), "checks")
    table.set_defaults(handler=_handler("commands", "cmd_checks"))


def add_series_parser(sub: Any) -> None:
    """``series SERIES ...``: several publishes, every check in each."""
    series = _sub(sub, "series", help="several publishes (apps, one day), every check in each",
                  description="Run every check in every publish of a series file (a .toml path, "
                  "or a shipped series' name): a row per publish, and per check how many "
                  "publishes it let go live that the reconciler failed later. Exit 1 if "
                  "expect_late_failures fails.",
                  examples=["testbed series sept25-three-publishes",
                            "testbed series sept25-three-publishes --check mycheck.py:Mine --json",
                            "testbed series sept25-three-publishes --set platform.event_log_cap=10 "
                            "--check-opt look_delay_s=30"],
                  status=STATUS)
    series.add_argument("series", help="a shipped series name (sept25-three-publishes) or a .toml path")
    world = series.add_argument_group("the worlds (each publish keeps its own seed)")
    add_set_option(world, what="a value of every publish's scenario")
    checks = series.add_argument_group("checks")
    add_check_option(checks, note="default: count and timestamp")
    add_check_opt_option(checks)
    series.add_argument("--json", action="store_true", help="one JSON object on stdout")
    _limits_group(series, "series", cmd=False)
    series.set_defaults(handler=_handler("commands", "cmd_series"))


def add_sweep_parser(sub: Any) -> None:
    """``sweep SWEEP ...``: the checks over a grid of settings and seeds."""
    parser = _sub(sub, "sweep", help="run the checks over a grid of settings and seeds",
                  description="Run every chosen check in every world of a sweep (points x "
                  "seeds): one row per point, seed and check; a summary per check on stdout. "
                  "The file's checks, seeds and sets are defaults: --check replaces its checks, "
                  "--seed its first seed, and --set adds to its sets (a --set of a swept key "
                  "holds that axis at the one value).",
                  examples=["testbed sweep sept25-unknowns",
                            "testbed sweep sept25-unknowns --check mycheck.py:Mine "
                            "--set release.crash_after_s=3 --seed 7",
                            "testbed sweep sept25-unknowns --heatmap out/unknowns.png --workers 2",
                            "testbed sweep my-sweep.toml --out rows.jsonl --fail-on missed "
                            "--junit out/s.xml"],
                  status=STATUS)
    parser.add_argument("sweep", help="a sweep file (.toml) or a shipped sweep's name, e.g. "
                        "sept25-unknowns")
    world = _world_group(parser, "sweep", None)
    del world
    checks = parser.add_argument_group("checks")
    add_check_option(checks, note="default: the sweep file's checks")
    add_check_opt_option(checks)
    real = parser.add_argument_group("real processes (the Machines API twin)")
    # A process needs the twin and this machine's wall clock: one world at a time, here.
    add_process_options(real, command="sweep", where="a row in every world; a sweep with one "
                           "runs its worlds one at a time in this process (no --workers above 1, "
                           "no --dask)")
    _limits_group(parser, "sweep", cmd=False, http=True)
    out = parser.add_argument_group("outputs")
    out.add_argument("--out", metavar="FILE",
                     help="rows as .csv or .jsonl, written atomically (default: out/NAME.csv; "
                     "an existing file is replaced only with --force)")
    out.add_argument("--json", action="store_true",
                     help="print the summary as one JSON object and nothing else")
    out.add_argument("--heatmap", metavar="FILE.png",
                     help="also draw the miss-region heatmap of two axes to this file (a sweep "
                     "with facets, or several checks, writes FILE-CHECK.png per check: each "
                     "name is printed)")
    out.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    out.add_argument("--force", action="store_true",
                     help="write to a device or through a symlink at --out/--heatmap/--junit, "
                     "or over the default out/NAME.csv")
    add_junit_option(out, "a test case per check, a failure per world --fail-on names")
    compareopts.add_gate_options(parser.add_argument_group("CI gate"), expect=False)
    add_pool_options(parser.add_argument_group("pool"), "sweep")
    parser.set_defaults(handler=_handler("sweep", "cmd_sweep"))


def add_hunt_parser(sub: Any) -> None:
    """``hunt --check NAME ...``: the worlds that fool one check."""
    parser = _sub(sub, "hunt", help="search the worlds for the ones where a check's verdict is wrong",
                  description="Search the space of worlds around a scenario with hypothesis for "
                  "worlds where the check's verdict disagrees with the ground truth (missed, "
                  "false_alarm, undecided, error); shrink each kind to its smallest world and "
                  "write it as a scenario file with an [expect] table, which `testbed compare "
                  "FILE --check NAME` reproduces.",
                  examples=["testbed hunt --check count",
                            "testbed hunt --check mycheck.py:Mine --budget 500 --out found/",
                            "testbed hunt --check count --scenario slow-crash-loop "
                            "--set release.crash_after_s=3",
                            "testbed hunt --check-cmd 'node examples/checks/timestamp.js' --junit out/h.xml"],
                  status="exit status: 0 nothing found, 1 found at least one world, 2 bad input; "
                  "the JUnit report lists each found world as skipped (green in a JUnit "
                  "publisher) unless --fail-on found makes it a failure")
    checks = parser.add_argument_group("the check")
    # Appended, not stored: a second --check would otherwise replace the first in silence;
    # kept as a list, it is refused in _check_spec with the count.
    add_check_option(checks, what="the check to hunt: a built-in name",
                     note="or give one --check-cmd instead", how="exactly one")
    add_check_opt_option(checks)
    add_check_cmd_options(checks, single=True)
    real = parser.add_argument_group("a real process (the Machines API twin)")
    add_process_options(real, command="hunt", where="hunt takes one --check-http (and no --check)")
    world = parser.add_argument_group("the search")
    from platform_testbed.sim.config.options import HUNT_SCENARIO  # noqa: PLC0415

    world.add_argument("--scenario", default=HUNT_SCENARIO,
                       help=f"the base world: a shipped name or a .toml path (default {HUNT_SCENARIO})")
    world.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                       help="override a value of the base world, e.g. --set truth=crash "
                       "(the ground truth; repeatable)")
    options.add(world, "budget", "hunt")
    add_seed_option(world, "hunt")
    _limits_group(parser, "hunt", http=True)
    out = parser.add_argument_group("outputs")
    out.add_argument("--out", default="hunt-out", metavar="DIR",
                     help="folder for the scenario files, created if missing (default hunt-out/)")
    out.add_argument("--force", action="store_true",
                     help="write into a --out folder that holds an earlier hunt's files "
                     "(and --junit to a device or through a symlink)")
    out.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    out.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_junit_option(out, "a test case per world found, skipped unless --fail-on found")
    gate = parser.add_argument_group("CI gate")
    gate.add_argument("--fail-on", action="append", default=[], metavar="found",
                      help="make each world found a failure (an error where the check gave no "
                      "verdict) in the JUnit report; without it each is a skipped case")
    parser.set_defaults(handler=_handler("hunt", "cmd_hunt"))


def add_rollout_parser(sub: Any) -> None:
    """``rollout SCENARIO [--seed N] [--runs N] [--set K=V]... [--json]``."""
    parser = _sub(sub, "rollout", help="simulate a rolling deploy behind a load balancer and count its 502s",
                  description="Simulate a rolling deploy behind a load balancer; count 502s per run.",
                  examples=["testbed rollout original", "testbed rollout fixed --runs 20 --summary",
                            "testbed rollout original --set deploy.serve_after_drain_s=15 --json"],
                  status=STATUS)
    parser.add_argument("scenario", help="a shipped rollout's name (testbed list), e.g. "
                        "original, or a .toml path")
    add_seed_option(parser, "rollout")
    options.add(parser, "rollout_runs", "rollout")
    add_set_option(parser, what="a setting", dest="sets")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--summary", action="store_true",
                        help="totals, timing and expectations only: no row (or JSON entry) per run")
    parser.set_defaults(handler=_handler("rollout", "rollout_command"))


def add_lint_timing_parser(sub: Any) -> None:
    """``lint-timing CONFIG.toml [--json]``."""
    parser = _sub(sub, "lint-timing",
                  help="check a rollout config's drain / health-check / grace-period invariants",
                  description="Check the timing invariants of a rollout config; exit 1 if one is broken.",
                  examples=["testbed lint-timing original", "testbed lint-timing my-rollout.toml --json"])
    parser.add_argument("config", help="a rollout .toml file (or a shipped rollout name)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=_handler("rollout", "lint_timing_command"))


def add_region_parser(sub: Any) -> None:
    """``region sept25 [--json] [--workers N] [--no-progress]`` (``sim.cli.region``)."""
    region = _sub(sub, "region", help="print the unknowns consistent with an incident (sept25)",
                  description="Run the incident's sweep of unknowns and print the points "
                  "consistent with what happened: on 25 September count marked the publishes "
                  "live and timestamp would have failed them.",
                  examples=["testbed region sept25", "testbed region sept25 --json --workers 2"])
    region.add_argument("name", choices=["sept25"], help="the incident")
    options.add(region, "workers", "region")
    region.add_argument("--json", action="store_true", help="one JSON object on stdout")
    region.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    region.set_defaults(handler=_handler("region", "cmd_region"))


def add_serve_parser(sub: Any) -> None:
    """``serve SCENARIO ...``: the world over Fly's Machines API."""
    serve = _sub(sub, "serve",
                 help="serve a scenario's world over Fly's Machines API for a real deploy step",
                 description="Serve the scenario's app on 127.0.0.1 in the shapes of Fly's "
                 "Machines API (list, get, update, wait, start/stop/restart, leases; a bearer "
                 "token required). The world runs instantly to the publish, then on the wall "
                 "clock. On Ctrl-C or at the horizon: what the world did, the ground truth, and "
                 "every request.",
                 examples=["testbed serve sept25-crash-loop",
                           "testbed serve sept25-crash-loop --port 4280 --token s3cret --record looks.jsonl"])
    world = serve.add_argument_group("the world")
    world.add_argument("scenario", help="a shipped scenario name or a .toml path")
    add_seed_option(world, "serve")
    add_set_option(world, dest="sets")
    options.add(world, "horizon_s", "serve")
    server = serve.add_argument_group("the server (127.0.0.1 only)")
    options.add(server, "port", "serve")
    server.add_argument("--token", help="the bearer token to require (default: a random one, printed)")
    options.add(server, "speed", "serve")
    out = serve.add_argument_group("outputs")
    out.add_argument("--record", metavar="FILE",
                     help="write the looks the client took as a recording for `testbed replay`")
    out.add_argument("--force", action="store_true", help="write --record through a symlink")
    out.add_argument("--json", action="store_true", help="the report as one JSON object on stdout")
    serve.set_defaults(handler=_handler("serve", "serve_command"))


#: Every subcommand in the order ``testbed --help`` lists them.
ADDERS = (add_list_parser, add_compare_parser, add_replay_parser, add_checks_parser,
          add_series_parser, add_sweep_parser, add_hunt_parser, add_rollout_parser,
          add_lint_timing_parser, add_region_parser)

__all__ = ["ADDERS", "PRECEDENCE", "Formatter", "add_serve_parser", "checkopts", "epilog"]
