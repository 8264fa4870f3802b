"""The ``testbed`` command line: list, compare (and the subcommands other modules add)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from checks import BUILTIN_CHECKS, Check
from sim import about, checkcmd, completion, expect, junit, scenario
from sim.checklimits import add_check_limits, apply_check_limits, restore_limits, save_limits
from sim.compareopts import (
    INLINE_RUNS,
    MAX_RUNS,
    RUNS_ENV,
    add_output_options,
    check_outputs,
    details,
)
from sim.hunt.cli import add_hunt_parser
from sim.loader import build_checks, load_checks, setups
from sim.platform.profiles import DEFAULT_PROFILE, PROFILES
from sim.publish.compare import SCHEMA_VERSION, compare
from sim.publish.world import run
from sim.recording import Recorder, load_recordings, replay_all, replay_json
from sim.rollout import config as rollout_config
from sim.rollout.cli import add_lint_timing_parser, add_rollout_parser
from sim.scenario import BadInput, parse_value
from sim.settings import at_most, env_limit
from sim.show import report
from sim.signals import Terminated, exit_on_signals, restore_signals
from sim.sweep.cli import add_sweep_parser

EXIT_OK, EXIT_EXPECTATION, EXIT_BAD_INPUT = 0, 1, 2
# As a shell reports a command ended by SIGINT (Ctrl-C) or SIGTERM: 128 + the signal.
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
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


def _options(items: list[str]) -> dict[str, Any]:
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--check-opt {item!r}: expected KEY=VALUE")
        options[key] = parse_value(value)
    return options


def cmd_list(args: argparse.Namespace) -> int:
    """Print the shipped scenarios (or the event profiles), one line each."""
    if args.profiles:
        return _list_profiles(args.json)
    publishes = {n: _line(scenario.load(n).description) for n in scenario.shipped()}
    rollouts = {n: _line(rollout_config.load(n).description) for n in rollout_config.shipped()}
    print(report.listing({"publish scenarios (testbed compare NAME)": publishes,
                          "rollout scenarios (testbed rollout NAME)": rollouts}))
    return EXIT_OK


def _line(text: str) -> str:
    return " ".join(text.split())


def _list_profiles(as_json: bool) -> int:
    """The event profiles: what each writes per crash, and its sources."""
    if as_json:
        print(json.dumps({
            "schema_version": 1,
            "default": DEFAULT_PROFILE,
            "profiles": [
                {"name": p.name, "summary": p.summary, "events_per_crash": p.per_crash,
                 "sources": p.sources}
                for p in PROFILES.values()
            ],
        }))
        return EXIT_OK
    print(report.listing({f"event profiles ([platform] events = NAME; default {DEFAULT_PROFILE})": {
        p.name: f"{p.per_crash} events a crash: {p.summary}\nsources: {p.sources}"
        for p in PROFILES.values()}}))
    return EXIT_OK


def cmd_series(args: argparse.Namespace) -> int:
    """Run every check in every publish of a series file (several apps, one day)."""
    from sim.publish.series import render, run_series  # noqa: PLC0415

    specs = args.check or ["count", "timestamp"]
    names = [getattr(c, "name", "") for c in load_checks(specs, {})]
    result = run_series(args.series, specs)
    if args.json:
        print(json.dumps({
            "schema_version": 1,
            "series": result.name,
            "publishes": [
                {"label": p.label, "scenario": p.scenario.name, "seed": p.seed,
                 "outcomes": {r.check: r.outcome for r in p.results},
                 "late_failure_at_s": {r.check: r.late_failure_at_s for r in p.results}}
                for p in result.publishes
            ],
            "late_failures": {name: result.late_failures(name) for name in names},
            "expectations_failed": result.failed_expectations,
        }))
    else:
        print(render(result, names))
    return EXIT_EXPECTATION if result.failed_expectations else EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    """Run the checks side by side in the same world(s)."""
    apply_check_limits(args)
    at_most("--runs", args.runs, env_limit(RUNS_ENV, MAX_RUNS), RUNS_ENV)
    loaded = scenario.load(args.scenario, args.set)
    # Every output path is judged before the first world runs: a bad one costs nothing.
    check_outputs(args)
    names_asked = checkcmd.with_commands(args.check, args)
    built = build_checks(names_asked, loaded.check, _options(args.check_opt))
    checks = [b.check for b in built]
    names = [b.setup.name for b in built]
    for key in loaded.expect:
        if key not in BUILTIN_CHECKS and key not in names:
            raise BadInput(f"expect.{key}: unknown check (built-in: {', '.join(BUILTIN_CHECKS)})")
    seed = loaded.seed if args.seed is None else args.seed
    if seed < 0:
        raise BadInput(f"--seed: must be 0 or more (got {seed})")
    recorder = Recorder(loaded.publish_started_ms, loaded.check.model_dump(), setups(built))
    seeds: Iterable[int] = range(seed, seed + args.runs)
    # A bar on stderr for long comparisons, only where a person watches (never in CI logs).
    if args.runs >= 50 and sys.stderr.isatty():
        from rich.console import Console  # noqa: PLC0415 -- rich only when a bar is shown
        from rich.progress import track  # noqa: PLC0415

        seeds = track(seeds, description=loaded.name[:24], total=args.runs, transient=True,
                      console=Console(stderr=True))
    # Runs are held (for --json's "runs" and the one-run report) only while few; past
    # INLINE_RUNS, or with --summary, memory stays flat in the number of runs.
    # --junit lists every seed: it holds the runs too.
    keep = (not args.summary and args.runs <= INLINE_RUNS) or bool(args.junit)
    with details(args.details, args.force, loaded.publish_started_ms) as on_run:
        result = compare(loaded, checks, seeds, on_result=recorder if args.record else None,
                         setups=setups(built), keep_runs=keep, on_run=on_run)
    junit.write(args.junit, [junit.compare_suite(result)])
    if args.record:
        recorder.save(args.record, args.force)
        print(f"looks recorded to {args.record}", file=sys.stderr)
    if args.timeline:
        write_timeline(args.timeline, loaded, checks, seed)
    if args.json:
        print(json.dumps(result.to_json(), indent=None, separators=(",", ":")))
    else:
        if args.runs == 1 and result.seeds:
            print(report.side_by_side(result, result.seeds[0], debug=args.debug))
        else:
            print(report.summary(result, debug=args.debug))
        if text := report.expectations(result):
            print(text)
    return EXIT_EXPECTATION if result.expectations_failed else EXIT_OK


def write_timeline(path: str, loaded: scenario.Scenario, checks: list[Check], seed: int) -> None:
    """Re-run each check in the first seed's world with a trace and save the timeline figure."""
    # matplotlib takes a while to import: load it only when a timeline is asked for.
    try:
        from sim.show.plot import save_timeline  # noqa: PLC0415
    except ModuleNotFoundError as error:
        raise BadInput(f"--timeline needs matplotlib ({error}): "
                       "pip install 'platform-simulator-testbed[plot]'") from None

    save_timeline(path, loaded, [run(loaded, seed, check, trace=True) for check in checks])
    print(f"timeline written to {path}", file=sys.stderr)


