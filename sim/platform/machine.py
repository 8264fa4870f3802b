"""A Fly-style machine: lifecycle states, boot, the app's exits, restart policy, event list."""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal

import simpy

from checks import Event, MachineSnapshot
from sim.platform.behavior import Behavior
from sim.platform.eventlog import EventLog, Record
from sim.publish.clock import Clock

RestartPolicy = Literal["no", "always", "on-failure"]
#: A change for a deferred site: (time, +1 became started / -1 no longer started, None),
#: shaped like the site's own live changes (time, 0, live flag) so both sort as one list.
Flip = tuple[float, int, bool | None]


@dataclass(frozen=True, slots=True)
class Image:
    """A release's image reference and the behaviour of the app it runs."""

    ref: str
    behavior: Behavior


@dataclass(frozen=True, slots=True)
class PlatformRules:
    """The platform settings every machine follows."""

    event_log_cap: int = 5
    restart_policy: RestartPolicy = "on-failure"
    max_retries: int = 10
    restart_delay_s: float = 1.0
    boot_s: float = 1.0
    jitter: float = 0.05
    epoch_ms: int = 0
    restart_counter: bool = False


class Machine:
    """One machine of the app, driven by a SimPy process per image it runs."""

    # Slots: a world builds a Machine per machine per run, and the hot loop reads these.
    __slots__ = (
        "_life", "_next_at", "_process", "_t", "all_events", "crashes", "env", "flips",
        "history", "id", "image", "lazy", "log", "on_state", "restarts_total", "rng", "rules",
        "state",
    )

    def __init__(
        self,
        env: Clock,
        machine_id: str,
        rules: PlatformRules,
        rng: random.Random,
        *,
        on_state: Callable[[Machine], None] | None = None,
        trace: bool = False,
        lazy: bool = False,
        flips: list[Flip] | None = None,
    ) -> None:
        self.env = env
        self.id = machine_id
        self.rules = rules
        self.rng = rng
        self.on_state = on_state
        self.state = "created"
        self.image: Image | None = None
        self.log = EventLog(rules.event_log_cap)
        #: Every crash ever, uncapped: what the reconciler and the ground truth see.
        self.crashes: list[tuple[float, str]] = []
        #: The platform's monotonic restart counter (exposed only if the rules say so).
        self.restarts_total = 0
        self._process: simpy.Process | None = None
        #: Lazy (see ``advance``): no process; the life is played forward when observed.
        self.lazy = lazy
        self._life: Generator[float | None, None, None] | None = None
        self._next_at: float | None = None
        #: The time of the change being made (the lazy clock; SimPy's now when eager).
        self._t = 0.0
        #: Where a lazy machine reports becoming started (+1) or no longer started (-1),
        #: at its own time, for a site that builds its timeline afterwards.
        self.flips = flips
        #: With ``trace``: every (time, state) change and every event, uncapped, for plots.
        self.history: list[tuple[float, str]] | None = [] if trace else None
        self.all_events: list[Event] | None = [] if trace else None

    def now_ms(self) -> int:
        """The platform clock in integer milliseconds."""
        return self.rules.epoch_ms + round(self.env.now * 1000)

    def snapshot(self) -> MachineSnapshot:
        """What an API read of this machine returns now."""
        return self.snapshot_at(self.env.now, self.now_ms())

    def snapshot_at(self, now: float, at_ms: int) -> MachineSnapshot:
        """``snapshot`` with the clock read once by the caller for a whole look."""
        if self.lazy:
            self.advance(now)
        image = self.image
        return MachineSnapshot(
            self.id,
            self.state,
            image.ref if image is not None else "",
            self.log.newest_first(),
            at_ms,
            self.restarts_total if self.rules.restart_counter else None,
        )

    def launch(self, image: Image) -> None:
        """Create the machine with its first image and start it."""
        self._catch_up()
        self._record("launch", "created")
        self._begin(image)

    def update(self, image: Image) -> None:
        """Replace the image in place: stop what runs (a requested stop), start the new one."""
        self._halt()
        self._record("update", "replaced")
        self._begin(image)

    def sleep(self) -> None:
        """Autostop: the idle machine is stopped by the platform, not by a crash."""
        self._halt()
        self._set_state("stopped")

    def destroy(self) -> None:
        """Delete the machine, as the legacy rollback did."""
        self._halt()
        self._record("destroy", "destroyed")
        self._set_state("destroyed")

    # -- lazy machines ------------------------------------------------------------------
    # A lazy machine runs no SimPy process: its life is a plain generator of delays,
    # played forward only when someone looks (``advance``). Its own random stream makes
    # the same draws in the same order, and each change lands at the same float time
    # (previous change + delay), so it does exactly what the process would have done.
    # The one thing laziness cannot know is SimPy's order between a change and another
    # event at the very same instant: ``advance`` raises ``Tie`` and the world is rerun
    # eagerly.

    def advance(self, t: float) -> None:
        """Play a lazy machine's changes up to time ``t`` (a change exactly at ``t``: Tie)."""
        at = self._next_at
        if at is not None and at <= t:
            life = self._life
            assert life is not None
            while at is not None and at <= t:
                if at == t:
                    raise Tie(f"machine {self.id} changes at {t!r}, the instant it is observed")
                self._t = at
                # None: the life ended (gave up) or stays up until interrupted.
                delay = next(life, None)
                at = None if delay is None else at + delay
            self._next_at = at
            if at is None:
                self._life = None
        self._t = t

    def finish(self, end: float) -> None:
        """Play a lazy machine's changes strictly before ``end`` (the run's last instant)."""
        at = self._next_at
        life = self._life
        while at is not None and at < end:
            assert life is not None
            self._t = at
            delay = next(life, None)
            at = None if delay is None else at + delay
        self._next_at = at

    def _catch_up(self) -> None:
        if self.lazy:
            self.advance(self.env.now)

    def _step_life(self) -> None:
        assert self._life is not None
        try:
            delay = next(self._life)
        except StopIteration:
            delay = None
        if delay is None:
            # Gave up, or stays up until interrupted: no change is due.
            self._next_at = None
            self._life = None
        else:
            self._next_at = self._t + delay

    def _halt(self) -> None:
        if self.lazy:
            self.advance(self.env.now)
            self._life = None
            self._next_at = None
        elif self._process is not None and self._process.is_alive:
            self._process.interrupt()
        if self.state in ("starting", "started"):
            self._record("exit", "stopped", exit_code=0, requested_stop=True)
        self._process = None

    def _begin(self, image: Image) -> None:
        self.image = image
        # The state changes now, not when the process first runs, so a look taken in the
        # same instant never reads the old image's "started".
        self._set_state("starting")
        if self.lazy:
            self._t = self.env.now
            self._life = self._lifetime(image)
            self._step_life()
        else:
            assert isinstance(self.env, simpy.Environment), "an eager machine runs in SimPy"
            self._process = self.env.process(self._run(image))

    def _set_state(self, state: str) -> None:
        if self.flips is not None and (self.state == "started") != (state == "started"):
            self.flips.append((self._t, 1 if state == "started" else -1, None))
        self.state = state
        if self.history is not None:
            self.history.append((self.env.now, state))
        if self.on_state is not None:
            self.on_state(self)

    def _record(self, kind: str, status: str, **exit_fields: Any) -> None:
        event = Event(kind, status, self.now_ms(), **exit_fields)
        self.log.append(event)
        if self.all_events is not None:
            self.all_events.append(event)

    def _jittered(self, seconds: float) -> float:
        jitter = self.rules.jitter
        return seconds * (1.0 + self.rng.uniform(-jitter, jitter)) if jitter else seconds

    def _run(self, image: Image) -> Generator[simpy.Event, Any, None]:
        """The SimPy process of an eager machine: the life's delays as timeouts."""
        env = self.env
        assert isinstance(env, simpy.Environment)
        life = self._lifetime(image)
        try:
            self._t = env.now
            for delay in life:
                if delay is None:
                    # Stays up until an update, sleep or destroy interrupts it.
                    yield env.event()
                    return
                yield env.timeout(delay)
                self._t = env.now
        except simpy.Interrupt:
            return

    def _lifetime(self, image: Image) -> Generator[float | None, None, None]:  # noqa: PLR0915
        """The machine's changes on one image, at ``self._t``; yields the delay to the next.

        Yields None when the app stays up. The simulator's hot path: _set_state,
        _jittered and the event records are inlined.
        """
        rules = self.rules
        behavior = image.behavior
        ref = image.ref
        random = self.rng.random
        jitter = rules.jitter
        # rng.uniform(-jitter, jitter) is ``a + (b - a) * random()``: the same draw and
        # float operations inline, without a Python call per draw.
        low, span = -jitter, jitter - -jitter
        boot_s = behavior.boot_s(rules.boot_s)
        # A crash the same on every start (the crash loops) is jittered inline; other
        # behaviours ask ``behavior.crash`` each start.
        steady = behavior.steady_crash()
        restart_policy = rules.restart_policy
        max_retries = rules.max_retries
        restart_delay_s = rules.restart_delay_s
        history = self.history
        all_events = self.all_events
        log = self.log
        entries = log.entries()
        flips = self.flips
        crashes = self.crashes
        epoch_ms = rules.epoch_ms
        starts = 0
        restarts = 0
        while True:
            if self.state != "starting":
                self._set_state("starting")
            yield boot_s * (1.0 + (low + span * random())) if jitter else boot_s
            now = self._t
            starts += 1
            if flips is not None:
                flips.append((now, 1, None))
            self.state = "started"
            if history is not None:
                history.append((now, "started"))
            # Read each time: an observer (the oracle) may swap the hook before a run.
            if self.on_state is not None:
                self.on_state(self)
            stamp = epoch_ms + round(now * 1000)
            record: Record = ("start", "started", stamp, "flyd", None, False, False, False, 0)
            if all_events is None:
                # log.record(record), inlined: a local helper here measured ~3% slower.
                entries.append(record)
                log.appended += 1
            else:
                all_events.append(log.event(record))
                log.append(all_events[-1])
            if steady is not None:
                yield steady.after_s * (1.0 + (low + span * random()))
                exit_code, oom_killed = steady.exit_code, steady.oom_killed
            else:
                crash = behavior.crash(starts, self.rng, jitter)
                if crash is None:
                    yield None
                    return
                yield crash.after_s
                exit_code, oom_killed = crash.exit_code, crash.oom_killed
            now = self._t
            crashes.append((now, ref))
            restarting = restart_policy == "always" or (
                restart_policy == "on-failure" and restarts < max_retries
            )
            stamp = epoch_ms + round(now * 1000)
            record = (
                "exit", "stopped", stamp, "flyd", exit_code, oom_killed, False, restarting, restarts
            )
            if all_events is None:
                entries.append(record)  # log.record(record), inlined
                log.appended += 1
            else:
                all_events.append(log.event(record))
                log.append(all_events[-1])
            if flips is not None:
                flips.append((now, -1, None))
            self.state = "stopped"
            if history is not None:
                history.append((now, "stopped"))
            if self.on_state is not None:
                self.on_state(self)
            if not restarting:
                return
            restarts += 1
            self.restarts_total += 1
            yield restart_delay_s
            # stopped -> starting, as _set_state("starting") (no flip: neither is started).
            self.state = "starting"
            if history is not None:
                history.append((self.env.now, "starting"))
            if self.on_state is not None:
                self.on_state(self)


class Tie(Exception):
    """A lazy machine would change at the very instant it is observed: rerun eagerly."""

