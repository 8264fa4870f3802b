"""The ``testbed`` command line: list, compare (and the subcommands other modules add)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from checks import BUILTIN_CHECKS, Check
from sim import checkcmd, scenario
from sim.hunt.cli import add_hunt_parser
from sim.loader import load_checks
from sim.publish.compare import compare
from sim.publish.world import run
from sim.recording import Recorder, load_recordings, replay_all
from sim.rollout import config as rollout_config
from sim.rollout.cli import add_lint_timing_parser, add_rollout_parser
from sim.scenario import BadInput, parse_value
from sim.show import report
from sim.sweep.cli import add_sweep_parser

EXIT_OK, EXIT_EXPECTATION, EXIT_BAD_INPUT = 0, 1, 2


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
    """Print the shipped scenarios, one line each."""
    publishes = {n: scenario.load(n).description for n in scenario.shipped()}
    rollouts = {n: rollout_config.load(n).description for n in rollout_config.shipped()}
    width = max(map(len, [*publishes, *rollouts]), default=0)
    for title, found in (("publish scenarios (testbed compare NAME)", publishes),
                         ("rollout scenarios (testbed rollout NAME)", rollouts)):
        print(title)
        for name, description in found.items():
            first = " ".join(description.split())
            print(f"  {name:<{width}}  {first}")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    """Run the checks side by side in the same world(s)."""
    loaded = scenario.load(args.scenario, args.set)
    if args.runs < 1:
        raise BadInput(f"--runs: must be at least 1 (got {args.runs})")
    names_asked = checkcmd.with_commands(args.check, args)
    checks = load_checks(names_asked, loaded.check.model_dump(), _options(args.check_opt))
    names = [getattr(c, "name", "") for c in checks]
    for key in loaded.expect:
        if key not in BUILTIN_CHECKS and key not in names:
            raise BadInput(f"expect.{key}: unknown check (built-in: {', '.join(BUILTIN_CHECKS)})")
    seed = loaded.seed if args.seed is None else args.seed
    if seed < 0:
        raise BadInput(f"--seed: must be 0 or more (got {seed})")
    recorder = Recorder(
        loaded.platform.epoch_ms + round(loaded.publish.at_s * 1000), loaded.check.model_dump()
    )
    seeds: Iterable[int] = range(seed, seed + args.runs)
    # A bar on stderr for long comparisons, only where a person watches (never in CI logs).
    if args.runs >= 50 and sys.stderr.isatty():
        from rich.console import Console  # noqa: PLC0415 -- rich only when a bar is shown
        from rich.progress import track  # noqa: PLC0415

        seeds = track(seeds, description=loaded.name, total=args.runs, transient=True,
                      console=Console(stderr=True))
    result = compare(loaded, checks, seeds, on_result=recorder if args.record else None)
    if args.record:
        recorder.save(args.record)
        print(f"looks recorded to {args.record}", file=sys.stderr)
    if args.timeline:
        write_timeline(args.timeline, loaded, checks, seed)
    if args.json:
        print(json.dumps(result, indent=None, separators=(",", ":")))
    else:
        if args.runs == 1:
            print(report.side_by_side(result, result["runs"][0]))
        else:
            print(report.summary(result))
        if text := report.expectations(result):
            print(text)
    return EXIT_EXPECTATION if result["expectations_failed"] else EXIT_OK


def write_timeline(path: str, loaded: scenario.Scenario, checks: list[Check], seed: int) -> None:
    """Re-run each check in the first seed's world with a trace and save the timeline figure."""
    # matplotlib takes a while to import: load it only when a timeline is asked for.
    from sim.show.plot import save_timeline  # noqa: PLC0415

    save_timeline(path, loaded, [run(loaded, seed, check, trace=True) for check in checks])
    print(f"timeline written to {path}", file=sys.stderr)


