"""What a sweep gives: the per-check summary, its table, and the rows as a file."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import statistics
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import IO, TYPE_CHECKING, Any

from platform_testbed.sim.config.scenario import OUTCOMES
from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.config.truth import DEFAULT_TRUTH, DEFAULT_WINDOW_S
from platform_testbed.sim.config.truth import rule as rule_of
from platform_testbed.sim.publish.compare import SCHEMA_VERSION, OutcomeCounts
from platform_testbed.sim.runtime.frames import FLOAT, INT, TEXT, frame
from platform_testbed.sim.runtime.outputs import (
    check_output,
    guarded,
    is_special,
    replacing,
    write_atomic,
    writing,
)
from platform_testbed.sim.runtime.signals import held
from platform_testbed.sim.show.table import Table, fit, width, wrap
from platform_testbed.sim.sweep.file import Sweep
from platform_testbed.sim.sweep.units import Row, check_names, columns

if TYPE_CHECKING:
    import pandas as pd


#: ``SweepSummary.to_pandas()``: ``check`` and ``CheckSummary.to_json()``'s fields, typed.
SUMMARY_DTYPES: Mapping[str, str] = MappingProxyType({
    "check": TEXT, "rows": INT, "bad_worlds": INT, "missed": INT, "miss_rate": FLOAT,
    "good_worlds": INT, "false_alarms": INT, "false_alarm_rate": FLOAT,
    "median_decision_s": FLOAT, "blind": INT, "undecided": INT, "errors": INT,
})


@dataclass(frozen=True, slots=True)
class CheckSummary:
    """One check over a sweep: miss rate over bad worlds, false alarms over good ones."""

    rows: int
    counts: OutcomeCounts
    median_decision_s: float | None

    @property
    def bad_worlds(self) -> int:
        """Worlds whose release was bad and the check judged (caught or missed)."""
        return self.counts.caught + self.counts.missed

    @property
    def good_worlds(self) -> int:
        """Worlds whose release was good and the check judged (passed or false alarm)."""
        return self.counts.passed + self.counts.false_alarm

    @property
    def miss_rate(self) -> float | None:
        """Missed over bad worlds (4 places), None with no bad world."""
        bad = self.bad_worlds
        return round(self.counts.missed / bad, 4) if bad else None

    @property
    def false_alarm_rate(self) -> float | None:
        """False alarms over good worlds (4 places), None with no good world."""
        good = self.good_worlds
        return round(self.counts.false_alarm / good, 4) if good else None

    def to_json(self) -> dict[str, Any]:
        """The summary's JSON shape for one check (``testbed sweep --json``)."""
        return {
            "rows": self.rows,
            "bad_worlds": self.bad_worlds,
            "missed": self.counts.missed,
            "miss_rate": self.miss_rate,
            "good_worlds": self.good_worlds,
            "false_alarms": self.counts.false_alarm,
            "false_alarm_rate": self.false_alarm_rate,
            "median_decision_s": self.median_decision_s,
            # A check that cannot judge this platform (it fails safe): neither caught nor missed.
            "blind": self.counts.blind,
            "undecided": self.counts.undecided,
            "errors": self.counts.error,
        }


@dataclass(frozen=True, slots=True)
class SweepSummary:
    """A sweep's outcome per check, and how much of it ran."""

    sweep: str
    scenario: str
    axes: tuple[tuple[str, int], ...]
    points: int
    seeds: int
    units: int
    units_done: int
    complete: bool
    interrupted: bool
    checks: Mapping[str, CheckSummary]
    #: The ground truth that judged the worlds (``sim.config.truth``); ``axis`` when swept.
    truth: str = DEFAULT_TRUTH
    truth_rule: str = ""

    def to_json(self) -> dict[str, Any]:
        """The ``testbed sweep --json`` document (``schema_version`` on top)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "sweep": self.sweep,
            "scenario": self.scenario,
            "truth": self.truth,
            "truth_rule": self.truth_rule,
            "axes": dict(self.axes),
            "points": self.points,
            "seeds": self.seeds,
            "units": self.units,
            "units_done": self.units_done,
            "complete": self.complete,
            "interrupted": self.interrupted,
            "checks": {name: c.to_json() for name, c in self.checks.items()},
        }

    def to_pandas(self) -> pd.DataFrame:
        """One row per check: ``check`` and its ``--json`` summary's fields (``pandas`` extra)."""
        rows = [{"check": name} | c.to_json() for name, c in self.checks.items()]
        return frame(rows, SUMMARY_DTYPES)


