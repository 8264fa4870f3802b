"""JUnit XML reports (``--junit FILE``), so CI systems show checks' results natively.

One ``testsuite`` per scenario or recording, one ``testcase`` per check in it, one
``failure`` per wrong verdict (an unmet expectation: a scenario's ``[expect]`` entry, a
``compare --expect`` or a ``replay --expect``; or an outcome named by ``--fail-on``), with the
seeds where it failed in its text, and one ``error`` with the reason where the check gave no
verdict at all (outcome ``error``: it raised, timed out or answered nonsense). The shape is the one CI
tools read (Jenkins' and GitLab's JUnit XSD, which pytest also writes): ``testsuites`` >
``testsuite`` with ``tests``/``failures``/``errors``/``skipped`` counts > ``testcase`` with
``classname`` and ``name`` > ``failure`` with ``message``. Nothing here times anything: the report of the same
run is byte-identical.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from platform_testbed.sim.runtime.outputs import check_output, write_atomic
from platform_testbed.sim.show.text import xml_text

if TYPE_CHECKING:
    from platform_testbed.sim.publish.compare import Comparison
    from platform_testbed.sim.publish.recording import ReplayRow


#: A sweep case lists at most this many worlds under its failure or error (the rows file has
#: them all): a CI page of 6,000 lines says no more than its first fifty.
LISTED_WORLDS = 50


@dataclass(frozen=True, slots=True)
class Case:
    """One test case: a check in one scenario (or one recorded run), and its unmet expectation."""

    classname: str
    name: str
    #: The unmet expectation's one-line message, or None when it held (or none was declared).
    failure: str | None = None
    #: The failure's detail (which seeds), shown by CI under the message.
    detail: str = ""
    #: What the check concluded, for the CI page (``system-out``).
    output: str = ""
    #: Why the check gave no verdict (its first ``error`` run's reason), or None.
    error: str | None = None
    #: The error's detail (every seed that errored, with its reason).
    error_detail: str = ""
    #: Why the case is reported but not judged (a world a hunt found, without
    #: ``--fail-on found``): a JUnit publisher shows it apart, and green.
    skipped: str | None = None


@dataclass(frozen=True, slots=True)
class Suite:
    """The cases of one scenario or one recording."""

    name: str
    cases: tuple[Case, ...] = field(default_factory=tuple)


def checked(args: argparse.Namespace) -> Path | None:
    """Where ``--junit`` will write (a symlink: the file it names, with --force), or BadInput.

    Called by each handler before any work: a device or a symlink would be replaced by
    the rename (as root: ``/dev/null``), so either is refused unless ``--force``.
    """
    path: Path | None = args.junit
    if path is None:
        return None
    return check_output("--junit", path, bool(getattr(args, "force", False)))


def compare_suite(result: Comparison, command: str = "compare",
                  fail_on: frozenset[str] = frozenset()) -> Suite:
    """One case per check of a comparison: a failure where an expectation did not hold (or an
    outcome in ``fail_on`` happened), an error with its reason where the check gave no verdict."""
    from platform_testbed.sim.publish.compare import reason  # noqa: PLC0415 -- the model loads with a run

    cases = []
    for check in result.checks:
        misses = [m for m in result.expectations_failed if m.check == check]
        runs = result.results_of(check)
        failure = None
        lines = [f"seed {m.seed}: expected {m.expected}, got {m.outcome}" for m in misses]
        if misses:
            got = Counter(m.outcome for m in misses)
            failure = (f"expected {misses[0].expected}, got "
                       f"{', '.join(f'{o} {n}' for o, n in sorted(got.items()))} "
                       f"in {len(misses)} of {len(runs)} seed(s)")
        # --fail-on: outcomes that fail the gate whatever was expected (error is an <error>).
        hit = [r for r in runs if r.outcome in fail_on and r.outcome != "error"]
        if hit:
            got = Counter(r.outcome for r in hit)
            said = f"{', '.join(f'{o} {n}' for o, n in sorted(got.items()))} in {len(hit)} of " \
                f"{len(runs)} seed(s) (--fail-on)"
            failure = said if failure is None else f"{failure}; {said}"
            lines += [f"seed {r.seed}: {r.outcome} ({reason(r)})" for r in hit]
        errored = [r for r in runs if r.outcome == "error"]
        error = f"{reason(errored[0]) or 'no reason given'} (seed {errored[0].seed}" + (
            f"; {len(errored)} of {len(runs)} seeds errored)" if len(errored) > 1 else ")"
        ) if errored else None
        # The truth that judged the outcomes first: caught and missed mean nothing without it.
        output = [f"judged by the truth {result.truth_label}"] + [
            f"seed {r.seed}: {r.outcome}" + (f" ({reason(r)})" if reason(r) else "") for r in runs]
        cases.append(Case(f"testbed.{command}.{result.scenario}", check, failure, "\n".join(lines),
                          "\n".join(output), error,
                          "\n".join(f"seed {r.seed}: {reason(r)}" for r in errored)))
    return Suite(result.scenario, tuple(cases))


def replay_suite(recording: str, rows: Sequence[ReplayRow], failures: Sequence[str | None]) -> Suite:
    """One case per recorded run and check; ``failures`` says, per row, its unmet expectation."""
    stem = Path(recording).stem
    cases = []
    for row, failure in zip(rows, failures, strict=True):
        name = row.check if row.run is None else f"{row.check} [{row.run}]"
        verdict = row.verdict or "no verdict"
        cases.append(Case(f"testbed.replay.{stem}", name, failure, output=f"{verdict}: {row.reason}"))
    return Suite(recording, tuple(cases))


def document(suites: Sequence[Suite], name: str = "testbed") -> ET.Element:
    """The ``testsuites`` element; every count is the number of its children's elements."""
    root = ET.Element("testsuites", name=xml_text(name))
    # The root has no ``skipped`` (Jenkins' XSD gives ``testsuites`` none); each suite has.
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for suite in suites:
        failures = sum(c.failure is not None for c in suite.cases)
        errors = sum(c.error is not None for c in suite.cases)
        skipped = sum(c.skipped is not None for c in suite.cases)
        node = ET.SubElement(root, "testsuite", name=xml_text(suite.name), tests=str(len(suite.cases)),
                             failures=str(failures), errors=str(errors), skipped=str(skipped))
        for case in suite.cases:
            element = ET.SubElement(node, "testcase", classname=xml_text(case.classname),
                                    name=xml_text(case.name))
            if case.failure is not None:
                failure = ET.SubElement(element, "failure", message=xml_text(case.failure),
                                        type="expectation")
                failure.text = xml_text(case.detail or case.failure)
            if case.error is not None:
                error = ET.SubElement(element, "error", message=xml_text(case.error), type="no-verdict")
                error.text = xml_text(case.error_detail or case.error)
            if case.skipped is not None:
                ET.SubElement(element, "skipped", message=xml_text(case.skipped))
            if case.output:
                ET.SubElement(element, "system-out").text = xml_text(case.output)
        totals["tests"] += len(suite.cases)
        totals["failures"] += failures
        totals["errors"] += errors
    for key, value in totals.items():
        root.set(key, str(value))
    return root


