"""The ``rollout`` and ``lint-timing`` subcommands, for the main ``testbed`` parser to add."""

from __future__ import annotations

import argparse
import json
from typing import Any

from checks.timing import check_timing
from sim.rollout.config import load
from sim.rollout.expect import check_expectations
from sim.rollout.report import lint_json, lint_text, rollout_json, rollout_table
from sim.rollout.world import run
from sim.settings import BadInput

#: Version of the ``--json`` documents (sim/schemas/rollout.schema.json, lint-timing.schema.json).
SCHEMA_VERSION = 1

# The generous cap is for typos (--runs 1000000), not a limit of the model.
MAX_RUNS = 100_000


def add_rollout_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``rollout SCENARIO [--seed N] [--runs N] [--set K=V]... [--json]``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "rollout",
        help="simulate a rolling deploy behind a load balancer and count its 502s",
        description="Simulate a rolling deploy behind a load balancer; count 502s per run.",
    )
    parser.add_argument("scenario", help="a shipped name in scenarios/rollouts/ or a .toml path")
    parser.add_argument("--seed", type=int, default=None, help="first seed (default: scenario's)")
    parser.add_argument("--runs", type=int, default=1, help="runs with seeds seed, seed+1, ...")
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting, e.g. deploy.serve_after_drain_s=15",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--summary", action="store_true",
                        help="totals, timing and expectations only: no row (or JSON entry) per run")
    parser.set_defaults(handler=rollout_command)
    return parser


def add_lint_timing_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``lint-timing CONFIG.toml [--json]``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "lint-timing",
        help="check a rollout config's drain / health-check / grace-period invariants",
        description="Check the timing invariants of a rollout config; exit 1 if one is broken.",
    )
    parser.add_argument("config", help="a rollout .toml file (or a shipped rollout name)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=lint_timing_command)
    return parser


def rollout_command(args: argparse.Namespace) -> int:
    """Run the scenario over the seeds and print the report; 1 if an expectation failed."""
    scenario = load(args.scenario, args.sets)
    seed = scenario.seed if args.seed is None else args.seed
    if seed < 0:
        raise BadInput(f"--seed {seed}: must be at least 0")
    if not 1 <= args.runs <= MAX_RUNS:
        raise BadInput(f"--runs {args.runs}: must be between 1 and {MAX_RUNS}")
    results = [run(scenario, s) for s in range(seed, seed + args.runs)]
    timing = check_timing(scenario.drain_timing(), scenario.timing.max_reheal_s)
    expectations = check_expectations(scenario.expect, results)
    if args.json:
        document = {"schema_version": SCHEMA_VERSION,
                    **rollout_json(scenario, results, timing, expectations)}
        if args.summary:
            del document["runs"]
        print(json.dumps(document))
    else:
        print(rollout_table(scenario, results, timing, expectations, rows=not args.summary))
    return 0 if all(e.held for e in expectations) else 1


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