@dataclass
class SweepResult:
    """The rows of a sweep (all of them, or those finished before an interrupt)."""

    sweep: Sweep
    rows: list[Row]
    units_done: int
    interrupted: bool = False
    elapsed_s: float = 0.0
    tasks: int = 0
    per_task: int = 0
    #: Set by ``run_sweep`` once the rows are in.
    summary: SweepSummary | None = None
    #: Rows handed to ``run_sweep``'s ``sink`` (then ``rows`` holds none of them).
    rows_streamed: int = 0

    @property
    def row_count(self) -> int:
        """Every row the sweep gave, kept or streamed."""
        return len(self.rows) + self.rows_streamed

    @property
    def complete(self) -> bool:
        """True when every unit ran."""
        return self.units_done == self.sweep.units



class Tally:
    """The summary's figures, gathered as rows go by: no row is kept.

    Per check, its outcome counts and its decision times (8 bytes each, for the exact
    median): a sweep of a million worlds holds 16 MB of them, not its rows. A worker
    tallies its task's rows and the parent only adds the tallies up (``merge``).
    """

    def __init__(self, names: Sequence[str]) -> None:
        self._counts: dict[str, list[int]] = {name: [0] * len(OUTCOMES) for name in names}
        self.decided: dict[str, array[float]] = {name: array("d") for name in names}
        self.rows = 0

    @property
    def counts(self) -> dict[str, OutcomeCounts]:
        """Each check's outcome counts so far."""
        return {name: OutcomeCounts(*c) for name, c in self._counts.items()}

    def add(self, rows: Iterable[Row]) -> None:
        """Count these rows (rows of a check the sweep does not name are not counted)."""
        at = _OUTCOME_AT
        for row in rows:
            self.rows += 1
            counts = self._counts.get(row["check"])
            if counts is None:
                continue
            counts[at[row["outcome"]]] += 1
            if row["decided_at_s"] is not None:
                self.decided[row["check"]].append(row["decided_at_s"])

    def merge(self, other: Tally) -> None:
        """Add ``other``'s figures (a task's, tallied where it ran) to these."""
        self.rows += other.rows
        for name, counts in other._counts.items():
            mine = self._counts.get(name)
            if mine is None:
                continue
            for i, n in enumerate(counts):
                mine[i] += n
            self.decided[name].extend(other.decided[name])

    def summary(self, result: SweepResult) -> SweepSummary:
        """The summary of ``result``'s sweep, from what was counted."""
        sweep = result.sweep
        checks: dict[str, CheckSummary] = {}
        for name, counts in self.counts.items():
            decided = self.decided[name]
            median = round(statistics.median(decided), 3) if decided else None
            checks[name] = CheckSummary(counts.total, counts, median)
        return SweepSummary(
            sweep=sweep.name,
            scenario=sweep.scenario_name,
            axes=tuple((key, len(values)) for key, values in sweep.axes),
            points=sweep.points,
            seeds=len(sweep.seeds),
            units=sweep.units,
            units_done=result.units_done,
            complete=result.complete,
            interrupted=result.interrupted,
            checks=MappingProxyType(checks),
            **sweep_truth(sweep.base, sweep.keys),
        )


def sweep_truth(base: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, str]:
    """The truth a sweep's worlds are judged by: the base's, or ``axis`` when it is swept."""
    if "truth" in keys:
        return {"truth": "axis", "truth_rule": "swept: each row's truth column says"}
    truth = base.get("truth", DEFAULT_TRUTH)
    return {"truth": truth,
            "truth_rule": rule_of(truth, base.get("truth_window_s", DEFAULT_WINDOW_S))}


