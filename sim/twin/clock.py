"""The one engine on the wall clock: the world runs instantly to the client's start, then in step.

One thread owns the SimPy environment. HTTP threads hand it calls (``call``); its loop
advances the environment to ``t0 + speed * (wall - wall0)``, runs the calls at that
instant, runs what they scheduled now, then sleeps until the next event is due or a
call arrives. The same ``Environment`` and machines as every other run: this is an
equivalent of ``simpy.rt.RealtimeEnvironment`` that also takes calls from other threads
(SimPy's is not thread-safe) and maps simulated seconds to wall seconds at ``speed``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from platform_testbed.sim.twin.app import Answer, ServedApp, WaitStarted

__all__ = ["POLL_CAP_S", "Driver"]

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
                self._run_calls()
                while env.peek() <= env.now:  # what the calls scheduled for this instant
                    env.step()
                if env.now >= self.horizon_s:
                    self.reached_horizon = True
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


def wait_answer(result: Answer | WaitStarted, driver: Driver, timeout_s: float) -> Answer:
    """A call's answer; a held wait's once it comes (at most ``timeout_s`` platform s on)."""
    if not isinstance(result, WaitStarted):
        return result
    # The platform's timeout in wall seconds, and a margin for the loop: the world answers
    # first (408), this bound only guards against a loop that has died.
    try:
        return result.future.result(timeout=timeout_s / driver.speed + 5.0)
    except TimeoutError:
        return driver.app.timed_out(result)
