"""The arguments of ``testbed sweep``, ``rollout`` and ``lint-timing``, apart from their code.

Importing ``sim.cli.sweep`` or ``sim.cli.rollout`` runs its package's ``__init__``, which
loads the model; the parser is built from this module instead, and each handler imports
its command's module only when that command runs (see ``sim.cli.parser``).
"""

from __future__ import annotations

import argparse
from typing import Any

from platform_testbed.sim.checkload.budget import add_check_limits
from platform_testbed.sim.cli import twinopts
from platform_testbed.sim.cli.compareopts import add_gate_options
from platform_testbed.sim.show import junit


def _sweep(args: argparse.Namespace) -> int:
    from platform_testbed.sim.cli.sweep import cmd_sweep  # noqa: PLC0415 -- see the module docstring

    return cmd_sweep(args)


def _rollout(args: argparse.Namespace) -> int:
    from platform_testbed.sim.cli.rollout import rollout_command  # noqa: PLC0415 -- see the module docstring

    return rollout_command(args)


def _lint_timing(args: argparse.Namespace) -> int:
    from platform_testbed.sim.cli.rollout import lint_timing_command  # noqa: PLC0415 -- see the module docstring

    return lint_timing_command(args)


def add_sweep_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``sweep`` to the ``testbed`` subcommands; its handler returns an exit status."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sweep",
        help="run the checks over a grid of settings and seeds",
        description="Run every chosen check in every world of a sweep (points x seeds): "
        "one row per point, seed and check; a summary per check on stdout.",
    )
    parser.add_argument("sweep", help="a sweep file (.toml) or a shipped sweep's name, e.g. "
                        "sept25-unknowns")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="local worker processes (default: one per core; 1: no pool)")
    parser.add_argument("--out", metavar="FILE",
                        help="rows as .csv or .jsonl, written atomically (default: out/NAME.csv; "
                        "an existing file is replaced only with --force)")
    parser.add_argument("--json", action="store_true",
                        help="print the summary as one JSON object and nothing else")
    parser.add_argument("--dask", metavar="SCHEDULER_ADDRESS",
                        help="run on a Dask distributed cluster (needs the 'dask' extra)")
    parser.add_argument("--heatmap", metavar="FILE.png",
                        help="also draw the miss-region heatmap of two axes to this file")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--force", action="store_true",
                        help="write to a device or through a symlink at --out/--heatmap/--junit, "
                        "or over the default out/NAME.csv")
    add_check_limits(parser)
    # A process needs the twin and this machine's wall clock: one world at a time, here.
    twinopts.add_arguments(parser, where="a row in every world; a sweep with one runs its worlds one "
                           "at a time in this process (no --workers above 1, no --dask)")
    add_gate_options(parser, expect=False)
    junit.add_argument(parser)
    parser.set_defaults(handler=_sweep)
    return parser


def add_rollout_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``rollout SCENARIO [--seed N] [--runs N] [--set K=V]... [--json]``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "rollout",
        help="simulate a rolling deploy behind a load balancer and count its 502s",
        description="Simulate a rolling deploy behind a load balancer; count 502s per run.",
    )
    parser.add_argument("scenario", help="a shipped rollout's name (testbed list), e.g. "
                        "original, or a .toml path")
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
    parser.set_defaults(handler=_rollout)
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
    parser.set_defaults(handler=_lint_timing)
    return parser
