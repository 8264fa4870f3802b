"""``testbed hunt``: search the world space for the worlds that fool one check."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platform_testbed.checks.drive import check_name
from platform_testbed.sim import checkcmd
from platform_testbed.sim.cli import twinopts
from platform_testbed.sim.cli.checkopts import check_options
from platform_testbed.sim.config.options import HUNT_SCENARIO, option
from platform_testbed.sim.config.rules import did_you_mean
from platform_testbed.sim.config.settings import BadInput, first_seed
from platform_testbed.sim.runtime.signals import reraise_pending
from platform_testbed.sim.show import junit

# `testbed` builds its parser from this module (add_hunt_parser): rich, pydantic and
# hypothesis are imported by the functions that use them, never for the parser.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from platform_testbed.sim.config.scenario import Scenario
    from platform_testbed.sim.hunt.search import CheckFactory, HuntResult
    from platform_testbed.sim.twin.step import ProcessStep


EXIT_NOTHING_FOUND, EXIT_FOUND = 0, 1
#: Version of the ``--json`` document (sim/schemas/hunt.schema.json).
SCHEMA_VERSION = 1
#: The registry's (sim.config.options, with why): worlds per round, and the base world.
MAX_BUDGET = int(option("budget").most or 0)
DEFAULT_BUDGET = int(option("budget").default or 0)
DEFAULT_SCENARIO = HUNT_SCENARIO
DEFAULT_OUT = "hunt-out"
#: What ``--fail-on`` may name for a hunt: a world found makes the gate fail.
GATES = ("found",)


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


def hunt_suite(result: HuntResult, paths: list[Path], check_arg: str, fail: bool = False) -> junit.Suite:
    """The hunt as JUnit: a case per world found (its file reproduces it), or one passing case
    when none was found. A found world is ``skipped`` (reported, green in a JUnit publisher)
    unless ``fail`` (``--fail-on found``): then a failure, or an error where the check gave
    no verdict."""
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
        if not fail:
            cases.append(junit.Case(classname, name, skipped=f"found (not failed without --fail-on "
                                    f"found): {said}; reproduce: {again}", output=detail))
        elif found.outcome == "error":
            cases.append(junit.Case(classname, name, error=f"{found.reason or 'no reason given'}",
                                    error_detail=detail, output=said))
        else:
            cases.append(junit.Case(classname, name, said, detail, output=found.reason))
    return junit.Suite(f"hunt {result.check}", tuple(cases))


def _gate(items: list[str]) -> bool:
    """``--fail-on found``: whether a found world is a JUnit failure; BadInput for another word."""
    words = {w.strip() for item in items for w in item.split(",") if w.strip()}
    for word in sorted(words - set(GATES)):
        raise BadInput(f"--fail-on {word!r}: a hunt fails on {', '.join(GATES)}"
                       f"{did_you_mean(word, GATES)}")
    if items and not words:
        raise BadInput("--fail-on: name at least one outcome")
    return bool(words)


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
    fail = _gate(args.fail_on)
    limits = check_budget(args)  # --check-timeout/--max-looks > TESTBED_* > the defaults
    extra = check_options(args.check_opt)
    try:
        base = scenario.load(args.scenario)
    except BadInput as error:
        raise BadInput(f"--scenario: {error}") from None
    if args.sets:  # its own message: the file was good, a --set was not
        base = scenario.load(args.scenario, args.sets)
    step, check_arg, checks, name = _hunted(args, base, extra)
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
    junit.write(args.junit, [hunt_suite(result, paths, check_arg, fail)])
    elapsed = time.perf_counter() - started
    if args.json:
        document = {"schema_version": SCHEMA_VERSION, **summary(result, paths)}
        print(json.dumps(document, separators=(",", ":")))
    else:
        print(table(result, paths, check_arg))
        errors.print(f"{len(paths)} file(s) in {out}/ ({elapsed:.1f} s)", highlight=False)
    reraise_pending()
    return EXIT_FOUND if result.found else EXIT_NOTHING_FOUND


def _hunted(args: argparse.Namespace, base: Scenario, extra: dict[str, Any]
            ) -> tuple[ProcessStep | None, str, CheckFactory, str]:
    """What is hunted: the process (if a --check-http), how a command line names it, the
    factory of its check per world, and its name; a bad check stops here, before any world."""
    from platform_testbed.sim.hunt.search import SpecChecks  # noqa: PLC0415 -- see the imports

    step = twinopts.hunted(args)  # a --check-http process, if that is what is hunted
    if step is None:
        spec, check_arg = _check_spec(args)
    else:  # the spec's check only gives the simulator's trace of a wrong world
        spec, check_arg = twinopts.HUNT_TRACE_CHECK, f"--check-http {shlex.quote(shlex.join(step.argv))}"
    checks: CheckFactory = SpecChecks(spec) if not extra else _with_options(spec, extra)
    name = check_name(checks(base.check.model_dump()))  # builds it once: a bad check stops here
    return step, check_arg, checks, step.name if step is not None else name


def _with_options(spec: str, extra: dict[str, Any]) -> CheckFactory:
    """The check built per world with that world's ``[check]`` options and ``--check-opt``."""
    from platform_testbed.sim.checkload.loader import load_checks  # noqa: PLC0415

    built: dict[tuple[tuple[str, Any], ...], Any] = {}

    def make(chosen: Mapping[str, Any]) -> Any:
        key = tuple(sorted(chosen.items()))
        if key not in built:
            built[key] = load_checks([spec], chosen, extra)[0]
        return built[key]

    return make
