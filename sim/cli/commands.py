"""The handlers of ``testbed list``, ``compare``, ``replay``, ``checks`` and ``series``.

``sim.cli.parser`` builds the parser from light modules only and imports this module when one
of these commands runs: the model (simpy, numpy, pydantic) loads here, after the
command line is parsed and the signal handlers are in place, never for ``--help``, a
shell's Tab or a mistyped option.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platform_testbed.checks import BUILTIN_CHECKS, Check
from platform_testbed.sim.checkload.budget import CheckBudget, check_budget
from platform_testbed.sim.checkload.loader import build_checks, load_checks, setups
from platform_testbed.sim.cli import expect, twinopts
from platform_testbed.sim.cli.checkopts import check_options
from platform_testbed.sim.cli.compareopts import (
    INLINE_RUNS,
    check_outputs,
    details,
    expect_sets,
    fail_on,
    failed_on,
)
from platform_testbed.sim.cli.pool import seed_runner
from platform_testbed.sim.config import options, scenario
from platform_testbed.sim.config.profiles import DEFAULT_PROFILE, PROFILES
from platform_testbed.sim.config.rules import did_you_mean
from platform_testbed.sim.config.scenario import BadInput
from platform_testbed.sim.config.settings import first_seed, seed_range
from platform_testbed.sim.publish.compare import SCHEMA_VERSION, compare
from platform_testbed.sim.publish.recording import Recorder, load_recordings, replay_all, replay_json
from platform_testbed.sim.publish.world import run
from platform_testbed.sim.runtime import installs
from platform_testbed.sim.show import report

if TYPE_CHECKING:
    from rich.progress import Progress

# As in sim.cli.parser (which cannot be imported from here: it imports this module).
EXIT_OK, EXIT_EXPECTATION = 0, 1


def _with_commands(names: list[str], args: argparse.Namespace) -> list[str]:
    """The check list with each --check-cmd as a ``cmd:`` entry; the check commands' module
    (their process code) loads only when the command line names one."""
    if not (args.check_cmd or args.check_cmd_name):
        return list(names)
    from platform_testbed.sim import checkcmd  # noqa: PLC0415 -- see the docstring

    return checkcmd.with_commands(names, args)


def _command_rules(names: list[str]) -> dict[str, str]:
    if not any(n.startswith("cmd:") for n in names):
        return {}
    from platform_testbed.sim import checkcmd  # noqa: PLC0415 -- see _with_commands

    return checkcmd.rules(names)


def _junit_path(args: argparse.Namespace) -> Path | None:
    """``--junit``'s path, judged before any work; the report's module loads only for one."""
    if args.junit is None:
        return None
    from platform_testbed.sim.show import junit  # noqa: PLC0415 -- xml.etree: only for a report

    return junit.checked(args)


def _write_junit(path: Path | None, suites: Callable[[Any], list[Any]]) -> None:
    if path is not None:
        from platform_testbed.sim.show import junit  # noqa: PLC0415 -- see _junit_path

        junit.write(path, suites(junit))


def cmd_list(args: argparse.Namespace) -> int:
    """Print the shipped scenarios (or the event profiles), one line each."""
    if args.profiles:
        return _list_profiles(args.json)
    if args.json:  # the scenario listing has no JSON form (yet): refuse rather than ignore
        raise BadInput("--json: needs --profiles (the scenario listing is text only)")
    from platform_testbed.sim.rollout import config as rollout_config  # noqa: PLC0415 -- list alone

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
    from platform_testbed.sim.publish.series import run_series  # noqa: PLC0415
    from platform_testbed.sim.show.report import series_text  # noqa: PLC0415

    budget = check_budget(args)
    specs = args.check or ["count", "timestamp"]
    extra = check_options(args.check_opt)
    names = [getattr(c, "name", "") for c in load_checks(specs, {}, extra)]
    result = run_series(args.series, specs, budget, sets=args.set, extra=extra)
    if args.json:
        print(json.dumps({
            "schema_version": 1,
            "series": result.name,
            "publishes": [
                {"label": p.label, "scenario": p.scenario.name, "seed": p.seed,
                 "truth": p.scenario.truth,
                 "outcomes": {r.check: r.outcome for r in p.results},
                 "late_failure_at_s": {r.check: r.late_failure_at_s for r in p.results}}
                for p in result.publishes
            ],
            "late_failures": {name: result.late_failures(name) for name in names},
            "expectations_failed": result.failed_expectations,
            "expect_not_run": list(result.expect_not_run),
        }))
    else:
        print(series_text(result, names))
    return EXIT_EXPECTATION if result.failed_expectations else EXIT_OK


def _seeds_bar(
    runs: int, name: str, wall_clock: bool = False
) -> tuple[Progress | None, Callable[[int], None] | None]:
    """A bar on stderr for a long comparison and what advances it by a number of seeds.

    Long: 50 seeds or more, or any number when a real process runs in each seed's world
    (``wall_clock``: --check-http or --deploy-cmd, seconds of the wall clock a world; ten
    such runs were minutes with nothing shown). Only where a person watches (never in CI
    logs), and the sweep's bar, counting seeds: one a seed when they run here, a task's
    seeds at a time on a pool.
    """
    if (runs < 50 and not wall_clock) or not sys.stderr.isatty():
        return None, None
    from rich.console import Console  # noqa: PLC0415 -- rich only when a bar is shown

    from platform_testbed.sim.cli.sweep import sweep_progress  # noqa: PLC0415

    bar = sweep_progress(name, Console(stderr=True), unit="seeds", transient=True)
    return bar, partial(bar.advance, bar.add_task("compare", total=runs))


def _ticking(seeds: Iterable[int], tick: Callable[[int], None]) -> Iterator[int]:
    """The seeds, telling ``tick`` of each one as the next is asked for (it has run)."""
    for seed in seeds:
        yield seed
        tick(1)


def cmd_compare(args: argparse.Namespace) -> int:
    """Run the checks side by side in the same world(s)."""
    budget = check_budget(args)
    options.from_args("runs", args)  # 1 to the run limit (TESTBED_MAX_RUNS raises it)
    gate = fail_on(args.fail_on, scenario.OUTCOMES)
    loaded = scenario.load(args.scenario, [*args.set, *expect_sets(args.expect, scenario.OUTCOMES)])
    # Every output path is judged before the first world runs: a bad one costs nothing.
    check_outputs(args)
    args.junit = _junit_path(args)
    names_asked = _with_commands(args.check, args)
    steps = twinopts.steps(args)
    twinopts.bound_wall(steps, args.runs, "run(s)")
    # A real process alone replaces the all-built-ins default, as a --check-cmd does.
    built = [] if steps and not names_asked else build_checks(
        names_asked, loaded.check, check_options(args.check_opt))
    checks = [b.check for b in built]
    names = [b.setup.name for b in built]
    twinopts.check_against(steps, names, args)
    rows = names + [s.name for s in steps]  # a process's row is expected as any check's
    for item in args.expect:
        # Asked for on the command line (a CI gate): a check that does not run would pass
        # the gate unjudged. A file's [expect] of a built-in left out is "not judged".
        if (key := item.partition("=")[0].strip()) not in rows:
            raise BadInput(f"--expect {item!r}: {key} does not run (running: {', '.join(rows)}); "
                           f"add --check {key}")
    for key in loaded.expect:
        if key not in BUILTIN_CHECKS and key not in rows:
            # A hunt's found file expects the user's check, which is not built in: say how.
            raise BadInput(f"expect.{key}: unknown check{did_you_mean(key, [*BUILTIN_CHECKS, *rows])} "
                           f"(built-in: {', '.join(BUILTIN_CHECKS)}; "
                           f"running: {', '.join(rows)}); a check of your own runs with --check "
                           f"FILE.py:NAME or package.module:NAME")
    seed = loaded.seed if args.seed is None else args.seed
    # The first seed and the last (--seed S --runs N ends at S + N - 1), before any world runs.
    seeds: Iterable[int] = seed_range("--runs", first_seed(seed), args.runs)
    recorder = Recorder(loaded.publish_started_ms, loaded.check.model_dump(), setups(built))
    bar, tick = _seeds_bar(args.runs, loaded.name, wall_clock=bool(steps))
    runner = seed_runner(args, loaded, names_asked, check_options(args.check_opt), budget,
                         progress=tick)  # None: here
    rows_run = twinopts.spread(steps, loaded, seeds, args.workers)  # --workers N: a twin a world
    if tick is not None and runner is None:
        seeds = _ticking(seeds, tick)
    # Runs are held (for --json's "runs" and the one-run report) only while few; past
    # INLINE_RUNS, or with --summary, memory stays flat in the number of runs.
    # --junit lists every seed: it holds the runs too.
    keep = (not args.summary and args.runs <= INLINE_RUNS) or bool(args.junit)
    with bar or nullcontext(), details(args.details, args.force, loaded.publish_started_ms) as on_run:
        result = compare(loaded, checks, seeds, on_result=recorder if args.record else None,
                         setups=setups(built), keep_runs=keep, on_run=on_run, budget=budget,
                         steps=rows_run, runner=runner)
    twinopts.report_timings(steps)
    _write_junit(args.junit, lambda junit: [junit.compare_suite(result, fail_on=gate)])
    if args.record:
        recorder.save(args.record, args.force)
        print(f"looks recorded to {args.record}", file=sys.stderr)
    if args.timeline:
        write_timeline(args.timeline, loaded, checks, seed, budget)
    if args.json:
        print(json.dumps(result.to_json(), indent=None, separators=(",", ":")))
    else:
        if args.runs == 1 and result.seeds:
            print(report.side_by_side(result, result.seeds[0], debug=args.debug))
        else:
            print(report.summary(result, debug=args.debug))
        if text := report.expectations(result):
            print(text)
    gated = failed_on(result.summary, gate, [s.name for s in steps])
    for line in gated:
        print(line, file=sys.stderr)
    return EXIT_EXPECTATION if result.expectations_failed or gated else EXIT_OK


def write_timeline(
    path: str, loaded: scenario.Scenario, checks: list[Check], seed: int, budget: CheckBudget
) -> None:
    """Re-run each check in the first seed's world with a trace and save the timeline figure."""
    # matplotlib takes a while to import: load it only when a timeline is asked for.
    try:
        from platform_testbed.sim.show.plot import save_timeline  # noqa: PLC0415
    except ModuleNotFoundError as error:
        raise BadInput(f"--timeline needs matplotlib ({error}): {installs.PLOT}") from None

    runs = [run(loaded, seed, check, trace=True, budget=budget) for check in checks]
    save_timeline(path, loaded, runs)
    print(f"timeline written to {path}", file=sys.stderr)