def cmd_replay(args: argparse.Namespace) -> int:
    """Feed recorded looks (simulator or real Fly Machines API JSON) to checks."""
    recordings = load_recordings(args.recording, args.at_ms, args.publish_ms)
    rows = replay_all(recordings, checkcmd.with_commands(args.check, args), _options(args.check_opt))
    if args.json:
        print(json.dumps({"recording": args.recording, "results": rows}, separators=(",", ":")))
        return EXIT_OK
    print(report.replayed(args.recording, rows))
    return EXIT_OK


def cmd_checks(args: argparse.Namespace) -> int:
    """The built-in checks × shipped scenarios table (Markdown), as in the README."""
    if args.runs < 1:
        raise BadInput(f"--runs: must be at least 1 (got {args.runs})")
    reports = []
    names = checkcmd.with_commands(list(BUILTIN_CHECKS) if args.check_cmd else [], args)
    for name in scenario.shipped():
        loaded = scenario.load(name)
        checks = load_checks(names, loaded.check.model_dump())
        reports.append(compare(loaded, checks, range(loaded.seed, loaded.seed + args.runs)))
    rules = {
        name: (cls.__doc__ or "").strip().splitlines()[0].replace("``", "`")
        for name, cls in BUILTIN_CHECKS.items()
    }
    rules |= checkcmd.rules(names)  # --check-cmd rows: the command is their rule
    if args.json:
        summary = {r["scenario"]: r["summary"] for r in reports}
        print(json.dumps({"rules": rules, "runs": args.runs, "outcomes": summary}))
    else:
        print(report.checks_table(rules, reports, args.runs))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = _Parser(
        prog="testbed",
        description="Find the worlds in which a deploy health check gives the wrong verdict.",
        epilog="exit status: 0 ran, 1 a declared [expect] did not hold, 2 bad input",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    listing = sub.add_parser("list", help="the shipped scenarios, one line each")
    listing.set_defaults(handler=cmd_list)

    comp = sub.add_parser(
        "compare",
        help="run checks side by side in the same simulated world",
        description="Run each check in the same simulated world (same seed) and compare "
        "verdicts, outcomes against the ground truth, and what each cost the site.",
    )
    comp.add_argument("scenario", help="a shipped scenario name (see `testbed list`) or a .toml path")
    comp.add_argument(
        "--check", action="append", default=[], metavar="NAME",
        help=f"a built-in check ({', '.join(BUILTIN_CHECKS)}) or package.module:name; "
        "repeat for several (default: all built-ins)",
    )
    comp.add_argument(
        "--check-opt", action="append", default=[], metavar="KEY=VALUE",
        help="an option for a user check class (repeatable)",
    )
    comp.add_argument("--seed", type=int, help="seed of the first world (default: the scenario's)")
    comp.add_argument("--runs", type=int, default=1, help="run seeds SEED … SEED+N-1 (default 1)")
    comp.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="override a scenario value, e.g. --set platform.event_log_cap=3 (repeatable)",
    )
    comp.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    comp.add_argument(
        "--timeline", metavar="FILE.png",
        help="also write a crash timeline of the first seed's world, one panel per check",
    )
    comp.add_argument(
        "--record", metavar="LOOKS.jsonl",
        help="write every look of every run as Fly Machines API JSON, one look per line",
    )
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
    rep.add_argument("--check-opt", action="append", default=[], metavar="KEY=VALUE",
                     help="an option for a user check class (repeatable)")
    rep.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    checkcmd.add_arguments(rep)
    rep.set_defaults(handler=cmd_replay)

    table = sub.add_parser(
        "checks",
        help="the built-in checks, the rule each models, and its outcomes on every scenario",
    )
    table.add_argument("--runs", type=int, default=10, help="seeds per scenario (default 10)")
    table.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    checkcmd.add_arguments(table)
    table.set_defaults(handler=cmd_checks)

    add_sweep_parser(sub)
    add_hunt_parser(sub)
    add_rollout_parser(sub)
    add_lint_timing_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``testbed`` console script."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except BadInput as error:
        print(f"testbed: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        checkcmd.close_all()  # no --check-cmd child outlives the command, whatever happened
    return code


if __name__ == "__main__":
    sys.exit(main())