def write(path: Path | None, suites: Sequence[Suite]) -> None:
    """Write the report atomically (a reader never sees half a file); no path, no report."""
    if path is None:
        return
    root = document(suites)
    ET.indent(root)
    text = ET.tostring(root, encoding="utf-8", xml_declaration=True).decode()

    def put(handle: IO[str]) -> None:
        handle.write(text)

    # Through sim.runtime.outputs: the umask's permissions, and a Ctrl-C mid-write keeps the file whole.
    write_atomic(path, put, newline="")


def sweep_suite(name: str, checks: Sequence[str], rows: Sequence[Mapping[str, Any]],
                keys: Sequence[str], fail_on: frozenset[str] = frozenset()) -> Suite:
    """One case per check of a sweep: a failure listing the worlds that ended in a ``fail_on``
    outcome, an error with the first world's reason where the check gave no verdict."""

    def where(row: Mapping[str, Any]) -> str:
        at = ", ".join(f"{k}={row[k]}" for k in keys)
        return f"point {row['point']} ({at}) seed {row['seed']}"

    def why(row: Mapping[str, Any]) -> str:
        # Rows keep the verdict, not its reason (sweep rows stay small); an error keeps its text.
        return str(row.get("error") or f"verdict {row.get('verdict') or 'none'}")

    def listed(lines: list[str]) -> str:
        more = len(lines) - LISTED_WORLDS
        return "\n".join(lines[:LISTED_WORLDS] + ([f"... and {more} more"] if more > 0 else []))

    cases = []
    for check in checks:
        mine = [r for r in rows if r["check"] == check]
        counts = Counter(str(r["outcome"]) for r in mine)
        hit = [r for r in mine if r["outcome"] in fail_on and r["outcome"] != "error"]
        failure = None
        if hit:
            got = Counter(str(r["outcome"]) for r in hit)
            failure = (f"{', '.join(f'{o} {n}' for o, n in sorted(got.items()))} in {len(hit)} of "
                       f"{len(mine)} world(s) (--fail-on)")
        errored = [r for r in mine if r["outcome"] == "error"]
        error = f"{why(errored[0])} ({where(errored[0])}; {len(errored)} of {len(mine)} world(s))" \
            if errored else None
        cases.append(Case(
            f"testbed.sweep.{name}", check, failure,
            listed([f"{where(r)}: {r['outcome']} ({why(r)})" for r in hit]),
            ", ".join(f"{o} {n}" for o, n in sorted(counts.items())), error,
            listed([f"{where(r)}: {why(r)}" for r in errored])))
    return Suite(name, tuple(cases))
