"""compare's many-runs options (the run limit, --details, --summary, --force) and its CI gate."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platform_testbed.sim.cli.checkopts import Adder
from platform_testbed.sim.config import options
from platform_testbed.sim.config.rules import did_you_mean
from platform_testbed.sim.config.settings import BadInput

if TYPE_CHECKING:  # the model loads with the first run, not with the parser's options
    from platform_testbed.sim.publish.compare import SeedRun

#: The most seeds one compare or checks runs: the registry's ``max_runs`` (with why).
MAX_RUNS, RUNS_ENV = options.limit("max_runs", {}), str(options.option("max_runs").env_name)
#: Up to this many runs, compare --json lists every run inline (as it always has); past it
#: the runs are summarised, and --details FILE.jsonl streams them.
INLINE_RUNS = 10


@contextlib.contextmanager
def details(
    path: str | None, force: bool, publish_started_ms: int
) -> Iterator[Callable[[SeedRun], None] | None]:
    """``--details FILE.jsonl``: each seed's runs as one JSON line, streamed as they end.

    Written to a temporary file beside the target and renamed when every run is in
    (``sim.runtime.outputs.replacing``), so an interrupted compare leaves the previous file (and no
    temporary one) behind, and a Ctrl-C once every run is in waits for the rename.
    """
    if not path:
        yield None
        return
    import json  # noqa: PLC0415 -- only for --details

    from platform_testbed.sim.publish.compare import run_json  # noqa: PLC0415 -- see SeedRun
    from platform_testbed.sim.runtime.outputs import check_output, replacing  # noqa: PLC0415

    target = check_output("--details", Path(path), force)
    with replacing(target) as handle:

        def to_file(run: SeedRun) -> None:
            handle.write(json.dumps(run_json(run, publish_started_ms), separators=(",", ":")) + "\n")

        yield to_file


def check_outputs(args: argparse.Namespace) -> None:
    """Every output path compare writes, judged before the first world runs."""
    from platform_testbed.sim.runtime.outputs import check_image, check_output  # noqa: PLC0415
    for option, path in (("--record", args.record), ("--details", args.details)):
        if path:
            check_output(option, Path(path), args.force)
    if args.timeline:
        check_image("--timeline", Path(args.timeline), args.force)


def add_output_options(comp: Adder) -> None:
    """compare's outputs: --timeline, --record, --details, --summary and --force."""
    comp.add_argument(
        "--timeline", metavar="FILE.png",
        help="also write a crash timeline of the first seed's world: a lane per "
        "machine, and beneath them a lane per check",
    )
    comp.add_argument(
        "--record", metavar="LOOKS.jsonl",
        help="write every look of every run as Fly Machines API JSON, one look per line",
    )
    comp.add_argument(
        "--details", metavar="FILE.jsonl",
        help="stream every run's results (each check's looks too) as JSON Lines, one seed a "
        f"line; --json holds them inline only up to {INLINE_RUNS} runs",
    )
    comp.add_argument("--summary", action="store_true",
                      help="print only the summary (outcome counts), never per-run details")
    comp.add_argument("--force", action="store_true",
                      help="write to a device or through a symlink at --record/--timeline/--details/--junit")


def add_gate_options(comp: Adder, expect: bool = True) -> None:
    """The CI gate: ``--expect CHECK=OUTCOME`` (compare) and ``--fail-on OUTCOME[,OUTCOME...]``."""
    if expect:
        comp.add_argument(
            "--expect", action="append", default=[], metavar="CHECK=OUTCOME",
            help="every run of CHECK must end in OUTCOME, as the scenario's [expect] says it (and "
            "replacing its entry for CHECK): exit 1 if one does not (repeatable); a "
            "--check-http/--deploy-cmd row is named http-PROGRAM/deploy-PROGRAM, the program's "
            "name without its extension (http-timestamp)",
        )
    comp.add_argument(
        "--fail-on", action="append", default=[], metavar="OUTCOME[,OUTCOME...]",
        help="exit 1 if any run of any check ends in one of these outcomes, e.g. "
        "error,undecided,missed (repeatable; JUnit: a failure, or an error for `error`); a "
        "--check-http/--deploy-cmd row that ends in error fails the gate without it",
    )


def expect_sets(items: list[str], outcomes: tuple[str, ...]) -> list[str]:
    """``--expect count=caught`` as the ``--set expect.count=caught`` it stands for.

    The outcome is checked here, so the message names ``--expect``; the check's name is
    checked with the scenario's own ``[expect]`` keys (the same rule: a check that runs).
    """
    sets = []
    for item in items:
        check, sep, outcome = (part.strip() for part in item.partition("="))
        if not sep or not check:
            raise BadInput(f"--expect {item!r}: expected CHECK=OUTCOME")
        if "." in check:
            # It would become a deeper key of --set; no row is named so (a process's row
            # is http-NAME or deploy-NAME: sim.cli.twinopts.row_name).
            raise BadInput(f"--expect {item!r}: a check's name has no dot (a --check-http or "
                           "--deploy-cmd row is named like http-timestamp)")
        if outcome not in outcomes:
            raise BadInput(f"--expect {item!r}: the outcome must be one of {', '.join(outcomes)}"
                           f"{did_you_mean(outcome, outcomes)}")
        sets.append(f"expect.{check}={outcome}")
    return sets


def fail_on(items: list[str], outcomes: tuple[str, ...]) -> frozenset[str]:
    """The outcomes ``--fail-on`` names (comma-separated, repeatable); BadInput for an unknown one."""
    chosen = {word.strip() for item in items for word in item.split(",") if word.strip()}
    for word in sorted(chosen):
        if word not in outcomes:
            raise BadInput(f"--fail-on {word!r}: not an outcome{did_you_mean(word, outcomes)}; one "
                           f"of {', '.join(outcomes)}")
    if items and not chosen:
        raise BadInput("--fail-on: name at least one outcome")
    return frozenset(chosen)


#: What fails the gate of a real process's row without ``--fail-on``: a process that timed
#: out, was killed or could not start never judged the release, and CI must not go green.
PROCESS_GATE = frozenset({"error"})


def failed_on(summary: Mapping[str, Any], outcomes: frozenset[str],
              processes: Collection[str] = ()) -> list[str]:
    """One line per check and outcome named by ``--fail-on`` that happened: what fails the gate.

    A row of ``processes`` (--check-http/--deploy-cmd) that ends in ``error`` fails it too,
    named or not (``PROCESS_GATE``).
    """
    lines = []
    for check, counts in summary.items():
        runs = sum(counts.to_json().values())
        lines += [f"--fail-on: {check} {outcome} in {counts.count(outcome)} of {runs} run(s)"
                  for outcome in sorted(outcomes) if counts.count(outcome)]
        if check in processes:
            lines += [f"{check}: {outcome} in {counts.count(outcome)} of {runs} run(s) (a "
                      f"process row that ends in {outcome} fails the gate; its reason says why)"
                      for outcome in sorted(PROCESS_GATE - outcomes) if counts.count(outcome)]
    return lines
