"""What a sweep gives: the per-check summary, its table, and the rows as a file."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim import scenario as scenarios
from sim.settings import BadInput
from sim.sweep.units import Row, columns

if TYPE_CHECKING:
    from sim.sweep.file import Sweep
    from sim.sweep.run import SweepResult


def summarise(result: SweepResult) -> dict[str, Any]:
    """Per check: miss rate over bad worlds, false-alarm rate over good ones, median time."""
    sweep = result.sweep
    checks: dict[str, Any] = {}
    for name in sweep.checks:
        mine = [r for r in result.rows if r["check"] == name]
        count = dict.fromkeys(scenarios.OUTCOMES, 0)
        for row in mine:
            count[row["outcome"]] = count.get(row["outcome"], 0) + 1
        bad = count["caught"] + count["missed"]
        good = count["passed"] + count["false_alarm"]
        decided = [r["decided_at_s"] for r in mine if r["decided_at_s"] is not None]
        checks[name] = {
            "rows": len(mine),
            "bad_worlds": bad,
            "missed": count["missed"],
            "miss_rate": round(count["missed"] / bad, 4) if bad else None,
            "good_worlds": good,
            "false_alarms": count["false_alarm"],
            "false_alarm_rate": round(count["false_alarm"] / good, 4) if good else None,
            "median_decision_s": round(statistics.median(decided), 3) if decided else None,
            # A check that cannot judge this platform (it fails safe): neither caught nor missed.
            "blind": count.get("blind", 0),
            "undecided": count["undecided"],
            "errors": count["error"],
        }
    return {
        "sweep": sweep.name,
        "scenario": sweep.scenario_name,
        "axes": {key: len(values) for key, values in sweep.axes},
        "points": sweep.points,
        "seeds": len(sweep.seeds),
        "units": sweep.units,
        "units_done": result.units_done,
        "complete": result.complete,
        "interrupted": result.interrupted,
        "checks": checks,
    }


def summary_table(summary: dict[str, Any]) -> str:
    """The summary as a fixed-width table, one line per check."""
    lines = [
        f"{summary['sweep']} · base {summary['scenario']} · {summary['points']} points x "
        f"{summary['seeds']} seed(s) = {summary['units_done']}/{summary['units']} worlds",
        "",
        f"{'check':<16}{'bad':>8}{'missed':>8}{'miss rate':>11}{'good':>8}{'f.alarms':>10}"
        f"{'f.a. rate':>11}{'median decide':>15}{'blind':>7}{'undecided':>11}{'errors':>8}",
    ]

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:.1%}"

    for name, c in summary["checks"].items():
        median = "-" if c["median_decision_s"] is None else f"{c['median_decision_s']:.1f} s"
        lines.append(
            f"{name:<16}{c['bad_worlds']:>8}{c['missed']:>8}{pct(c['miss_rate']):>11}"
            f"{c['good_worlds']:>8}{c['false_alarms']:>10}{pct(c['false_alarm_rate']):>11}"
            f"{median:>15}{c['blind']:>7}{c['undecided']:>11}{c['errors']:>8}"
        )
    return "\n".join(lines)


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def check_out_path(path: Path) -> None:
    """Refuse an output path before any work is done: a known suffix, a folder that exists."""
    if path.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        raise BadInput(f"--out {path}: the suffix must be .csv, .jsonl or .ndjson")
    # Resolved, so `dir/../x.csv` is judged by the folder it really lands in.
    if not path.resolve().parent.is_dir():
        raise BadInput(f"--out {path}: no such directory {path.parent}")


def write_rows(path: Path, sweep: Sweep, rows: Sequence[Row]) -> None:
    """Write rows as CSV (``.csv``) or JSON Lines (``.jsonl``/``.ndjson``), atomically.

    The rows go to a temporary file in the same directory, which then replaces ``path``
    in one step: a reader never sees half a file, and an old file survives a failure.
    """
    check_out_path(path)
    suffix = path.suffix.lower()
    path = path.resolve()
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            if suffix == ".csv":
                writer = csv.writer(handle, lineterminator="\n")
                names = columns(sweep)
                writer.writerow(names)
                for row in rows:
                    writer.writerow([_csv_cell(row.get(name)) for name in names])
            else:
                for row in rows:
                    handle.write(json.dumps(row, separators=(",", ":")) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_rows(path: Path) -> list[Row]:
    """Rows back from a CSV or JSON Lines file written by ``write_rows`` (CSV as text)."""
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]

