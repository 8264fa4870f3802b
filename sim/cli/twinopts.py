"""compare's real-process rows, defined once: ``--check-http``, ``--deploy-cmd``, their limit and speed.

Light on purpose (argparse and the standard library): the parser imports it, and the
twin (simpy, the HTTP server) loads only when such a row runs (``steps``).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shlex
import shutil
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from platform_testbed.sim.config import options
from platform_testbed.sim.config.settings import BadInput

if TYPE_CHECKING:
    from platform_testbed.sim.config.scenario import Scenario
    from platform_testbed.sim.publish.runresult import RunResult
    from platform_testbed.sim.twin.step import ProcessStep, StepTiming

__all__ = ["DEFAULT_HTTP_TIMEOUT_S", "MAX_SPEED", "MAX_WALL_S", "WALL_ENV", "bound_wall", "row_name", "steps"]

#: The registry's (sim.config.options, with the sources): a process's wall-clock limit,
#: the fastest world, and the most wall time a command line's processes may take.
DEFAULT_HTTP_TIMEOUT_S = float(options.option("http_timeout_s").default or 0)
MAX_SPEED = float(options.option("speed").most or 0)
MAX_WALL_S = int(options.option("max_process_wall_s").default or 0)
WALL_ENV = str(options.option("max_process_wall_s").env_name)
#: The row's name: the mode's word, a hyphen, then the program's name (or the script's an
#: interpreter runs) without its extension, every other character than A-Z a-z 0-9 _ - as
#: "-": ``examples/deploy/timestamp.sh`` as --check-http is ``http-timestamp`` (a program
#: whose name starts with the mode's word keeps its name alone: ``deploy.sh``, ``deploy``). So the
#: name is a bare TOML key and one part of a dotted key, as ``[expect]``, ``--expect
#: NAME=OUTCOME`` and ``--set expect.NAME=OUTCOME`` need it (a dot would split the key).
_PREFIX = {"check-http": "http", "deploy-cmd": "deploy"}
_NOT_IN_A_KEY = re.compile(r"[^A-Za-z0-9_-]")


def steps(args: argparse.Namespace) -> list[ProcessStep]:
    """The rows the options ask for, validated (``BadInput``, one line) before any world runs."""
    modes: tuple[Literal["check-http", "deploy-cmd"], ...] = ("check-http", "deploy-cmd")
    commands = [(mode, c) for mode in modes for c in getattr(args, mode.replace("-", "_"))]
    if not commands:
        return []
    timeout = options.from_args("http_timeout_s", args)  # flag > TESTBED_HTTP_TIMEOUT_S > 120
    # --speed alone means the scaled clock (as before virtual time); --time virtual with it is a slip.
    clock: Literal["virtual", "scaled"] = args.time or (
        "scaled" if args.speed is not None else "virtual")
    if clock == "virtual" and args.speed is not None:
        raise BadInput("--speed: sets the scaled clock; with --time virtual the world's clock "
                       "moves when the process waits (drop --speed, or use --time scaled)")
    speed = 1.0 if args.speed is None else options.from_args("speed", args)
    from platform_testbed.sim.twin.step import ProcessStep  # noqa: PLC0415 -- see the module docstring

    made: list[ProcessStep] = []
    for mode, command in commands:
        argv = _argv(mode, command)
        name = row_name(mode, argv)
        if any(s.name == name for s in made):
            raise BadInput(f"--{mode} {command!r}: another row is named {name!r} (one command "
                           "per program and mode)")
        made.append(ProcessStep(mode, tuple(argv), name, timeout, speed, clock))
    return made


#: The built-in check whose simulator run gives a hunted process's wrong worlds their trace
#: (any check would: up to the process's verdict the world is the same, a check only reads).
HUNT_TRACE_CHECK = "count"


def hunted(args: argparse.Namespace) -> ProcessStep | None:
    """``testbed hunt``'s process, if one is asked for: exactly one --check-http and no --check."""
    made = steps(args)
    if not made:
        return None
    if args.deploy_cmd:
        raise BadInput("--deploy-cmd: hunt takes a --check-http process (the testbed publishes, "
                       "the process judges)")
    if len(made) != 1:
        raise BadInput(f"--check-http: hunt takes exactly one process (got {len(made)})")
    if args.check or getattr(args, "check_cmd", None):
        raise BadInput("--check-http: hunt takes one check: the process, or one --check/--check-cmd")
    return made[0]


def bound_wall(made: list[ProcessStep], worlds: int, what: str) -> None:
    """BadInput, before any world runs, if ``worlds`` worlds of these processes may pass ``MAX_WALL_S``.

    Each process runs once per world for at most --http-timeout of wall time (killed then),
    so the worst case is worlds x processes x --http-timeout; ``what`` names the worlds.
    """
    if not made:
        return
    limit = options.limit("max_process_wall_s")
    timeout = made[0].timeout_s
    worst = worlds * len(made) * timeout
    if worst > limit:
        raise BadInput(
            f"--{made[0].mode}: {worlds:,} {what} x {len(made)} process(es) x --http-timeout "
            f"{timeout:g} s = up to {worst / 3600:,.1f} h of wall time, past the limit of "
            f"{limit:,} s ({limit / 3600:g} h; {WALL_ENV} raises it): fewer worlds or a shorter "
            "--http-timeout")


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


