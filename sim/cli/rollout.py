"""What ``rollout`` and ``lint-timing`` do; their arguments are in ``sim.cli.parsers``."""

from __future__ import annotations

import argparse
import json

from platform_testbed.checks.timing import check_timing
from platform_testbed.sim.config.options import option
from platform_testbed.sim.config.settings import at_most, first_seed, seed_range
from platform_testbed.sim.rollout.config import load
from platform_testbed.sim.rollout.report import lint_json, lint_text, rollout_table
from platform_testbed.sim.rollout.runs import SCHEMA_VERSION, run_rollout

__all__ = ["MAX_RUNS", "SCHEMA_VERSION", "lint_timing_command", "rollout_command"]

#: The registry's cap on runs (sim.config.options ``max_rollout_runs``, with why).
MAX_RUNS = int(option("max_rollout_runs").default or 0)


def rollout_command(args: argparse.Namespace) -> int:
    """Run the scenario over the seeds and print the report; 1 if an expectation failed."""
    scenario = load(args.scenario, args.sets)
    seed = scenario.seed if args.seed is None else args.seed
    # The same forms as compare's: the option, the rule, then the value given.
    first_seed(seed)
    at_most("--runs", args.runs, MAX_RUNS)
    runs = run_rollout(scenario, seed_range("--runs", seed, args.runs))  # none past MAX_SEED
    if args.json:
        document = runs.to_json()
        if args.summary:
            del document["runs"]
        print(json.dumps(document))
    else:
        print(rollout_table(scenario, runs.runs, runs.timing, runs.expectations,
                            rows=not args.summary))
    return 1 if runs.expectations_failed else 0


def lint_timing_command(args: argparse.Namespace) -> int:
    """Check the timing invariants; 1 when one is broken."""
    scenario = load(args.config)
    timing = check_timing(scenario.drain_timing(), scenario.timing.max_reheal_s)
    source = args.config
    if args.json:
        print(json.dumps({"schema_version": SCHEMA_VERSION, **lint_json(source, timing)}))
    else:
        print(lint_text(source, timing))
    return 0 if all(t.ok for t in timing) else 1