#: Each outcome's place in ``OutcomeCounts`` (its fields are ``OUTCOMES``, in order).
_OUTCOME_AT = {outcome: i for i, outcome in enumerate(OUTCOMES)}


@dataclass(slots=True)
class Chunk:
    """A task's rows as a worker hands them back: already in the file's format, with
    their tally, so the parent only writes text and adds figures (``run_sweep``)."""

    text: str
    count: int
    tally: Tally
    #: The rows themselves, only when the caller keeps them (a JUnit report, a heatmap).
    rows: list[Row] | None = None

    def __len__(self) -> int:
        return self.count


def summarise(result: SweepResult) -> SweepSummary:
    """Per check (by the name its rows carry): outcome counts, rates, median decision time."""
    tally = Tally(check_names(result.sweep))
    tally.add(result.rows)
    return tally.summary(result)


def summary_table(summary: SweepSummary, at: int | None = None) -> str:
    """The summary as a table, one row per check, fitted to ``at`` columns."""
    at = width() if at is None else at
    head = (f"{summary.sweep} · base {summary.scenario} · {summary.points} points x "
            f"{summary.seeds} seed(s) = {summary.units_done}/{summary.units} worlds · truth "
            f"{summary.truth}")

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:.1%}"

    rows = []
    for name, c in summary.checks.items():
        median = "-" if c.median_decision_s is None else f"{c.median_decision_s:.1f} s"
        rows.append([name, str(c.bad_worlds), str(c.counts.missed), pct(c.miss_rate),
                     str(c.good_worlds), str(c.counts.false_alarm), pct(c.false_alarm_rate),
                     median, str(c.counts.blind), str(c.counts.undecided), str(c.counts.error)])
    header = ["check", "bad", "missed", "miss rate", "good", "f.alarms", "f.a. rate",
              "median decide", "blind", "undecided", "errors"]
    table = Table(header, rows, right=frozenset(range(1, len(header))), across="")
    return "\n".join([*wrap(head, at), "", fit(table, at)])


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def check_out_path(path: Path, force: bool = False) -> Path:
    """Refuse an output path before any work is done: a known suffix, a writable place.

    Returns where the rows will go (``sim.runtime.outputs.check_output``).
    """
    if path.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        raise BadInput(f"--out {path}: the suffix must be .csv, .jsonl or .ndjson")
    return check_output("--out", path, force)


def write_rows(path: Path, sweep: Sweep, rows: Sequence[Row], force: bool = False) -> None:
    """Write rows as CSV (``.csv``) or JSON Lines (``.jsonl``/``.ndjson``), atomically.

    The rows go to a temporary file in the same directory, which then replaces ``path``
    in one step: a reader never sees half a file, and an old file survives a failure.
    """
    target = check_out_path(path, force)

    def write(handle: IO[str]) -> None:
        _row_writer(path, sweep, handle)(rows)

    write_atomic(target, write, newline="")


@dataclass(frozen=True, slots=True)
class RowFormat:
    """How rows become a file's text: CSV (``columns`` as its header) or JSON Lines.

    Plain data, pickled to the workers: each formats its own task's rows
    (``run_sweep``), the same text as formatting them all in one place.
    """

    csv: bool
    names: tuple[str, ...]

    def header(self) -> str:
        """What the file starts with (CSV: the header line; JSON Lines: nothing)."""
        return self.encode_cells([self.names]) if self.csv else ""

    def encode(self, rows: Iterable[Row]) -> str:
        """Rows as the file's lines."""
        if self.csv:
            names = self.names
            return self.encode_cells([_csv_cell(row.get(name)) for name in names] for row in rows)
        return "".join([json.dumps(row, separators=(",", ":")) + "\n" for row in rows])

    @staticmethod
    def encode_cells(lines: Iterable[Iterable[str]]) -> str:
        """CSV lines, quoted as ``csv.writer`` quotes them."""
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(lines)
        return buffer.getvalue()


def row_format(path: Path, sweep: Sweep) -> RowFormat:
    """The format ``path``'s suffix names, with the sweep's columns."""
    return RowFormat(path.suffix.lower() == ".csv", tuple(columns(sweep)))


