"""Sweeps: one base scenario over a grid of settings and seeds, every check in each world.

A sweep file names a base scenario, the checks to compare, the seeds, and axes over
scenario keys (``table.key`` as in ``--set``). Every (point, seed) is one world in which
all the checks run; it gives one row per check. Units of work are numbered
point-major, so rows come out in the same order whoever computed them: one process,
a local pool, or a Dask cluster.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
import math
import os
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from checks import BUILTIN_CHECKS
from sim import scenario as scenarios
from sim.loader import load_checks
from sim.scenario import Scenario, validate
from sim.settings import BadInput, apply_sets, locate, read_toml, validated
from sim.world import run_checks

Scalar = int | float | str | bool
Row = dict[str, Any]

# A task should carry at least this much work, so a pool's per-task cost stays small.
TASK_TARGET_S = 0.1
# ...and at most this much, so Ctrl-C and the progress bar stay responsive.
TASK_CEILING_S = 1.0

#: Row columns after the axis columns, in file order.
RESULT_COLUMNS = (
    "check", "verdict", "outcome", "release_bad", "decided_at_s", "rollback",
    "late_failure_at_s", "down_s", "requests", "served", "not_found", "bad_gateway", "error",
)


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RangeAxis(_Table):
    """Values from ``start`` to ``stop`` (inclusive) every ``step``."""

    start: float
    stop: float
    step: float = Field(gt=0)

    def values(self) -> list[Scalar]:
        """The values, as integers when start and step are whole numbers."""
        count = math.floor((self.stop - self.start) / self.step + 1e-9) + 1
        if count < 1:
            raise ValueError(f"empty range: stop {self.stop:g} is below start {self.start:g}")
        whole = self.start.is_integer() and self.step.is_integer()
        out: list[Scalar] = []
        for i in range(count):
            value = round(self.start + i * self.step, 10)
            out.append(int(value) if whole else value)
        return out


class RandomAxis(_Table):
    """``count`` values drawn from ``random.Random(seed)``: uniform, integers or loguniform."""

    random: Literal["uniform", "integers", "loguniform"]
    low: float
    high: float
    count: int = Field(ge=1, le=1_000_000)
    seed: int = 0

    def values(self) -> list[Scalar]:
        """The drawn values, in draw order."""
        if self.high < self.low:
            raise ValueError(f"high {self.high:g} is below low {self.low:g}")
        rng = random.Random(self.seed)
        if self.random == "integers":
            low, high = math.ceil(self.low), math.floor(self.high)
            return [rng.randint(low, high) for _ in range(self.count)]
        if self.random == "loguniform":
            if self.low <= 0:
                raise ValueError("loguniform needs low > 0")
            lo, hi = math.log(self.low), math.log(self.high)
            return [round(math.exp(rng.uniform(lo, hi)), 6) for _ in range(self.count)]
        return [round(rng.uniform(self.low, self.high), 6) for _ in range(self.count)]


Axis = list[Scalar] | RangeAxis | RandomAxis


class HeatmapTable(_Table):
    """``[heatmap]``: which two axes the miss-region heatmap puts on x and y."""

    x: str
    y: str


class SweepFile(_Table):
    """A sweep file as written: base scenario, fixed overrides, checks, seeds, axes."""

    name: str = ""
    description: str = ""
    scenario: str
    set: list[str] = []
    checks: list[str] = []
    seeds: int | list[int] = Field(1)
    first_seed: int | None = Field(None, ge=0)
    axes: dict[str, Axis] = {}
    heatmap: HeatmapTable | None = None

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, value: int | list[int]) -> int | list[int]:
        if isinstance(value, int) and not 1 <= value <= 1_000_000:
            raise ValueError("a seed count must be between 1 and 1000000")
        if isinstance(value, list) and (not value or min(value) < 0):
            raise ValueError("a seed list must be non-empty with seeds of 0 or more")
        return value


@dataclass(frozen=True)
class Sweep:
    """A validated sweep, ready to run anywhere: it carries the base scenario as data."""

    name: str
    scenario_name: str
    base: dict[str, Any]
    checks: tuple[str, ...]
    seeds: tuple[int, ...]
    axes: tuple[tuple[str, tuple[Scalar, ...]], ...]
    heatmap: tuple[str, str] | None = None

    @property
    def keys(self) -> tuple[str, ...]:
        """The swept scenario keys, in file order."""
        return tuple(key for key, _ in self.axes)

    @property
    def points(self) -> int:
        """How many parameter combinations the axes span."""
        return math.prod(len(values) for _, values in self.axes)

    @property
    def units(self) -> int:
        """How many worlds: points times seeds."""
        return self.points * len(self.seeds)

    def point(self, index: int) -> tuple[Scalar, ...]:
        """The axis values of point ``index`` (the last axis varies fastest)."""
        values = []
        for _, axis in reversed(self.axes):
            index, at = divmod(index, len(axis))
            values.append(axis[at])
        return tuple(reversed(values))

    def scenario(self, values: Sequence[Scalar]) -> Scenario:
        """The base scenario with one point's values set."""
        raw = _with_values(self.base, zip(self.keys, values, strict=True))
        return validate(raw, self.name)

    def thinned(self, every: int) -> Sweep:
        """Every ``every``-th value of each axis: a quick look at a big sweep."""
        axes = tuple((key, values[::every]) for key, values in self.axes)
        return Sweep(self.name, self.scenario_name, self.base, self.checks, self.seeds, axes,
                     self.heatmap)


