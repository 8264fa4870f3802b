"""``replay --expect CHECK=VERDICT``: the verdict each recorded run must get from a check."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from platform_testbed.sim.config.rules import did_you_mean
from platform_testbed.sim.config.settings import BadInput

if TYPE_CHECKING:
    from platform_testbed.sim.publish.recording import ReplayRow

#: ``none``: the check gave no verdict (it ran out of looks, or raised).
VERDICTS = ("pass", "fail", "none")


def add_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--expect CHECK=VERDICT`` (repeatable) to ``replay``."""
    parser.add_argument("--expect", action="append", default=[], metavar="CHECK=VERDICT",
                        help="every run CHECK replays must end in VERDICT (pass, fail or none: no "
                        "verdict); exit 1 if one does not (repeatable)")


def parse(items: Sequence[str]) -> dict[str, str]:
    """``["count=fail", ...]`` as ``{check: verdict}``; BadInput naming the item if malformed."""
    wanted: dict[str, str] = {}
    for item in items:
        check, sep, verdict = item.partition("=")
        check, verdict = check.strip(), verdict.strip().lower()
        if not sep or not check:
            raise BadInput(f"--expect {item!r}: expected CHECK=VERDICT")
        if verdict not in VERDICTS:
            raise BadInput(f"--expect {item!r}: the verdict must be one of {', '.join(VERDICTS)}"
                           f"{did_you_mean(verdict, VERDICTS)}")
        if wanted.get(check, verdict) != verdict:
            raise BadInput(f"--expect {item!r}: {check} is already expected to {wanted[check]}")
        wanted[check] = verdict
    return wanted


def judge(wanted: dict[str, str], rows: Sequence[ReplayRow]) -> list[str | None]:
    """Per row, the unmet expectation's message, or None; BadInput for a check that never ran."""
    ran = {row.check for row in rows}
    for check in wanted:
        if check not in ran:
            raise BadInput(f"--expect {check}=...: {check} did not run (ran: {', '.join(sorted(ran))})")
    misses: list[str | None] = []
    for row in rows:
        want, got = wanted.get(row.check), row.verdict or "none"
        where = f" on {row.run}" if row.run else ""
        misses.append(None if want in (None, got) else f"{row.check}{where}: expected {want}, got {got}")
    return misses


def unmet(misses: Sequence[str | None]) -> list[str]:
    """The unmet expectations' messages, in row order."""
    return [m for m in misses if m is not None]


def annotate(document: dict[str, Any], wanted: dict[str, str],
             misses: Sequence[str | None]) -> dict[str, Any]:
    """The ``replay --json`` document with ``expectations_failed`` when anything was expected."""
    return {**document, "expectations_failed": unmet(misses)} if wanted else document


def text(wanted: dict[str, str], misses: Sequence[str | None]) -> str:
    """Lines for the end of the replay report: each unmet expectation, or that all held."""
    if not wanted:
        return ""
    if failed := unmet(misses):
        return "\n\n" + "\n".join(f"NOT MET: {m}" for m in failed)
    return f"\n\nexpectations held: {', '.join(f'{c}={v}' for c, v in wanted.items())}"
