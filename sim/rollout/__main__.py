"""``python -m sim.rollout rollout|lint-timing ...``: the two subcommands on their own."""

from __future__ import annotations

import argparse
import sys

from sim.parsers import add_lint_timing_parser, add_rollout_parser
from sim.settings import BadInput


def main(argv: list[str] | None = None) -> int:
    """Parse, run one subcommand, and turn bad input into one line and exit status 2."""
    parser = argparse.ArgumentParser(prog="python -m sim.rollout")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_rollout_parser(subparsers)
    add_lint_timing_parser(subparsers)
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except BadInput as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
