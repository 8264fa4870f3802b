"""Running a sweep: tasks of consecutive units, sized by measurement, run where asked.

Tasks run in this process, on a local process pool whose workers start in the
background, or on a Dask cluster; rows are put back in unit order.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Protocol

from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.runtime.scheduler import DASK_TIMEOUT_S, completed, connect_client, scatter
from platform_testbed.sim.runtime.signals import Readable, die_with, start_forkserver
from platform_testbed.sim.sweep.file import Sweep
from platform_testbed.sim.sweep.output import Chunk, RowFormat, StreamSink, SweepResult, Tally
from platform_testbed.sim.sweep.units import Progress, Row, check_names, each_unit, run_units

#: Where ``run_tasks`` hands each task's batch on, in unit order, as they come: a batch is
#: what the work gave (a list of rows, or a sweep's ``Chunk``), sized by ``len``.
Sink = Callable[[Any], None]

# A task should carry at least this much work, so a pool's per-task cost stays small.
TASK_TARGET_S = 0.1
# ...and at most this much, so Ctrl-C and the progress bar stay responsive.
TASK_CEILING_S = 1.0


def _size(per_unit: float, target_s: float) -> int:
    """Units per task for tasks of about ``target_s``, never past ``TASK_CEILING_S``."""
    return max(1, min(math.ceil(target_s / per_unit), math.floor(TASK_CEILING_S / per_unit)))


def _calibrate(work: Work, done: _InOrder, progress: Progress | None) -> float:
    """Run the first units here for ~30 ms; return the seconds a unit takes.

    The first unit only warms up (imports, caches) and is not timed; a task is sized
    from the median of the others, so one slow unit does not shrink every task.
    """
    began = time.perf_counter()
    costs: list[float] = []
    unit = 0
    while unit < work.units and (unit < 2 or time.perf_counter() - began < 0.03):
        start = time.perf_counter()
        done.ends[unit] = unit + 1
        done[unit] = work(unit, unit + 1)[1]
        if unit:
            costs.append(time.perf_counter() - start)
        unit += 1
        if progress:
            progress(1)
    return max(statistics.median(costs) if costs else 1.0, 1e-6)


class _InOrder:
    """Finished tasks, handed on in unit order as soon as they are contiguous.

    ``done[lo] = rows`` files a task's rows; with a ``sink``, each run of contiguous tasks
    from the first unit goes to it and is dropped here, so only tasks that finished ahead
    of an earlier one are held (about the tasks in flight).
    """

    def __init__(self, sink: Sink | None, tally: Tally | None) -> None:
        self.done: dict[int, Any] = {}
        #: Each task's first unit -> the unit after its last.
        self.ends: dict[int, int] = {}
        self.sink = sink
        self.tally = tally
        self.next = 0  # the first unit not yet handed on
        self.streamed = 0
        self.units_done = 0

    def __setitem__(self, lo: int, rows: Any) -> None:
        self.done[lo] = rows
        self.units_done += self.ends[lo] - lo
        while self.sink is not None and self.next in self.done:
            self._hand_on(self.next)

    def _hand_on(self, lo: int) -> None:
        rows = self.done.pop(lo)
        assert self.sink is not None
        # Counted before the sink runs: a sink that writes a batch whole and then lets a
        # held Ctrl-C through (``streaming_rows``) has handed these rows on.
        if self.tally is not None:
            self.tally.add(rows)
        self.streamed += len(rows)
        self.next = self.ends[lo]
        self.sink(rows)

    def finish(self) -> list[Any]:
        """Hand on (or return, with no sink) what is left, in unit order, gaps and all."""
        if self.sink is not None:
            for lo in sorted(self.done):
                self._hand_on(lo)
            return []
        rows = [row for lo in sorted(self.done) for row in self.done[lo]]
        if self.tally is not None:
            self.tally.add(rows)
        return rows

    def last(self) -> int:
        """The last unit given a task so far (-1: none)."""
        return max(self.ends.values(), default=0) - 1


class Work(Protocol):
    """Numbered units of work, split into tasks ``work(lo, hi)`` that give ``(lo, items)``,
    the items of units ``lo`` to ``hi`` in order. Pickled to each worker (or scattered to
    Dask once), so a module-level class holding only data."""

    @property
    def units(self) -> int:
        """How many units there are."""

    def __call__(self, lo: int, hi: int) -> tuple[int, Any]:
        """Run units ``lo`` to ``hi`` (exclusive): their batch (a list, or a sized batch)."""


@dataclass(frozen=True, slots=True)
class _SweepWork:
    """A sweep's units: each gives one row per check (``sim.sweep.units``); the budget
    travels with the work (pickled to a pool's or a cluster's worker).

    With a ``format``, a task gives one ``Chunk``: its rows as the file's text and their
    tally, made where the task ran, so the parent's cost per row is a write and an add.
    """

    sweep: Sweep
    budget: CheckBudget
    format: RowFormat | None = None
    names: tuple[str, ...] = ()
    keep: bool = False

    @property
    def units(self) -> int:
        return self.sweep.units

    def __call__(self, lo: int, hi: int) -> tuple[int, Any]:
        if self.format is None:
            return run_units(self.sweep, lo, hi, self.budget)
        tally = Tally(self.names)
        text: list[str] = []
        kept: list[Row] | None = [] if self.keep else None
        count = 0
        # World by world: a world's rows become text (which the collector does not track)
        # at once. Rows held as dicts for the whole task were most of what survived into
        # the collector's oldest generation, and so what made its full passes come often
        # (a sixth of a world's time in them, measured on million_worlds).
        for rows in each_unit(self.sweep, lo, hi, self.budget):
            tally.add(rows)
            text.append(self.format.encode(rows))
            count += len(rows)
            if kept is not None:
                kept.extend(rows)
        # A Chunk is a batch of ``len(chunk)`` rows: ``_InOrder`` counts it as such.
        return lo, Chunk("".join(text), count, tally, kept)


@dataclass(slots=True)
class Ran:
    """What ``run_tasks`` did: the items kept (none with a sink), and how far it got."""

    items: list[Any]
    units_done: int
    interrupted: bool
    tasks: int
    per_task: int
    streamed: int


def run_tasks(
    work: Work,
    workers: int | None = None,
    dask: str | None = None,
    progress: Progress | None = None,
    per_task: int | None = None,
    *,
    sink: Sink | None = None,
    tally: Tally | None = None,
    task_s: float = TASK_TARGET_S,
) -> Ran:
    """Run every unit of ``work``; items in unit order whoever ran them. Ctrl-C keeps the
    finished tasks' items (``Ran.interrupted``).

    ``workers`` local processes (default: one per core; 1 runs here, no pool), or the
    Dask scheduler at ``dask``. ``per_task`` fixes the batch size (default: measured so
    a task is about ``task_s`` of work). With ``sink``, items go to it in unit order
    as they come and none is kept (memory flat in the number of units).

    A pool's per-task cost here (a submit, a wait, the result's pipe and its thread's
    wake-ups: about 0.8 ms of this process's CPU a task, measured on 2 loaded cores) is why
    a work whose batches are small whatever their length (a ``compare`` summary's tallies)
    asks for longer tasks. Whatever ``task_s``, the tasks this process runs itself while the
    workers start stay about ``TASK_TARGET_S`` (the workers' first tasks are handed out only
    when it is free), and the pool's last tasks shrink to that size too, so the workers end
    together rather than one waiting on the other's long last task.
    """
    done = _InOrder(sink, tally)
    interrupted = False
    size = 0
    workers = workers or _cores()
    # Local workers boot (import the simulator) while this process measures the work.
    pool = _start_pool(workers) if dask is None and workers > 1 and work.units > 1 else None
    tasks = _Tasks(done, work.units, 0)
    try:
        if per_task:
            size = per_task
            tasks = _Tasks(done, work.units, size)
        else:
            per_unit = _calibrate(work, done, progress)
            size = _size(per_unit, task_s)
            tasks = _Tasks(done, work.units, size, task_s, short=_size(per_unit, TASK_TARGET_S),
                           workers=workers if pool is not None else 0)
        if dask is not None:
            _run_dask(work, tasks.all(), dask, done, progress)
        elif pool is None:
            while (task := tasks.front()) is not None:
                lo, hi = task
                done[lo] = work(lo, hi)[1]
                if progress:
                    progress(hi - lo)
        else:
            _run_pool(pool, work, tasks, done, progress)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    items = done.finish()
    count = tasks.made + tasks.start
    return Ran(items, done.units_done, interrupted, count, size if count else 0, done.streamed)


class _Tasks:
    """The units not yet given a task, cut into tasks as they are asked for.

    The pool takes tasks from the front (in unit order, so rows stream as they come);
    this process, while the workers start, from the back. Cut lazily, so a task's size
    can follow what the tasks actually cost (``took``): a calibration on a machine busy
    starting the pool, or on the sweep's first and cheapest (or dearest) corner, does not
    fix the size of every task. The units, their order and so every row stay the same.

    With a ``target_s`` (sizes adapt to it), ``size`` is the front's tasks' size and
    ``short`` (units for ``TASK_TARGET_S``) the back's; with ``workers``, a front task is
    also at most a ``2 * workers``-th of what is left, and at least ``short``, so the
    pool's last tasks are short ones. Without, every task is ``size`` units.
    """

    def __init__(self, done: _InOrder, units: int, size: int, target_s: float | None = None,
                 *, short: int | None = None, workers: int = 0) -> None:
        self.done = done
        self.start = done.last() + 1  # units already run (calibration)
        self.lo = self.start
        self.hi = units
        self.size = size
        self.short = size if short is None else short
        self.target_s = target_s
        self.workers = workers
        self.made = 0
        self._units = 0
        self._seconds = 0.0

    def _cut(self, lo: int, hi: int) -> tuple[int, int]:
        self.done.ends[lo] = hi
        self.made += 1
        return lo, hi

    def front(self) -> tuple[int, int] | None:
        """The next task from the front, or None when every unit has one."""
        if self.lo >= self.hi:
            return None
        size = self.size
        if self.workers:  # the tail: both workers' last tasks end about together
            size = min(size, max(self.short, math.ceil((self.hi - self.lo) / (2 * self.workers))))
        lo, self.lo = self.lo, min(self.lo + size, self.hi)
        return self._cut(lo, self.lo)

    def back(self) -> tuple[int, int] | None:
        """The last units' task, or None when every unit has one."""
        if self.lo >= self.hi:
            return None
        hi, self.hi = self.hi, max(self.hi - self.short, self.lo)
        return self._cut(self.hi, hi)

    def all(self) -> list[tuple[int, int]]:
        """Every remaining task at once (Dask schedules them itself)."""
        ranges = []
        while (task := self.front()) is not None:
            ranges.append(task)
        return ranges

    def took(self, units: int, seconds: float) -> None:
        """A worker's ``units`` took ``seconds`` of its time: size later tasks to the mean."""
        if self.target_s is None or seconds <= 0:
            return
        self._units += units
        self._seconds += seconds
        per_unit = self._seconds / self._units
        self.size = _size(per_unit, self.target_s)
        self.short = _size(per_unit, TASK_TARGET_S)


def run_sweep(
    sweep: Sweep,
    workers: int | None = None,
    dask: str | None = None,
    progress: Progress | None = None,
    per_task: int | None = None,
    *,
    sink: Sink | StreamSink | None = None,
    budget: CheckBudget = DEFAULT_CHECK_BUDGET,
    keep: Sink | None = None,
) -> SweepResult:
    """Run every unit; rows in unit order. Ctrl-C keeps the finished tasks' rows.

    As ``run_tasks``; with ``sink``, rows go to it in unit order as they come and the
    result keeps none (memory flat in the number of worlds). ``budget`` goes with every task.
    A ``StreamSink`` (``streaming_rows``) is handed text: each task's rows are formatted and
    tallied where the task ran, and ``keep``, if given, sees the rows too, in order.

    Signals: Ctrl-C ends the run here, keeps the finished rows (``interrupted``), and the
    stream's file is written with them. SIGTERM (and SIGHUP) is not caught: it ends the
    command, the stream is abandoned, the previous file stays and nothing is left beside
    it (tests/test_signals_pool.py holds that). Deliberately no ``rows.partial.csv``: a
    SIGTERM is how a supervisor (a CI timeout, systemd, Kubernetes) stops a job, and a
    stop that leaves a new file beside the old one breaks "whole or not at all" for
    whoever globs the folder; whoever wants the finished rows sends SIGINT instead.
    """
    began = time.perf_counter()
    names = check_names(sweep)
    tally = Tally(names)
    if isinstance(sink, StreamSink):
        stream = sink

        def written(chunk: Chunk) -> None:
            # Counted before the write, as ``_InOrder`` counts rows (see ``_hand_on``).
            tally.merge(chunk.tally)
            stream.write(chunk.text)
            if keep is not None and chunk.rows is not None:
                keep(chunk.rows)

        work = _SweepWork(sweep, budget, sink.format, names, keep is not None)
        ran = run_tasks(work, workers, dask, progress, per_task, sink=written)
    else:
        def handed(rows: list[Any]) -> None:
            assert sink is not None
            sink(rows)
            if keep is not None:
                keep(rows)

        ran = run_tasks(_SweepWork(sweep, budget), workers, dask, progress, per_task,
                        sink=None if sink is None else handed, tally=tally)
    result = SweepResult(sweep, ran.items, ran.units_done, ran.interrupted,
                         time.perf_counter() - began, ran.tasks, ran.per_task,
                         rows_streamed=ran.streamed)
    result.summary = tally.summary(result)
    return result


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _start_worker(parent: Readable) -> None:
    """A worker's first step: ignore Ctrl-C, and end when the parent is gone."""
    # Ctrl-C goes to the whole process group; the parent decides what stops, so workers
    # finish the task in hand instead of dying mid-row.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with(parent)


def _warm() -> None:
    """A task that does nothing: submitting it makes the pool start a worker now."""


class _Pool:
    """A local process pool whose workers start in the background.

    Starting a forkserver worker blocks until the server has imported the simulator
    (a few hundred ms), so a helper thread starts them while this process works.
    """

    def __init__(self, workers: int) -> None:
        # forkserver: workers start from a clean server process, never from a parent
        # that runs a progress-bar thread.
        context = multiprocessing.get_context("forkserver")
        # The server imports what a task needs (this module imports it all) once, for all workers.
        context.set_forkserver_preload([__name__])
        start_forkserver()  # with SIGINT ignored: no KeyboardInterrupt traceback from it
        # Only this process holds the write end (a forkserver child inherits no descriptor
        # it is not handed): each worker watches the read end and ends with this process,
        # however it ends. The forkserver and the resource tracker end once the workers
        # have, as they are waiting for the workers' copies of their own pipes to close.
        self._alive_r, self._alive_w = context.Pipe(duplex=False)
        self.executor = ProcessPoolExecutor(
            workers, mp_context=context, initializer=_start_worker, initargs=(self._alive_r,)
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
        if wait:  # the workers are gone: nothing watches the pipe any more
            self._alive_w.close()
            self._alive_r.close()


def _start_pool(workers: int) -> _Pool:
    return _Pool(workers)


#: Tasks in flight per worker: one running, one queued behind it, so a worker never waits
#: for the next; more would only hold results that finished ahead of an earlier task.
IN_FLIGHT_PER_WORKER = 2


def _timed(work: Work, lo: int, hi: int) -> tuple[int, Any, float]:
    """A pool task: the work's result, and the process time it took (sizes later tasks)."""
    began = time.process_time()
    lo, items = work(lo, hi)
    return lo, items, time.process_time() - began


def _run_pool(
    pool: _Pool, work: Work, tasks: _Tasks, done: _InOrder, progress: Progress | None,
) -> None:
    # Until the workers are up, this process takes tasks from the far end itself.
    while not pool.ready() and (task := tasks.back()) is not None:
        lo, hi = task
        done[lo] = work(lo, hi)[1]
        if progress:
            progress(hi - lo)
    pool.started()
    # A few tasks in flight, not all of them: ``wait`` costs a lock per pending future,
    # so thousands pending made this process's cost grow with the square of the tasks.
    pending: set[Future[tuple[int, Any, float]]] = set()
    try:
        while True:
            while len(pending) < IN_FLIGHT_PER_WORKER * pool.workers and (
                    task := tasks.front()) is not None:
                pending.add(pool.executor.submit(_timed, work, *task))
            if not pending:
                break
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                lo, items, seconds = future.result()
                tasks.took(done.ends[lo] - lo, seconds)
                done[lo] = items
                if progress:
                    progress(done.ends[lo] - lo)
    except KeyboardInterrupt:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        # Tasks already running when Ctrl-C came have finished now: keep them too.
        for future in pending:
            if future.done() and not future.cancelled() and future.exception() is None:
                lo, items, _ = future.result()
                done[lo] = items
        raise


def _call(work: Work, lo: int, hi: int) -> tuple[int, list[Any]]:
    """A Dask task: ``work`` arrives scattered, once per worker, not once per task."""
    return work(lo, hi)


def _run_dask(
    work: Work, ranges: list[tuple[int, int]], address: str, done: _InOrder,
    progress: Progress | None,
) -> None:
    # Started and heard from within bounds: a scheduler gone silent ends the sweep in one line.
    client = connect_client(address)
    futures = []
    try:
        remote = scatter(client, work, address)
        futures = [client.submit(_call, remote, lo, hi, pure=False) for lo, hi in ranges]
        for future in completed(client, futures, address):
            lo, rows = future.result()
            done[lo] = rows
            if progress:
                progress(done.ends[lo] - lo)
    except KeyboardInterrupt:
        client.cancel([f for f in futures if not f.done()])
        for future in futures:
            if future.status == "finished":
                lo, rows = future.result()
                done[lo] = rows
        raise
    finally:
        client.close(timeout=DASK_TIMEOUT_S)

