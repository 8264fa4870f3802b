"""The one engine on the wall clock: the world runs instantly to the client's start, then in step.

One thread owns the SimPy environment. HTTP threads hand it calls (``call``); its loop
advances the environment to ``t0 + speed * (wall - wall0)``, runs the calls at that
instant, runs what they scheduled now, then sleeps until the next event is due or a
call arrives. The same ``Environment`` and machines as every other run: this is an
equivalent of ``simpy.rt.RealtimeEnvironment`` that also takes calls from other threads
(SimPy's is not thread-safe) and maps simulated seconds to wall seconds at ``speed``.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from platform_testbed.sim.twin.app import ServedApp
from platform_testbed.sim.vtime import PortProbe, ProcessTree, Sample, SharedClock, sample_threads

__all__ = ["POLL_CAP_S", "Driver", "Traffic", "VirtualDriver"]

T = TypeVar("T")
#: The longest the loop sleeps without re-reading the clock (a test's clock may jump).
POLL_CAP_S = 0.05


class Driver:
    """Steps ``app``'s environment on ``clock`` (seconds), ``speed`` simulated s per wall s."""

    def __init__(
        self,
        app: ServedApp,
        *,
        speed: float = 1.0,
        horizon_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall0: float | None = None,
    ) -> None:
        self.app = app
        self.speed = speed
        self.horizon_s = app.scenario.horizon_s if horizon_s is None else horizon_s
        self.clock = clock
        self.t0 = min(app.start_s, self.horizon_s)
        env = app.env
        if self.t0 > env.now:
            env.run(until=self.t0)  # instantly: nobody is watching yet
        #: Read before the instant part ran (``open_twin``), so platform ms track the wall.
        self.wall0 = clock() if wall0 is None else wall0
        self._calls: queue.Queue[tuple[Callable[[], Any], Future[Any]]] = queue.Queue()
        self._stop = threading.Event()
        #: A call the loop's sleep took from the queue: the next to run.
        self._early: tuple[Callable[[], Any], Future[Any]] | None = None
        #: Orders ``submit`` against the loop's end, so no call is left unanswered.
        self._closing = threading.Lock()
        #: Set when the loop has ended: the horizon came, or ``stop`` was called.
        self.ended = threading.Event()
        self.reached_horizon = False
        self._thread = threading.Thread(target=self._loop, name="twin-driver", daemon=True)

    #: The clock's name in rows and reports.
    clock_name = "scaled"

    def start(self) -> None:
        """Start stepping the world on the clock."""
        self._thread.start()

    def sim_now(self) -> float:
        """The simulated time the wall clock maps to now (never past the horizon)."""
        return min(self.t0 + self.speed * (self.clock() - self.wall0), self.horizon_s)

    def platform_ms(self) -> int:
        """The platform clock now, readable from any thread (no access to the world)."""
        return self.app.scenario.platform.epoch_ms + round(self.sim_now() * 1000)

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Run ``fn`` on the world's thread at the current instant; its result comes in the future."""
        future: Future[T] = Future()
        with self._closing:
            if self.ended.is_set():
                future.set_exception(RuntimeError("the world has ended"))
            else:
                self._calls.put((fn, future))
        return future

    def call(self, fn: Callable[[], T], timeout_s: float = 30.0) -> T:
        """``submit`` and wait for the result (re-raising what ``fn`` raised)."""
        return self.submit(fn).result(timeout=timeout_s)

    def stop(self) -> None:
        """End the loop (answering held waits) and wait for its thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def finish(self) -> None:
        """After ``stop``: the rest of the horizon runs instantly, as nobody watches any more."""
        env = self.app.env
        if self.horizon_s > env.now:
            env.run(until=self.horizon_s)

    def wall_bound(self, platform_s: float) -> float:
        """The most wall seconds a held wait of ``platform_s`` may take."""
        return platform_s / self.speed + 5.0

    def _this_instant(self) -> bool:
        """Run the calls and what they scheduled for this instant; True at the horizon."""
        env = self.app.env
        self._run_calls()
        while env.peek() <= env.now:
            env.step()
        if env.now >= self.horizon_s:
            self.reached_horizon = True
            return True
        return False

    def _run_calls(self) -> None:
        while True:
            if self._early is not None:
                (fn, future), self._early = self._early, None
            else:
                try:
                    fn, future = self._calls.get_nowait()
                except queue.Empty:
                    return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as error:
                future.set_exception(error)

    def _loop(self) -> None:
        env = self.app.env
        try:
            while not self._stop.is_set():
                target = self.sim_now()
                if target > env.now:
                    env.run(until=target)
                if self._this_instant():
                    return
                due = (min(env.peek(), self.horizon_s) - self.sim_now()) / self.speed
                try:
                    # Run at the instant the loop reads next, first in line.
                    self._early = self._calls.get(timeout=min(max(due, 0.0), POLL_CAP_S))
                except queue.Empty:
                    continue
        finally:
            with self._closing:
                self.ended.set()
                self._close()

    def _close(self) -> None:
        """Answer every held wait (408: the state was not reached) and refuse queued calls."""
        for pending in self.app.waits:
            if not pending.future.done():
                pending.future.set_result(self.app.timed_out(pending))
        left = [] if self._early is None else [self._early]
        while True:
            try:
                left.append(self._calls.get_nowait())
            except queue.Empty:
                break
        for _fn, future in left:
            if future.set_running_or_notify_cancel():
                future.set_exception(RuntimeError("the world has ended"))


class Traffic:
    """The twin's requests as the virtual clock sees them: it moves only when none is in flight.

    Read from outside the server, whatever it is: its threads (``threads``, native ids; the
    asyncio loop of ``sim.twin.server``) must be asleep and off the CPU like the step's
    tasks, and the kernel must hold no connection in the listen queue and no unread byte
    for the twin's port (``PortProbe``). A held wait is then a coroutine that costs the loop
    nothing, and a request between the kernel and the answer keeps the loop on the CPU.
    """

    def __init__(self) -> None:
        self.probe: PortProbe | None = None
        #: The server's own threads, sampled with the step's tasks.
        self.threads: tuple[int, ...] = ()

    def idle(self) -> bool:
        """No request waits in the kernel for the server."""
        return self.probe is None or self.probe.quiet()


#: The real wait between the two samples of the step's tasks (wall s): a task that ran in
#: between shows a new time on the CPU.
SAMPLE_GAP_S = 0.001
#: How long the step must stay still with nothing to wait for (no timed wait, no held
#: wait) before the world runs on to its horizon: a wait the library cannot see (a static
#: binary's sleep, a timer descriptor) gets this much wall time to end on its own.
STUCK_S = 0.25


class VirtualDriver(Driver):
    """Steps ``app``'s world on a virtual clock: it stands still while the step computes.

    The step's processes read ``shared``'s clock (``sim.vtime``). The loop answers calls at
    the current instant; when the step is still (``_still``: no request in flight, and every
    task of the tree and of the server asleep and off the CPU across two samples, none of
    them in a timed wait whose deadline has come), it runs the world to the earliest
    deadline, stopping at the first instant that answers a held wait, and moves the shared
    clock there. Nothing moves before ``attach`` names the step's root process, nor after
    the root has exited.
    """

    clock_name = "virtual"

    def __init__(self, app: ServedApp, shared: SharedClock, traffic: Traffic, *,
                 horizon_s: float | None = None) -> None:
        super().__init__(app, speed=math.inf, horizon_s=horizon_s, clock=time.monotonic)
        self.shared = shared
        self.traffic = traffic
        self.tree: ProcessTree | None = None
        self._now_ns = round(app.env.now * 1e9)
        self._stuck_since: float | None = None
        shared.move_to(self._now_ns)

    def attach(self, root_pid: int) -> None:
        """The step's root process: its tree's waits move the clock from now on."""
        self.tree = ProcessTree(root_pid)

    def sim_now(self) -> float:
        """The virtual clock (simulated seconds)."""
        return min(self._now_ns / 1e9, self.horizon_s)

    def platform_ms(self) -> int:
        """The platform clock now: the one the step's processes read."""
        return self.app.scenario.platform.epoch_ms + round(self._now_ns / 1e6)

    def wall_bound(self, platform_s: float) -> float:
        """A day: the world answers a held wait at its deadline, or at the loop's end; wall
        time says nothing of when that is (the step may compute for long with a wait held)."""
        return _WAIT_WALL_S

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                if self._this_instant():
                    return
                target = self._still()
                if target is not None:
                    self._advance(target)
        finally:
            with self._closing:
                self.ended.set()
                self._close()

    def _pause(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for a call; True if one came (it runs next)."""
        try:
            self._early = self._calls.get(timeout=seconds)
        except queue.Empty:
            return False
        return True

    def _held(self) -> int:
        return sum(1 for w in self.app.waits if not w.future.done())

    def _still(self) -> int | None:
        """The earliest deadline (ns) if the step is still, else None (after a short pause)."""
        tree = self.tree
        if tree is None or tree.root_ended():
            self._pause(POLL_CAP_S / 10)
            return None
        shared = self.shared
        gen, waits = shared.generation, shared.waits()
        first = tree.sample() | sample_threads(self.traffic.threads)
        if self._pause(SAMPLE_GAP_S) or any(state in "RD" for state, _ran in first.values()):
            return None  # a call came, or a task computes: no need to read the rest
        held = self._held()
        if not self.traffic.idle():
            return None
        second = tree.sample() | sample_threads(self.traffic.threads)
        if shared.generation != gen or shared.waits() != waits:
            return None
        deadline = _quiet(first, second, waits, self._now_ns)
        if deadline is None:
            if any(d <= self._now_ns for _t, _s, d in waits):
                shared.wake_due()  # a wake that did not land (the wait's safety net is slower)
            self._stuck_since = None
            return None
        if deadline == _NEVER and held == 0:
            # Nothing the step waits for ends on the virtual clock: give what else it
            # waits for (on the wall clock) a moment before the world runs on.
            wall = time.monotonic()
            if self._stuck_since is None:
                self._stuck_since = wall
            if wall - self._stuck_since < STUCK_S:
                return None
        self._stuck_since = None
        return deadline

    def _advance(self, deadline_ns: int) -> None:
        """Run the world to ``deadline_ns`` (or the horizon), stopping where a held wait is answered."""
        env = self.app.env
        horizon_ns = round(self.horizon_s * 1e9)
        target_ns = min(deadline_ns, horizon_ns)
        target_s = target_ns / 1e9
        pending = [w for w in self.app.waits if not w.future.done()]
        answered = False
        while env.peek() <= target_s:
            instant = env.peek()
            # The clock first: an event of this instant may answer a held wait, and the
            # client that gets the answer reads this instant, not the one before.
            self._now_ns = max(self._now_ns, round(instant * 1e9))
            self.shared.set_now(self._now_ns)
            while env.peek() <= instant:
                env.step()
            if any(w.future.done() for w in pending):
                answered = True
                break
        if answered:
            now_ns = max(self._now_ns, round(env.now * 1e9))
        else:
            if target_s > env.now:
                env.run(until=target_s)
            now_ns = max(self._now_ns, target_ns)
        self._now_ns = now_ns
        self.shared.move_to(now_ns)


_NEVER = 1 << 62
_WAIT_WALL_S = 86_400.0


def _quiet(first: Sample, second: Sample, waits: tuple[tuple[int, int, int], ...], now_ns: int) -> int | None:
    """The earliest deadline ahead if every task waits in both samples, else None.

    Every task must be off the CPU (not ``R``, not ``D``) in both samples with the same
    time on the CPU: a thread in a registered wait sleeps in the kernel until the twin
    wakes it (``sim.vtime``), so one on the CPU was woken by a descriptor or a signal.
    A registered deadline already reached means its task is about to run. The same tasks
    must be in both samples.
    """
    if first.keys() != second.keys():
        return None
    deadlines: dict[int, int] = {}
    for tid, _seq, deadline in waits:
        if tid in second:
            if deadline <= now_ns:
                return None
            deadlines[tid] = min(deadline, deadlines.get(tid, _NEVER))
    for tid, (state, ran) in second.items():
        was_state, was_ran = first[tid]
        if state in "RD" or was_state in "RD" or ran != was_ran:
            return None
    return min(deadlines.values(), default=_NEVER)
