"""compare's real-process rows, defined once: ``--check-http``, ``--deploy-cmd``, their limit and speed.

Light on purpose (argparse and the standard library): the parser imports it, and the
twin (simpy, the HTTP server) loads only when such a row runs (``steps``).
"""

from __future__ import annotations

import argparse
import math
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from platform_testbed.sim.config.settings import BadInput

if TYPE_CHECKING:
    from platform_testbed.sim.twin.step import ProcessStep

__all__ = ["DEFAULT_HTTP_TIMEOUT_S", "MAX_SPEED", "add_arguments", "steps"]

#: The most wall seconds one run's process may take: the incident's check needs ~25 s at
#: speed 1 (a start, two 10 s looks), a flyctl-style wait at most 60 s more.
DEFAULT_HTTP_TIMEOUT_S = 120.0
#: As ``testbed serve``'s cap: past it a world answers waits faster than curl starts.
MAX_SPEED = 10_000.0
#: The row's name: the mode, then the program (or the script an interpreter runs).
_PREFIX = {"check-http": "http", "deploy-cmd": "deploy"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--check-http``, ``--deploy-cmd``, ``--http-timeout`` and ``--speed``."""
    parser.add_argument(
        "--check-http", action="append", default=[], metavar="COMMAND",
        help="a real process as a check: the testbed publishes, COMMAND judges over Fly's "
        "Machines API (FLY_API_HOSTNAME, FLY_API_TOKEN, FLY_APP_NAME); exit 0 = live, else "
        "failed, and the pipeline rolls back; repeatable",
    )
    parser.add_argument(
        "--deploy-cmd", action="append", default=[], metavar="COMMAND",
        help="a real deploy step: COMMAND updates the machines to FLY_IMAGE_REF, judges, and "
        "rolls back to FLY_PREVIOUS_IMAGE_REF if it decides to; the testbed only observes; "
        "repeatable",
    )
    parser.add_argument(
        "--http-timeout", type=float, default=DEFAULT_HTTP_TIMEOUT_S, metavar="SECONDS",
        help="the most wall seconds a --check-http/--deploy-cmd process may run in one world "
        f"before it is killed and the run is an error (default {DEFAULT_HTTP_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--speed", type=float, default=1.0, metavar="K",
        help="while such a process runs, simulated seconds per wall second (default 1: the "
        "platform's timestamps are wall time); the rest of each world runs instantly",
    )


def steps(args: argparse.Namespace) -> list[ProcessStep]:
    """The rows the options ask for, validated (``BadInput``, one line) before any world runs."""
    modes: tuple[Literal["check-http", "deploy-cmd"], ...] = ("check-http", "deploy-cmd")
    commands = [(mode, c) for mode in modes for c in getattr(args, mode.replace("-", "_"))]
    if not commands:
        return []
    timeout, speed = args.http_timeout, args.speed
    if not (math.isfinite(timeout) and timeout > 0):
        raise BadInput(f"--http-timeout: must be a number of seconds > 0 (got {timeout})")
    if not (math.isfinite(speed) and 0 < speed <= MAX_SPEED):
        raise BadInput(f"--speed: must be more than 0 and at most {MAX_SPEED:g} (got {speed})")
    from platform_testbed.sim.twin.step import ProcessStep  # noqa: PLC0415 -- see the module docstring

    made: list[ProcessStep] = []
    for mode, command in commands:
        argv = _argv(mode, command)
        name = f"{_PREFIX[mode]}:{_program(argv)}"
        if any(s.name == name for s in made):
            raise BadInput(f"--{mode} {command!r}: another row is named {name!r} (one command "
                           "per program and mode)")
        made.append(ProcessStep(mode, tuple(argv), name, timeout, speed))
    return made


def _argv(mode: str, command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise BadInput(f"--{mode} {command!r}: cannot split it into words ({error})") from None
    if not argv:
        raise BadInput(f"--{mode}: the command is empty")
    program = argv[0]
    if "/" in program:
        path = Path(program)
        if not path.is_file():
            raise BadInput(f"--{mode} {command!r}: no file {program!r}")
        if not shutil.which(program):
            raise BadInput(f"--{mode} {command!r}: {program!r} is not executable (chmod +x)")
    elif shutil.which(program) is None:
        raise BadInput(f"--{mode} {command!r}: no program {program!r} on PATH")
    return argv


def _program(argv: list[str]) -> str:
    """The program's name, or the script an interpreter (sh, bash, python3, node) runs."""
    name = Path(argv[0]).name
    if name in ("sh", "bash", "python", "python3", "node") and len(argv) > 1 and not argv[1].startswith("-"):
        return Path(argv[1]).name
    return name


def check_against(made: list[ProcessStep], names: list[str], args: argparse.Namespace) -> None:
    """The rows' rules against the rest of compare's command line."""
    for step in made:
        if step.name in names:
            raise BadInput(f"--{step.mode}: a check is also named {step.name!r}")
    if made and args.timeline and not names:
        raise BadInput("--timeline: draws the simulated checks' runs; add a --check beside "
                       "--check-http/--deploy-cmd")


def report_timings(made: list[ProcessStep]) -> None:
    """On stderr: each row's wall time against its process's own (the rest ran instantly)."""
    for step in made:
        runs = step.timings
        if runs:
            whole, own = sum(t.run_s for t in runs), sum(t.command_s for t in runs)
            print(f"{step.name}: {len(runs)} run(s) took {whole:.2f} s of wall time, the "
                  f"process itself {own:.2f} s (+{(whole - own) / len(runs):.2f} s a run)",
                  file=sys.stderr)