def cmd_replay(args: argparse.Namespace) -> int:
    """Feed recorded looks (simulator or real Fly Machines API JSON) to checks."""
    apply_check_limits(args)
    wanted = expect.parse(args.expect)
    recordings = load_recordings(args.recording, args.at_ms, args.publish_ms)
    rows = replay_all(recordings, checkcmd.with_commands(args.check, args), _options(args.check_opt))
    misses = expect.judge(wanted, rows)
    junit.write(args.junit, [junit.replay_suite(args.recording, rows, misses)])
    if args.json:
        document = expect.annotate(replay_json(args.recording, rows), wanted, misses)
        print(json.dumps(document, separators=(",", ":")))
    else:
        print(report.replayed(args.recording, rows, debug=args.debug) + expect.text(wanted, misses))
    return EXIT_EXPECTATION if expect.unmet(misses) else EXIT_OK


def cmd_checks(args: argparse.Namespace) -> int:
    """The built-in checks × shipped scenarios table (Markdown), as in the README."""
    apply_check_limits(args)
    at_most("--runs", args.runs, env_limit(RUNS_ENV, MAX_RUNS), RUNS_ENV)
    reports = []
    asked = args.check or (list(BUILTIN_CHECKS) if args.check_cmd else [])
    names = checkcmd.with_commands(asked, args)
    extra = _options(args.check_opt)
    rules: dict[str, str] = {}
    for name in scenario.shipped():
        loaded = scenario.load(name)
        built = build_checks(names, loaded.check, extra)
        reports.append(compare(loaded, [b.check for b in built],
                               range(loaded.seed, loaded.seed + args.runs), setups=setups(built),
                               keep_runs=bool(args.junit)))
        rules = {b.setup.name: _rule(b.check) for b in built}
    rules |= checkcmd.rules(names)  # --check-cmd rows: the command is their rule
    junit.write(args.junit, [junit.compare_suite(r, "checks") for r in reports])
    if args.json:
        summary = {
            r.scenario: {check: counts.to_json() for check, counts in r.summary.items()}
            for r in reports
        }
        print(json.dumps({"schema_version": SCHEMA_VERSION, "rules": rules, "runs": args.runs,
                          "outcomes": summary}))
    else:
        print(report.checks_table(rules, reports, args.runs, markdown=args.markdown))
    return EXIT_OK


def _rule(check: Check) -> str:
    """The first line of a check's docstring (its class's): the rule it models."""
    doc = type(check).__doc__ or ""
    lines = doc.strip().splitlines()
    return lines[0].replace("``", "`") if lines else "(no docstring)"


