"""``testbed hunt``: search the world space for the worlds that fool one check."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platform_testbed.checks.drive import check_name
from platform_testbed.sim import checkcmd
from platform_testbed.sim.cli import twinopts
from platform_testbed.sim.cli.checkopts import add_check_option
from platform_testbed.sim.config.settings import BadInput, first_seed
from platform_testbed.sim.runtime.signals import reraise_pending
from platform_testbed.sim.show import junit

# `testbed` builds its parser from this module (add_hunt_parser): rich, pydantic and
# hypothesis are imported by the functions that use them, never for the parser.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from platform_testbed.sim.hunt.search import HuntResult


EXIT_NOTHING_FOUND, EXIT_FOUND = 0, 1
#: Version of the ``--json`` document (sim/schemas/hunt.schema.json).
SCHEMA_VERSION = 1
#: The most worlds one round may try: a hunt at this budget takes minutes per round on one
#: core; past it a run of `testbed sweep` over the axes of interest is the better tool.
MAX_BUDGET = 100_000
#: Worlds tried per round by default: enough, on the shipped scenarios, for each built-in
#: check's blind spots around the base (measured: README "Hunting for the worlds ...").
DEFAULT_BUDGET = 200
DEFAULT_SCENARIO = "sept25-crash-loop"
DEFAULT_OUT = "hunt-out"


#: Below these widths the bar drops the round's description, then the elapsed time (and
#: the name gets shorter): cut to a few letters ("searc…") they say nothing, while the
#: counts are always drawn whole. At 80 columns everything fits (tests/test_terminal.py).
DESCRIBED_COLUMNS, TIMED_COLUMNS = 80, 50


def hunt_progress(name: str, console: Console, disable: bool = False) -> Progress:
    """The hunt's bar, as wide as the console: the check's name and the round's state are cut
    (with an ellipsis) before the bar is, so it fits 80 columns; narrower, fields are dropped
    whole (the state first, then the elapsed time), never the counts."""
    from rich.progress import (  # noqa: PLC0415 -- see the imports
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.table import Column, Table  # noqa: PLC0415

    def cut(most: int) -> Column:
        return Column(max_width=most, no_wrap=True, overflow="ellipsis")

    title, short_title = (TextColumn(f"[bold]hunt {name}", table_column=cut(most)) for most in (20, 12))
    # 30: "round 12 · 3 found · shrinking" whole; at 80 columns the bar still has 6 or more.
    state = TextColumn("{task.description}", table_column=cut(30))
    bar = BarColumn(bar_width=None, table_column=Column(ratio=1))
    counts = MofNCompleteColumn(table_column=Column(no_wrap=True))
    elapsed = TimeElapsedColumn(table_column=Column(no_wrap=True))

    class Fitted(Progress):
        """Chooses its columns for the console's width at each refresh (a terminal resizes)."""

        def make_tasks_table(self, tasks: Any) -> Table:
            width = console.width  # self.console needs self.live, not made yet on the first call
            columns: list[ProgressColumn]
            if width >= DESCRIBED_COLUMNS:
                columns = [title, state, bar, counts, elapsed]
            elif width >= TIMED_COLUMNS:
                columns = [title, bar, counts, elapsed]
            else:
                columns = [short_title, bar, counts]
            table = Table.grid(*(c.get_table_column().copy() for c in columns), padding=(0, 1),
                               expand=self.expand)
            shown: list[Task] = [task for task in tasks if task.visible]
            for task in shown:
                table.add_row(*(column(task) for column in columns))
            return table

    return Fitted(
        title, state, bar, counts, elapsed,
        console=console, disable=disable, transient=True, expand=True,
    )


def add_hunt_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``hunt`` to the ``testbed`` subcommands; its handler returns an exit status."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "hunt",
        help="search the worlds for the ones where a check's verdict is wrong",
        description="Search the space of worlds around a scenario with hypothesis for worlds "
        "where the check's verdict disagrees with the ground truth (missed, false_alarm, "
        "undecided, error); shrink each kind to its smallest world and write it as a scenario "
        "file with an [expect] table, which `testbed compare FILE --check NAME` reproduces.",
        epilog="exit status: 0 nothing found, 1 found at least one world, 2 bad input",
    )
    # Appended, not stored: a second --check would otherwise replace the first in silence;
    # kept as a list, it is refused in _check_spec with the count.
    add_check_option(parser, what="the check to hunt: a built-in name",
                     note="or give one --check-cmd instead", how="exactly one")
    checkcmd.add_arguments(parser, single=True)
    twinopts.add_arguments(parser, where="hunt takes one --check-http (and no --check)")
    parser.add_argument("--scenario", default=DEFAULT_SCENARIO,
                        help=f"the base world: a shipped name or a .toml path (default {DEFAULT_SCENARIO})")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="override a value of the base world, e.g. --set truth=crash "
                        "(the ground truth; repeatable)")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, metavar="N",
                        help=f"worlds tried per search round, 1 to {MAX_BUDGET:,} (default "
                        f"{DEFAULT_BUDGET}); a hunt runs one round per kind found, plus one")
    parser.add_argument("--seed", type=int, default=0, metavar="K",
                        help="hypothesis' seed: the same seed writes the same files (default 0)")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help=f"folder for the scenario files, created if missing (default {DEFAULT_OUT}/)")
    parser.add_argument("--force", action="store_true",
                        help="write into a --out folder that holds an earlier hunt's files "
                        "(and --junit to a device or through a symlink)")
    parser.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    junit.add_argument(parser)
    parser.set_defaults(handler=cmd_hunt)
    return parser