def _with_values(raw: dict[str, Any], items: Iterator[tuple[str, Scalar]] | Any) -> dict[str, Any]:
    merged = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for key, value in items:
        *tables, name = key.split(".")
        target = merged
        if tables:
            table = merged.setdefault(tables[0], {})
            if not isinstance(table, dict):
                raise BadInput(f"axes.{key}: {tables[0]} is not a table")
            target = table
        target[name] = value
    return merged


def _base_raw(name_or_path: str, sweep_dir: Path, sets: list[str]) -> tuple[str, dict[str, Any]]:
    """The base scenario as a raw mapping (validated), by shipped name or path."""
    try:
        path = locate(name_or_path, scenarios.shipped, "scenario", relative_to=sweep_dir)
    except BadInput as error:
        raise BadInput(f"scenario: {error}") from None
    raw = read_toml(path, "scenario: cannot read {path} ({reason})")
    raw.setdefault("name", path.stem)
    raw = apply_sets(raw, sets)
    validate(raw, path.name)
    return path.stem, raw


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file; any problem is BadInput with one line."""
    path = Path(path)
    raw = read_toml(path, "{path}: cannot read sweep file ({reason})")
    spec = validated(SweepFile, raw, path.name)
    return from_spec(spec, path.parent, path.stem)


def from_spec(spec: SweepFile, sweep_dir: Path, default_name: str = "sweep") -> Sweep:
    """Check a parsed sweep against its base scenario and expand its axes."""
    scenario_name, base = _base_raw(spec.scenario, sweep_dir, spec.set)
    axes: list[tuple[str, tuple[Scalar, ...]]] = []
    for key, axis in spec.axes.items():
        if len(key.split(".")) > 2 or not all(key.split(".")):
            raise BadInput(f"axes.{key}: keys are 'field' or 'table.field'")
        try:
            values = axis if isinstance(axis, list) else axis.values()
        except ValueError as error:
            raise BadInput(f"axes.{key}: {error}") from None
        if not values:
            raise BadInput(f"axes.{key}: needs at least one value")
        # Scenario fields are independent, so checking each value alone checks every point.
        for value in dict.fromkeys(values):
            validate(_with_values(base, [(key, value)]), f"axes.{key} = {value!r}")
        axes.append((key, tuple(values)))
    base_scenario = validate(base, scenario_name)
    check_names = spec.checks or list(BUILTIN_CHECKS)
    load_checks(check_names, base_scenario.check.model_dump())  # unknown check: BadInput now
    if isinstance(spec.seeds, int):
        first = base_scenario.seed if spec.first_seed is None else spec.first_seed
        seeds = tuple(range(first, first + spec.seeds))
    else:
        seeds = tuple(spec.seeds)
    heatmap = None
    if spec.heatmap is not None:
        for key in (spec.heatmap.x, spec.heatmap.y):
            if key not in spec.axes:
                raise BadInput(f"heatmap: {key!r} is not one of the axes")
        heatmap = (spec.heatmap.x, spec.heatmap.y)
    return Sweep(
        spec.name or default_name, scenario_name, base, tuple(check_names), seeds, tuple(axes),
        heatmap,
    )


# --- running units of work (point, seed) -----------------------------------------------


def _rows_of_unit(sweep: Sweep, unit: int) -> list[Row]:
    """All checks in one world; a world whose simulation raises gives error rows."""
    point, seed_index = divmod(unit, len(sweep.seeds))
    seed = sweep.seeds[seed_index]
    values = sweep.point(point)
    head: Row = {"point": point, "seed": seed} | dict(zip(sweep.keys, values, strict=True))
    try:
        world = sweep.scenario(values)
        checks = load_checks(list(sweep.checks), world.check.model_dump())
        results = run_checks(world, seed, checks)
    except Exception as error:  # any failure of one world is that world's rows, not the sweep's
        message = f"{type(error).__name__}: {error}".replace("\n", " ")
        return [
            head | dict.fromkeys(RESULT_COLUMNS) | {"check": name, "outcome": "error",
                                                    "error": message}
            for name in sweep.checks
        ]
    rows = []
    for result in results:
        verdict = result.verdict
        site = result.site
        rows.append(head | {
            "check": result.check,
            "verdict": None if verdict is None else ("pass" if verdict.ok else "fail"),
            "outcome": result.outcome,
            "release_bad": result.bad,
            "decided_at_s": _round(result.decided_at_s),
            "rollback": result.rollback,
            "late_failure_at_s": _round(result.late_failure_at_s),
            "down_s": site.down_s,
            "requests": site.requests,
            "served": site.served,
            "not_found": site.not_found,
            "bad_gateway": site.bad_gateway,
            "error": result.error,
        })
    return rows


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def run_units(sweep: Sweep, start: int, stop: int) -> tuple[int, list[Row]]:
    """A task: units ``start`` to ``stop`` (exclusive). Returns ``start`` and their rows."""
    rows: list[Row] = []
    for unit in range(start, stop):
        rows.extend(_rows_of_unit(sweep, unit))
    return start, rows


def _ignore_sigint() -> None:
    # Ctrl-C goes to the whole process group; the parent decides what stops, so workers
    # finish the task in hand instead of dying mid-row.
    import signal  # noqa: PLC0415 (only the workers need it)

    signal.signal(signal.SIGINT, signal.SIG_IGN)


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
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """True when every unit ran."""
        return self.units_done == self.sweep.units


Progress = Callable[[int], None]


def _calibrate(sweep: Sweep, done: dict[int, list[Row]], progress: Progress | None) -> int:
    """Run the first units here for ~30 ms; return units per task.

    The first unit only warms up (imports, caches) and is not timed; a task is sized
    from the median of the others, so one slow unit does not shrink every task.
    """
    began = time.perf_counter()
    costs: list[float] = []
    unit = 0
    while unit < sweep.units and (unit < 2 or time.perf_counter() - began < 0.03):
        start = time.perf_counter()
        done[unit] = run_units(sweep, unit, unit + 1)[1]
        if unit:
            costs.append(time.perf_counter() - start)
        unit += 1
        if progress:
            progress(1)
    per_unit = max(statistics.median(costs) if costs else 1.0, 1e-6)
    return max(1, min(math.ceil(TASK_TARGET_S / per_unit), math.floor(TASK_CEILING_S / per_unit)))


def run_sweep(
    sweep: Sweep,
    workers: int | None = None,
    dask: str | None = None,
    progress: Progress | None = None,
    per_task: int | None = None,
) -> SweepResult:
    """Run every unit; rows in unit order. Ctrl-C keeps the finished tasks' rows.

    ``workers`` local processes (default: one per core; 1 runs here, no pool), or the
    Dask scheduler at ``dask``. ``per_task`` fixes the batch size (default: measured so
    a task is about ``TASK_TARGET_S`` of work).
    """
    began = time.perf_counter()
    done: dict[int, list[Row]] = {}
    interrupted = False
    tasks = 0
    size = 0
    workers = workers or _cores()
    # Local workers boot (import the simulator) while this process measures the work.
    pool = _start_pool(workers) if dask is None and workers > 1 else None
    try:
        size = per_task or _calibrate(sweep, done, progress)
        start = max(done, default=-1) + 1
        ranges = [(lo, min(lo + size, sweep.units)) for lo in range(start, sweep.units, size)]
        tasks = len(ranges) + len(done)
        if dask is not None:
            _run_dask(sweep, ranges, dask, done, progress)
        elif pool is None:
            for lo, hi in ranges:
                done[lo] = run_units(sweep, lo, hi)[1]
                if progress:
                    progress(hi - lo)
        else:
            _run_pool(pool, sweep, ranges, done, progress)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    rows = [row for lo in sorted(done) for row in done[lo]]
    units_done = len(rows) // max(len(sweep.checks), 1)
    result = SweepResult(sweep, rows, units_done, interrupted, time.perf_counter() - began,
                         tasks, size if tasks else 0)
    result.summary = summarise(result)
    return result


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _warm() -> None:
    """A task that does nothing: submitting it makes the pool start a worker now."""


class _Pool:
    """A local process pool whose workers start in the background.

    Starting a forkserver worker blocks until the server has imported the simulator
    (a few hundred ms), so a helper thread starts them while this process works.
    """

    def __init__(self, workers: int) -> None:
        import multiprocessing  # noqa: PLC0415

        # forkserver: workers start from a clean server process, never from a parent
        # that runs a progress-bar thread.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["sim.sweep"])
        self.executor = ProcessPoolExecutor(
            workers, mp_context=context, initializer=_ignore_sigint
        )
        self.workers = workers
        self.warming: list[Future[None]] = []
        self.failure: BaseException | None = None
        self._starter = threading.Thread(target=self._start, name="sweep-pool-start")
        self._starter.start()

    def _start(self) -> None:
        try:
            for _ in range(self.workers):
                self.warming.append(self.executor.submit(_warm))
        except BaseException as error:  # reported by started(), in the calling thread
            self.failure = error

    def ready(self) -> bool:
        """True once every worker has started and run its warm-up task."""
        return not self._starter.is_alive() and all(w.done() for w in self.warming)

    def started(self) -> None:
        """Wait until the workers were asked to start; raise if that failed."""
        self._starter.join()
        if self.failure is not None:
            raise self.failure

    def shutdown(self, wait: bool, cancel_futures: bool) -> None:
        """Stop the workers (see ``ProcessPoolExecutor.shutdown``)."""
        self._starter.join()
        self.executor.shutdown(wait=wait, cancel_futures=cancel_futures)


def _start_pool(workers: int) -> _Pool:
    return _Pool(workers)


def _run_pool(
    pool: _Pool, sweep: Sweep, ranges: list[tuple[int, int]],
    done: dict[int, list[Row]], progress: Progress | None,
) -> None:
    remaining = list(ranges)
    # Until the workers are up, this process takes tasks from the far end itself.
    while remaining and not pool.ready():
        lo, hi = remaining.pop()
        done[lo] = run_units(sweep, lo, hi)[1]
        if progress:
            progress(hi - lo)
    pool.started()
    pending: set[Future[tuple[int, list[Row]]]] = set()
    try:
        for lo, hi in remaining:
            pending.add(pool.executor.submit(run_units, sweep, lo, hi))
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                lo, rows = future.result()
                done[lo] = rows
                if progress:
                    progress(len(rows) // max(len(sweep.checks), 1))
    except KeyboardInterrupt:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        # Tasks already running when Ctrl-C came have finished now: keep them too.
        for future in pending:
            if future.done() and not future.cancelled() and future.exception() is None:
                lo, rows = future.result()
                done[lo] = rows
        raise


def _run_dask(
    sweep: Sweep, ranges: list[tuple[int, int]], address: str, done: dict[int, list[Row]],
    progress: Progress | None,
) -> None:
    try:
        from distributed import Client, as_completed  # noqa: PLC0415
    except ImportError:
        raise BadInput(
            "--dask: Dask distributed is not installed (pip install "
            "'platform-simulator-testbed[dask]')"
        ) from None
    try:
        client = Client(address, timeout="10s")
    except Exception as error:
        raise BadInput(f"--dask {address}: cannot reach the scheduler ({error})") from None
    futures = []
    try:
        remote = client.scatter(sweep, broadcast=True)
        futures = [client.submit(run_units, remote, lo, hi, pure=False) for lo, hi in ranges]
        for future in as_completed(futures):
            lo, rows = future.result()
            done[lo] = rows
            if progress:
                progress(len(rows) // max(len(sweep.checks), 1))
    except KeyboardInterrupt:
        client.cancel([f for f in futures if not f.done()])
        for future in futures:
            if future.status == "finished":
                lo, rows = future.result()
                done[lo] = rows
        raise
    finally:
        client.close()


# --- summary ---------------------------------------------------------------------------


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


def columns(sweep: Sweep) -> list[str]:
    """Row columns in file order."""
    return ["point", "seed", *sweep.keys, *RESULT_COLUMNS]


def unit_rows(units: Sequence[int], sweep: Sweep) -> list[Row]:
    """Rows of some units computed here (for tests and notebooks)."""
    return list(itertools.chain.from_iterable(_rows_of_unit(sweep, u) for u in units))


# --- files -----------------------------------------------------------------------------


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def write_rows(path: Path, sweep: Sweep, rows: Sequence[Row]) -> None:
    """Write rows as CSV (``.csv``) or JSON Lines (``.jsonl``/``.ndjson``), atomically.

    The rows go to a temporary file in the same directory, which then replaces ``path``
    in one step: a reader never sees half a file, and an old file survives a failure.
    """
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise BadInput(f"--out {path}: the suffix must be .csv, .jsonl or .ndjson")
    if not path.parent.is_dir():
        raise BadInput(f"--out {path}: no such directory {path.parent}")
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