def row_name(mode: str, argv: list[str]) -> str:
    """The row's name (``_PREFIX``): ``http-timestamp`` for ``--check-http examples/deploy/timestamp.sh``.

    A program already named for the mode is not named twice: ``--deploy-cmd deploy.sh`` is
    ``deploy`` and ``deploy-fly.sh`` is ``deploy-fly`` (not ``deploy-deploy``).
    """
    word, stem = _PREFIX[mode], _NOT_IN_A_KEY.sub("-", Path(_program(argv)).stem)
    if stem == word or stem.startswith((f"{word}-", f"{word}_")):
        return stem
    return f"{word}-{stem}"


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
    if made and getattr(args, "timeline", None) and not names:
        raise BadInput("--timeline: draws the simulated checks' runs; add a --check beside "
                       "--check-http/--deploy-cmd")


def rules(made: list[ProcessStep]) -> dict[str, str]:
    """A one-line rule for each process row (``testbed checks``): its mode and command."""
    said = {"check-http": "judges the testbed's publish over the Machines API",
            "deploy-cmd": "deploys, judges and rolls back over the Machines API"}
    return {s.name: f"the command `{shlex.join(s.argv)}` ({said[s.mode]}; exit 0 = live)"
            for s in made}


def report_timings(made: list[ProcessStep], *, pooled: bool = False) -> None:
    """On stderr: each row's wall time against its process's own (the rest ran instantly).

    ``pooled``: a sweep's pool ran most worlds, whose timings stay in its workers: the line
    counts the runs of this process only, and says so.
    """
    where = " in this process (the rest on the pool's workers)" if pooled else ""
    for step in made:
        runs = step.timings
        if runs:
            whole, own = sum(t.run_s for t in runs), sum(t.command_s for t in runs)
            clocks = " and ".join(sorted({t.clock for t in runs}))
            print(f"{step.name}: {len(runs)} run(s){where} on {clocks} time took {whole:.2f} s "
                  f"of wall time, the process itself {own:.2f} s "
                  f"(+{(whole - own) / len(runs):.2f} s a run)", file=sys.stderr)


@dataclass(frozen=True, slots=True)
class _StepWork:
    """Seed ``i``'s world for every process row: a unit of ``sim.sweep.run``'s pool (pickled).

    Each world has its own twin (its own port and token) in the worker that runs it.
    """

    scenario: Scenario
    steps: tuple[ProcessStep, ...]
    seeds: tuple[int, ...]

    @property
    def units(self) -> int:
        return len(self.seeds)

    def __call__(self, lo: int, hi: int) -> tuple[int, list[Any]]:
        from platform_testbed.sim.publish.world import ground_truth  # noqa: PLC0415 -- see the docstring

        out = []
        for seed in self.seeds[lo:hi]:
            bad = ground_truth(self.scenario, seed)
            rows = []
            for step in self.steps:
                own = dataclasses.replace(step, timings=[])  # the parent's copy stays its own
                rows.append((own(self.scenario, seed, bad), own.timings[-1]))
            out.append((seed, rows))
        return lo, out


@dataclass(eq=False)
class _Ran:
    """A process row whose worlds ran on the pool: called as the row, it gives each seed's result."""

    name: str
    mode: str
    results: dict[int, RunResult]
    timings: list[StepTiming]

    def __call__(self, scenario: Scenario, seed: int, bad: bool | None = None) -> RunResult:
        return self.results[seed]


def spread(made: list[ProcessStep], scenario: Scenario, seeds: Iterable[int],
           workers: int | None) -> list[Any]:
    """The rows, their worlds run first on ``workers`` processes (``--workers N``, N > 1).

    One twin per world, each on its own port with its own token, ``workers`` at a time; on
    stderr the wall time and the worlds a wall second. With one worker (or none asked for)
    the rows are as given: each world runs when ``compare`` reaches its seed.
    """
    if not made or workers is None or workers <= 1:
        return list(made)
    from platform_testbed.sim.runtime.signals import reraise_pending  # noqa: PLC0415
    from platform_testbed.sim.sweep.run import run_tasks  # noqa: PLC0415

    order = tuple(seeds)
    ran = [_Ran(s.name, s.mode, {}, s.timings) for s in made]

    def sink(batch: list[Any]) -> None:
        for seed, rows in batch:
            for row, (result, timing) in zip(ran, rows, strict=True):
                row.results[seed] = result
                row.timings.append(timing)

    start = time.monotonic()
    done = run_tasks(_StepWork(scenario, tuple(made), order), workers, None, None, 1, sink=sink)
    if done.interrupted:
        reraise_pending()
        raise KeyboardInterrupt
    wall = time.monotonic() - start
    print(f"processes: {len(order)} world(s) on {workers} worker(s) in {wall:.2f} s of wall "
          f"time, {len(order) / wall:.2f} worlds a wall second", file=sys.stderr)
    return ran