def _check_spec(args: argparse.Namespace) -> tuple[str, str]:
    """The one check to hunt, as a check-list entry, and how a command line names it."""
    names = checkcmd.with_commands(args.check, args)
    if len(names) != 1:
        raise BadInput(f"--check/--check-cmd: hunt takes exactly one check (got {len(names)})")
    spec = names[0]
    if not spec.startswith(checkcmd.SPEC_PREFIX):
        return spec, f"--check {shlex.quote(spec)}"
    parsed = checkcmd.parse_spec(spec)
    arg = f"--check-cmd {shlex.quote(shlex.join(parsed.command))}"
    if args.check_cmd_name:
        arg += f" --check-cmd-name {shlex.quote(parsed.name)}"
    return spec, arg


def hunt_suite(result: HuntResult, paths: list[Path], check_arg: str) -> junit.Suite:
    """The hunt as JUnit: a failure per wrong-verdict world found (its file reproduces it), an
    error per world where the check gave no verdict, or one passing case when none was found."""
    classname = f"testbed.hunt.{result.base.name}"
    if not result.found:
        return junit.Suite(f"hunt {result.check}", (junit.Case(
            classname, result.check,
            output=f"no world fooled {result.check} in {result.worlds_tried} worlds"),))
    cases = []
    for found, path in zip(result.found, paths, strict=True):
        again = f"testbed compare {path} {check_arg}"
        said = f"{found.outcome}: {found.diagnosis} ({found.why})"
        detail = f"{found.reason}\nreproduce: {again}"
        name = f"{result.check} [{path.stem}]"
        if found.outcome == "error":
            cases.append(junit.Case(classname, name, error=f"{found.reason or 'no reason given'}",
                                    error_detail=detail, output=said))
        else:
            cases.append(junit.Case(classname, name, said, detail, output=found.reason))
    return junit.Suite(f"hunt {result.check}", tuple(cases))


def cmd_hunt(args: argparse.Namespace) -> int:
    """Hunt, write the files found, print the summary; exit 1 when anything was found."""
    # hypothesis loads only for a hunt, not for every `testbed` command.
    from platform_testbed.sim.checkload.budget import check_budget  # noqa: PLC0415
    from platform_testbed.sim.config import scenario  # noqa: PLC0415
    from platform_testbed.sim.hunt.output import check_out_dir, summary, table, write_found  # noqa: PLC0415
    from platform_testbed.sim.hunt.search import hunt  # noqa: PLC0415
    from platform_testbed.sim.show.table import stderr_console  # noqa: PLC0415

    # Every input is checked before the search starts: a bad one costs no time.
    if not 1 <= args.budget <= MAX_BUDGET:
        raise BadInput(f"--budget: must be from 1 to {MAX_BUDGET:,} (got {args.budget})")
    first_seed(args.seed)
    limits = check_budget(args)  # TESTBED_CHECK_TIMEOUT_S / TESTBED_MAX_LOOKS (hunt has no flags)
    try:
        base = scenario.load(args.scenario)
    except BadInput as error:
        raise BadInput(f"--scenario: {error}") from None
    if args.sets:  # its own message: the file was good, a --set was not
        base = scenario.load(args.scenario, args.sets)
    step = twinopts.hunted(args)  # a --check-http process, if that is what is hunted
    if step is None:
        spec, check_arg = _check_spec(args)
    else:  # the spec's check only gives the simulator's trace of a wrong world
        spec, check_arg = twinopts.HUNT_TRACE_CHECK, f"--check-http {shlex.quote(shlex.join(step.argv))}"
    from platform_testbed.sim.hunt.search import SpecChecks  # noqa: PLC0415 -- see the imports

    checks = SpecChecks(spec)
    name = check_name(checks(base.check.model_dump()))  # builds it once: a bad check stops here
    if step is not None:
        name = step.name
    out = Path(args.out)
    check_out_dir(args.out, force=args.force)
    args.junit = junit.checked(args)

    errors = stderr_console()  # a path's [brackets] and ESC are printed as text
    show = not args.no_progress and sys.stderr.isatty()
    progress = hunt_progress(name, errors, disable=not show)
    task = progress.add_task("", total=args.budget)

    def tell(round_number: int, tried: int, found: int, shrinking: bool) -> None:
        what = "shrinking" if shrinking else "searching"
        progress.update(task, completed=min(tried, args.budget),
                        description=f"round {round_number} · {found} found · {what}")

    started = time.perf_counter()
    with progress:
        result = hunt(base, name, checks, budget=args.budget, seed=args.seed, progress=tell,
                      check_budget=limits, step=step)
    # hypothesis' gc callback stays in place after the search and may swallow a signal's
    # exception (sim.runtime.signals._pending): ask before writing, and before saying we are done.
    reraise_pending()
    paths = write_found(result, out, check_arg)
    junit.write(args.junit, [hunt_suite(result, paths, check_arg)])
    elapsed = time.perf_counter() - started
    if args.json:
        document = {"schema_version": SCHEMA_VERSION, **summary(result, paths)}
        print(json.dumps(document, separators=(",", ":")))
    else:
        print(table(result, paths, check_arg))
        errors.print(f"{len(paths)} file(s) in {out}/ ({elapsed:.1f} s)", highlight=False)
    reraise_pending()
    return EXIT_FOUND if result.found else EXIT_NOTHING_FOUND