def _row_writer(path: Path, sweep: Sweep, handle: IO[str]) -> Callable[[Iterable[Row]], None]:
    """A function that writes rows to ``handle`` in ``path``'s format (CSV: header first)."""
    fmt = row_format(path, sweep)
    handle.write(fmt.header())

    def rows_out(rows: Iterable[Row]) -> None:
        handle.write(fmt.encode(rows))
    return rows_out


class StreamSink:
    """``streaming_rows``' sink: rows (or their text, formatted elsewhere) written in order.

    Each write is whole under ``held``: a Ctrl-C or SIGTERM while it is written comes
    after its last row, so the file never holds half a row.
    """

    def __init__(self, handle: IO[str], fmt: RowFormat) -> None:
        self._handle = handle
        self.format = fmt
        with held():
            handle.write(fmt.header())

    def __call__(self, rows: Iterable[Row]) -> None:
        """Format these rows here and write them."""
        self.write(self.format.encode(rows))

    def write(self, text: str) -> None:
        """Write rows already in ``format`` (a worker's ``Chunk.text``)."""
        with held():
            self._handle.write(text)


@contextlib.contextmanager
def streaming_rows(path: Path, sweep: Sweep, force: bool = False) -> Iterator[StreamSink]:
    """A sink for rows in order, written as they come; the file appears whole when the
    block ends well, and not at all otherwise.

    The same bytes as ``write_rows`` given every row at once. Each batch is written under
    ``held``: a Ctrl-C or SIGTERM while it is written comes after its last row, so the
    file never holds half a row; a second one abandons the stream (the previous file
    stays). The rows go to a file with no name (Linux's ``O_TMPFILE``) that is given one
    only when it is whole, so even a SIGKILL mid-sweep leaves nothing beside ``path``.
    """
    target = check_out_path(path, force)
    with _unnamed_beside(target) as handle:
        yield StreamSink(handle, row_format(path, sweep))


@contextlib.contextmanager
def _unnamed_beside(target: Path) -> Iterator[IO[str]]:
    """A text file in ``target``'s folder that becomes ``target`` when the block ends well.

    Without ``O_TMPFILE`` (not Linux, or a file system without it) or ``/proc``, a named
    temporary file (``sim.runtime.outputs.replacing``), which only a SIGKILL leaves behind.
    A device (``--force``) is written in place.
    """
    folder = target.resolve().parent
    fd = -1
    if not is_special(target) and hasattr(os, "O_TMPFILE") and Path("/proc/self/fd").is_dir():
        with contextlib.suppress(OSError):
            fd = os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o666)
    if fd < 0:
        with replacing(target, newline="") as handle:
            yield handle
        return
    handle = os.fdopen(fd, "w", encoding="utf-8", newline="")
    try:
        yield guarded(handle, target)  # a disk that fills: one line, not a traceback
        with held(), writing(target):  # the commit: a signal now waits until the file is in place
            handle.flush()
            os.fsync(fd)
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)  # as open() would make it
            named = _link_beside(fd, folder, target.name)
            try:
                os.replace(named, target.resolve())
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(named)
                raise
    finally:
        with contextlib.suppress(OSError):  # a failed write's buffer: it must not mask the error
            handle.close()


def _link_beside(fd: int, folder: Path, name: str) -> Path:
    """Give the unnamed file ``fd`` a fresh temporary name in ``folder``; return it."""
    # A folder descriptor makes os.link call linkat(AT_SYMLINK_FOLLOW), which follows the
    # /proc link to the file; without one it calls link(), which would link the link itself.
    where = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(100):
            named = f".{name}.{os.urandom(4).hex()}.tmp"
            try:
                os.link(f"/proc/self/fd/{fd}", named, dst_dir_fd=where, follow_symlinks=True)
            except FileExistsError:
                continue
            return folder / named
    finally:
        os.close(where)
    raise FileExistsError(f"no free temporary name beside {folder / name}")


def read_rows(path: Path) -> list[Row]:
    """Rows back from a CSV or JSON Lines file written by ``write_rows`` (CSV as text)."""
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]