def cmd_replay(args: argparse.Namespace) -> int:
    """Feed recorded looks (simulator or real Fly Machines API JSON) to checks."""
    budget = check_budget(args)
    args.junit = _junit_path(args)
    wanted = expect.parse(args.expect)
    recordings = load_recordings(args.recording, args.at_ms, args.publish_ms)
    rows = replay_all(recordings, _with_commands(args.check, args),
                      check_options(args.check_opt), budget)
    misses = expect.judge(wanted, rows)
    _write_junit(args.junit, lambda junit: [junit.replay_suite(args.recording, rows, misses)])
    if args.json:
        document = expect.annotate(replay_json(args.recording, rows), wanted, misses)
        print(json.dumps(document, separators=(",", ":")))
    else:
        print(report.replayed(args.recording, rows, debug=args.debug) + expect.text(wanted, misses))
    return EXIT_EXPECTATION if expect.unmet(misses) else EXIT_OK


def cmd_checks(args: argparse.Namespace) -> int:
    """The built-in checks × shipped scenarios table (Markdown), as in the README."""
    budget = check_budget(args)
    options.from_args("runs", args, command="checks")
    if args.seed is not None:
        first_seed(args.seed)
    args.junit = _junit_path(args)
    reports = []
    asked = args.check or (list(BUILTIN_CHECKS) if args.check_cmd else [])
    names = _with_commands(asked, args)
    extra = check_options(args.check_opt)
    shipped = scenario.shipped()
    # --check-http/--deploy-cmd: a row each beside the checks', in every scenario's worlds.
    steps = twinopts.steps(args)
    twinopts.bound_wall(steps, len(shipped) * args.runs, "world(s)")
    rules: dict[str, str] = {}
    bar, tick = _seeds_bar(len(shipped) * args.runs, "checks", wall_clock=bool(steps))
    with bar or nullcontext():
        for name in shipped:
            loaded = scenario.load(name, args.set)
            built = build_checks(names, loaded.check, extra)
            twinopts.check_against(steps, [b.setup.name for b in built], args)
            runner = seed_runner(args, loaded, names, extra, budget, progress=tick)
            first = loaded.seed if args.seed is None else args.seed
            seeds: Iterable[int] = seed_range("--runs", first, args.runs)
            if tick is not None and runner is None:
                seeds = _ticking(seeds, tick)
            reports.append(compare(loaded, [b.check for b in built], seeds, setups=setups(built),
                                   keep_runs=bool(args.junit), budget=budget, steps=steps,
                                   runner=runner, with_readings=False))  # the table shows none
            rules = {b.setup.name: _rule(b.check) for b in built}
    rules |= _command_rules(names)  # --check-cmd rows: the command is their rule
    rules |= twinopts.rules(steps)  # and a process's rows: its command
    twinopts.report_timings(steps)
    _write_junit(args.junit, lambda junit: [junit.compare_suite(r, "checks") for r in reports])
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