def _add_debug(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of a check that raised")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = _Parser(
        prog="testbed",
        description="Find the worlds in which a deploy health check gives the wrong verdict.",
        epilog="exit status: 0 ran, 1 a declared [expect] did not hold, 2 bad input",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {about.version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    listing = sub.add_parser("list", help="the shipped scenarios, one line each")
    listing.add_argument("--profiles", action="store_true",
                         help="list the event profiles (which events a machine writes) instead")
    listing.add_argument("--json", action="store_true", help="with --profiles: one JSON object")
    listing.set_defaults(handler=cmd_list)

    comp = sub.add_parser(
        "compare",
        help="run checks side by side in the same simulated world",
        description="Run each check in the same simulated world (same seed) and compare "
        "verdicts, outcomes against the ground truth, and what each cost the site.",
        epilog=PRECEDENCE,
    )
    comp.add_argument("scenario", help="a shipped scenario name (see `testbed list`) or a .toml path")
    comp.add_argument(
        "--check", action="append", default=[], metavar="NAME",
        help=f"a built-in check ({', '.join(BUILTIN_CHECKS)}) or package.module:name; "
        "repeat for several (default: all built-ins)",
    )
    comp.add_argument(
        "--check-opt", action="append", default=[], metavar="[NAME.]KEY=VALUE",
        help="an option for every chosen check declaring KEY, built-in or yours, or for check "
        "NAME alone (repeatable; overrides the scenario's [check], see below)",
    )
    comp.add_argument("--seed", type=int, help="seed of the first world (default: the scenario's)")
    comp.add_argument("--runs", type=int, default=1, help="run seeds SEED … SEED+N-1 (default 1)")
    comp.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="override a scenario value, e.g. --set platform.event_log_cap=3 (repeatable)",
    )
    comp.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    add_output_options(comp)
    _add_debug(comp)
    checkcmd.add_arguments(comp)
    comp.set_defaults(handler=cmd_compare)

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
    rep.add_argument(
        "--check", action="append", default=[], metavar="NAME",
        help="a built-in check or package.module:name (default: all built-ins; a run "
        "recorded by the simulator goes to the check that recorded it)",
    )
    rep.add_argument("--check-opt", action="append", default=[], metavar="[NAME.]KEY=VALUE",
                     help="an option for every chosen check declaring KEY, or for check NAME "
                     "(repeatable; overrides the recording's check_options)")
    rep.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    _add_debug(rep)
    expect.add_argument(rep)
    checkcmd.add_arguments(rep)
    rep.set_defaults(handler=cmd_replay)

    table = sub.add_parser(
        "checks",
        help="the built-in checks, the rule each models, and its outcomes on every scenario",
    )
    table.add_argument("--runs", type=int, default=10, help="seeds per scenario (default 10)")
    table.add_argument(
        "--check", action="append", default=[], metavar="NAME",
        help="a built-in check or package.module:name (default: all built-ins); repeatable",
    )
    table.add_argument("--check-opt", action="append", default=[], metavar="[NAME.]KEY=VALUE",
                       help="an option for the checks declaring KEY (as in compare)")
    table.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    table.add_argument("--markdown", action="store_true", help="print a Markdown table (the README's)")
    add_check_limits(comp, rep, table)
    junit.add_argument(comp, rep, table)
    checkcmd.add_arguments(table)
    table.set_defaults(handler=cmd_checks)

    series = sub.add_parser(
        "series", help="several publishes (apps, one day), every check in each",
        description="Run every check in every publish of a series file "
        "(scenarios/series/*.toml): a row per publish, and per check how many publishes it "
        "let go live that the reconciler failed later. Exit 1 if expect_late_failures fails.",
    )
    series.add_argument("series", help="a shipped series name (sept25-three-publishes) or a .toml path")
    series.add_argument("--check", action="append", default=[],
                        help="a check to run (repeatable; default: count and timestamp)")
    series.add_argument("--json", action="store_true", help="one JSON object on stdout")
    series.set_defaults(handler=cmd_series)

    for add in (add_sweep_parser, add_hunt_parser, add_rollout_parser, add_lint_timing_parser,
                completion.add_completion_parser):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``testbed`` console script."""
    parser = build_parser()
    completion.hook(parser)  # a shell asking for completions gets them here, and no more
    args = parser.parse_args(argv)
    previous = exit_on_signals()
    saved_env = save_limits()
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        print("testbed: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("testbed: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except BadInput as error:
        print(f"testbed: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (``| head``): nothing more to say, and nothing to say it to.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    finally:
        restore_signals(previous)
        restore_limits(saved_env)
        checkcmd.close_all()  # no --check-cmd child outlives the command, whatever happened
    return code


if __name__ == "__main__":
    sys.exit(main())
