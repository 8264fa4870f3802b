"""``testbed sweep``: what it does, its progress bar and its outputs (arguments: ``sim.cli.parsers``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from platform_testbed.sim.checkload.budget import CheckBudget, check_budget
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.cli import twinopts
from platform_testbed.sim.cli.checkopts import check_options
from platform_testbed.sim.cli.compareopts import fail_on, failed_on
from platform_testbed.sim.cli.pool import MAX_WORKERS, WORKERS_ENV, check_workers
from platform_testbed.sim.config import scenario
from platform_testbed.sim.config.scenario import OUTCOMES
from platform_testbed.sim.config.settings import BadInput, first_seed, locate, read_toml, validated
from platform_testbed.sim.runtime import installs
from platform_testbed.sim.runtime.outputs import check_image
from platform_testbed.sim.runtime.scheduler import check_scheduler
from platform_testbed.sim.show import junit
from platform_testbed.sim.show.table import stderr_console
from platform_testbed.sim.sweep.file import Sweep, SweepFile, from_spec
from platform_testbed.sim.sweep.output import (
    SweepResult,
    check_out_path,
    streaming_rows,
    summarise,
    summary_table,
)
from platform_testbed.sim.sweep.run import run_sweep
from platform_testbed.sim.sweep.units import Row, check_names, with_steps

if TYPE_CHECKING:
    from platform_testbed.sim.twin.step import ProcessStep

EXIT_OK, EXIT_GATE, EXIT_INTERRUPTED = 0, 1, 130
__all__ = ["MAX_WORKERS", "WORKERS_ENV", "cmd_sweep", "sweep_progress"]
#: Where the rows go when --out does not say: a folder of outputs, never the working folder
#: itself (a sweep once rewrote a committed CSV at the top of the checkout in silence).
DEFAULT_OUT_DIR = Path("out")


class _RateColumn(ProgressColumn):
    """Units (worlds, seeds) per second, averaged by rich over the recent past."""

    def __init__(self, unit: str, table_column: Column | None = None) -> None:
        super().__init__(table_column)
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"-- {self.unit}/s" if speed is None else f"{speed:,.0f} {self.unit}/s")


#: The sweep's name is cut (with an ellipsis) past this, so the bar fits 80 columns.
NAME_COLUMNS = 20
#: The bar is dropped no further than this: a bar narrower than ten cells shows nothing.
BAR_COLUMNS = 10
#: The columns after the bar that may go, least needed last, with their widest text:
#: rate ``10,000 worlds/s``, elapsed ``0:00:00``, ``ETA`` and ``-:--:--``. The counts
#: (``10000/10000``, 11) always stay.
_OPTIONAL = (("elapsed", 7), ("rate", 15), ("eta", 3 + 1 + 7))


def sweep_progress(name: str, console: Console, disable: bool = False, *, unit: str = "worlds",
                   transient: bool = False) -> Progress:
    """The sweep's bar, as wide as the console: the bar takes what the other columns leave.

    ``compare --runs N`` shows it too, counting seeds (``unit``), and clears it when done
    (``transient``): its table follows on the terminal.

    At 80 columns: name 20, counts 11 (``10000/10000``), rate, elapsed, ETA and the bar.
    Narrower, the ETA goes first, then the rate, then the elapsed time, then the name
    shrinks, so the counts and a bar of ten cells stay whole (rich would otherwise cut
    every column to ``10000/100…``).
    """
    # Each column is followed by one space of padding; the bar and the counts always stay.
    room = console.width - BAR_COLUMNS - 1 - 11 - 1
    named = min(NAME_COLUMNS, max(8, room // 2))
    room -= named + 1
    kept: set[str] = set()
    for what, cells in _OPTIONAL:
        if room >= cells + 1:
            kept.add(what)
            room -= cells + 1
    columns: list[ProgressColumn] = [
        TextColumn(f"[bold]{name}", table_column=Column(max_width=named, no_wrap=True,
                                                          overflow="ellipsis")),
        BarColumn(bar_width=None, table_column=Column(ratio=1)),
        MofNCompleteColumn(table_column=Column(no_wrap=True)),
    ]
    if "rate" in kept:
        columns.append(_RateColumn(unit, table_column=Column(no_wrap=True)))
    if "elapsed" in kept:
        columns.append(TimeElapsedColumn(table_column=Column(no_wrap=True)))
    if "eta" in kept:
        columns += [TextColumn("ETA"), TimeRemainingColumn(table_column=Column(no_wrap=True))]
    return Progress(*columns, console=console, disable=disable, expand=True, transient=transient)


def _with_processes(sweep: Sweep, args: argparse.Namespace) -> tuple[Sweep, list[ProcessStep]]:
    """The sweep with a row per --check-http/--deploy-cmd process, on one worker; BadInput first."""
    steps = twinopts.steps(args)
    if not steps:
        return sweep, steps
    # The twin serves on this machine: its processes run here, not on a Dask cluster.
    if args.dask:
        raise BadInput(f"--dask: a sweep with --{steps[0].mode} runs on this machine "
                       "(its processes run here); use --workers N")
    twinopts.bound_wall(steps, sweep.units, "world(s)")
    twinopts.check_against(steps, list(check_names(sweep)), args)
    # On virtual time a world's verdict does not depend on the load, so worlds run on
    # every core, one twin each (own port and token); on the wall clock, one at a time.
    if any(s.time_mode == "scaled" for s in steps) or args.workers is None:
        if args.workers is not None and args.workers > 1:
            raise BadInput(f"--workers {args.workers}: a sweep with --{steps[0].mode} on the "
                           "scaled clock runs one world at a time (its verdicts move with the "
                           "load); drop --speed/--time scaled, or give --workers 1")
        args.workers = 1
    return with_steps(sweep, steps), steps


def load_with_flags(args: argparse.Namespace) -> Sweep:
    """The sweep file, its values the defaults the command line overrides: ``--check``
    replaces its checks, ``--seed`` its first seed, ``--set`` adds to its sets (a swept key
    set so is held at that one value: its axis goes), ``--check-opt`` reaches every world."""
    path = locate(args.sweep, scenario.shipped_sweeps, "sweep")
    spec = validated(SweepFile, read_toml(path, "{path}: cannot read sweep file ({reason})"), path.name)
    update: dict[str, Any] = {}
    if args.check:
        load_checks(args.check, {})  # a bad name is the flag's, before the file's rules
        update["checks"] = list(args.check)
    if args.seed is not None:
        update["first_seed"] = first_seed(args.seed)
        if isinstance(spec.seeds, list):  # a list of seeds becomes as many from --seed
            update["seeds"] = len(spec.seeds)
    if args.set:
        held = {item.partition("=")[0].strip() for item in args.set}
        update["set"] = [*spec.set, *args.set]
        update["axes"] = {k: v for k, v in spec.axes.items() if k not in held}
        if spec.heatmap is not None and set(_drawn(spec.heatmap)) & held:
            update["heatmap"] = None  # an axis it draws is held at one value
    sweep = from_spec(spec.model_copy(update=update), path.parent, path.stem)
    extra = check_options(args.check_opt)
    if extra:
        sweep = dataclasses.replace(sweep, options=tuple(sorted(extra.items())))
        check_names(sweep)  # an option no chosen check declares: refused before any world
    return sweep


def _drawn(table: Any) -> list[str]:
    return [k for k in (table.x, table.y, table.columns, table.rows) if k]


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run a sweep file; write its rows; print the summary."""
    budget = check_budget(args)  # handed to every task: a pool's workers get it with the work
    sweep = load_with_flags(args)
    check_workers(args)
    gate = fail_on(args.fail_on, OUTCOMES)
    args.junit = junit.checked(args)
    # What the sweep asks of its processes is refused first: no scheduler is needed for it.
    sweep, steps = _with_processes(sweep, args)
    if args.dask is not None:  # judged and reached before any world (calibration) runs
        args.dask = check_scheduler(args.dask)
    out = Path(args.out) if args.out else DEFAULT_OUT_DIR / f"{sweep.name}.csv"
    if not args.out and out.exists() and not args.force:
        raise BadInput(f"--out: {out} exists (a previous sweep's rows): name another --out, "
                       "or give --force to replace it")
    if not args.out:
        out.parent.mkdir(parents=True, exist_ok=True)
    check_out_path(out, args.force)
    if args.heatmap and len(sweep.axes) < 2:
        raise BadInput("--heatmap: the sweep needs two axes")
    if args.heatmap:
        check_image("--heatmap", Path(args.heatmap), args.force)
        # Before any work: a missing plotting library must not cost the whole sweep.
        try:
            from platform_testbed.sim.sweep.heatmap import (  # noqa: PLC0415 (matplotlib only when asked)
                facet_paths,
                save_heatmap,
            )
        except ModuleNotFoundError as error:
            raise BadInput(f"--heatmap needs matplotlib ({error}): {installs.PLOT}") from None
        # Faceted maps write one file per check: every name is judged before the sweep.
        for path in facet_paths(sweep, Path(args.heatmap)):
            check_image("--heatmap", path, args.force)
    errors = stderr_console()  # a path's [brackets] and ESC are printed as text
    result, kept = _run_to_file(args, sweep, out, errors, budget)
    twinopts.report_timings(steps, pooled=(args.workers or 1) > 1)
    # Here the file is in place, whole: every finished row (all of them, or with Ctrl-C
    # those finished before it). A SIGTERM or a second Ctrl-C left the previous file.
    names = tuple(dict.fromkeys(str(r["check"]) for r in kept))
    junit.write(args.junit, [junit.sweep_suite(sweep.name, names, kept, sweep.keys, gate)])
    if args.heatmap:
        save_heatmap(kept, sweep, Path(args.heatmap), args.force)
        for path in facet_paths(sweep, Path(args.heatmap)):  # FILE-CHECK.png: each said
            print(f"heatmap written to {path}", file=sys.stderr)  # whole, as a path is
    if result.interrupted:
        errors.print(
            f"interrupted: kept the {result.units_done} of {sweep.units} worlds that finished "
            f"({result.row_count} rows) in {out}", highlight=False,
        )
    elif not args.json:
        errors.print(f"{result.row_count} rows in {out} ({result.elapsed_s:.1f} s)",
                     highlight=False)
    summary = result.summary or summarise(result)
    if args.json:
        print(json.dumps(summary.to_json() | {"out": str(out), "wall_s": round(result.elapsed_s, 3)},
                         separators=(",", ":")))
    else:
        print(summary_table(summary))
    if result.interrupted:
        return EXIT_INTERRUPTED
    gated = failed_on({n: c.counts for n, c in summary.checks.items()}, gate, [s.name for s in steps])
    for line in gated:
        errors.print(line, highlight=False)
    return EXIT_GATE if gated else EXIT_OK


def _run_to_file(
    args: argparse.Namespace, sweep: Sweep, out: Path, errors: Console, budget: CheckBudget
) -> tuple[SweepResult, list[Row]]:
    """Run the sweep, its rows streaming to ``out``; return the result and the rows kept
    for a JUnit report or a heatmap (none without those)."""
    # On a terminal only (as hunt's): piped or logged, its one last line is noise, and
    # `2>&1 | head` would end the sweep at that write, before its rows are saved.
    progress = sweep_progress(sweep.name, errors, args.no_progress or not errors.is_terminal)
    # The rows go to the file as they come (memory flat in the number of worlds); a JUnit
    # report or a heatmap needs them all, so only then are they kept here as well.
    kept: list[Row] = []
    with streaming_rows(out, sweep, args.force) as write, progress:
        task = progress.add_task("sweep", total=sweep.units)
        # The workers format the rows: this process only writes their text in order.
        result = run_sweep(
            sweep, workers=args.workers, dask=args.dask,
            progress=lambda units: progress.advance(task, units), sink=write,
            budget=budget, keep=kept.extend if args.junit or args.heatmap else None,
        )
    return result, kept
