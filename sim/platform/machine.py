"""A Fly-style machine: one SimPy process per image it runs, writing its profile's events.

A machine's life, in one place: it boots, reads ``started``, runs until its app exits
(``sim.platform.behavior``), and the restart policy (``sim.platform.restarting``) decides
whether flyd boots it again. Every change writes the events its profile (``sim.config.profiles``)
declares for it into the capped event list.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import simpy

from platform_testbed.checks import Event, MachineSnapshot
from platform_testbed.sim.config.profiles import PROFILES, Spec
from platform_testbed.sim.config.scenario import AppTable, PlatformTable
from platform_testbed.sim.platform import behavior
from platform_testbed.sim.platform.eventlog import EventLog, Record
from platform_testbed.sim.platform.restarting import recent_restarts, restarts
from platform_testbed.sim.platform.serving import Serving


@dataclass(frozen=True, slots=True)
class Image:
    """A release's image reference and the app it runs."""

    ref: str
    app: AppTable


_NEVER = float("inf")
_snapshot = tuple.__new__


class Machine:
    """One machine of the app; ``on_state`` is told of every state change, ``serving`` of starts."""

    # Slots: a world builds a Machine per machine per run, and its life reads these.
    __slots__ = (
        "_boot", "_next_change", "_parked", "_process", "_restart_at", "_spare_draw", "_state",
        "all_events", "crash_images", "crash_times", "env", "history", "id", "image", "log",
        "on_state", "platform", "profile", "quiet_restarts", "restarts_total", "rng", "serving",
    )

    def __init__(
        self,
        env: simpy.Environment,
        machine_id: str,
        platform: PlatformTable,
        rng: random.Random,
        *,
        on_state: Callable[[Machine], None] | None = None,
        serving: Serving | None = None,
        trace: bool = False,
        quiet_restarts: bool = False,
    ) -> None:
        self.env = env
        self.id = machine_id
        self.platform = platform
        self.profile = PROFILES[platform.events]
        self.rng = rng
        self.on_state = on_state
        #: The app's count of started machines, kept current as this one enters and
        #: leaves started (fly-proxy's view; the site's).
        self.serving = serving
        #: May a restart that writes no event be left untold (see ``_life``)? Only if
        #: ``on_state`` does not need to hear of a restart's stopped -> starting.
        self.quiet_restarts = quiet_restarts and not trace
        self._state = "created"
        #: When a quiet restart turns stopped into starting (infinity: none pending).
        self._restart_at = _NEVER
        self.image: Image | None = None
        self.log = EventLog(platform.event_log_cap)
        #: Every crash ever, uncapped: its time and the image ref that crashed; what the
        #: reconciler and the ground truth see. Two lists, not one of tuples: floats and
        #: shared strings are nothing the cyclic collector walks, where a tuple per crash
        #: is (190,000 in the 1,000-machine benchmark; measured: the collection after
        #: such a run 0.2 s -> ~0 s).
        self.crash_times: list[float] = []
        self.crash_images: list[str] = []
        #: The platform's monotonic restart counter (exposed only if the rules say so).
        self.restarts_total = 0
        self._process: simpy.Process | None = None
        #: The life waits on an event nobody will trigger (the app stays up).
        self._parked = False
        #: The boot of a life that stays up, run without a process (``launch(at_once)``).
        self._boot: simpy.Timeout | None = None
        #: A boot's jitter draw that no boot used (see ``_life``): the next boot takes it.
        self._spare_draw: float | None = None
        #: With ``trace``: every (time, state) change and every event, uncapped, for plots.
        self.history: list[tuple[float, str]] | None = [] if trace else None
        self.all_events: list[Event] | None = [] if trace else None
        #: The event ``next_change`` handed out, succeeded at the next state change.
        self._next_change: simpy.Event | None = None

    @property
    def state(self) -> str:
        """The machine's state now (after a quiet restart's instant: starting)."""
        if self._restart_at <= self.env.now:
            self._restart_at = _NEVER
            self._state = "starting"
        return self._state

    @property
    def crashes(self) -> list[tuple[float, str]]:
        """Every crash ever, uncapped, as (time, image ref) pairs."""
        return list(zip(self.crash_times, self.crash_images, strict=True))

    def next_change(self) -> simpy.Event:
        """An event that succeeds with the new state at the machine's next state change.

        Every caller before that change gets the same event. A quiet restart's stopped ->
        starting (``quiet_restarts``) is no change here, as ``on_state`` is not told of it.
        """
        if self._next_change is None:
            self._next_change = self.env.event()
        return self._next_change

    def now_ms(self) -> int:
        """The platform clock in integer milliseconds."""
        return self.platform.epoch_ms + round(self.env.now * 1000)

    def snapshot(self, at_ms: int | None = None) -> MachineSnapshot:
        """What an API read of this machine returns now (``at_ms``: the look's clock)."""
        image = self.image
        # ``MachineSnapshot(...)`` with every field given, without the named tuple's
        # Python-level ``__new__``: every look builds one per machine.
        return _snapshot(MachineSnapshot, (
            self.id,
            self.state,
            image.ref if image is not None else "",
            self.log.newest_first(),
            self.now_ms() if at_ms is None else at_ms,
            self.restarts_total if self.platform.restart_counter else None,
        ))

    # -- what the platform's users and fly-proxy do to a machine -------------------------

    def launch(self, image: Image, *, at_once: bool = False) -> None:
        """Create the machine with its first image and start it.

        ``at_once``: the caller has already scheduled every event that came before the
        life's first step in this instant, so an app that stays up may boot without a
        process of its own (``_boot_and_stay``).
        """
        self._write(self.profile.launch)
        if at_once and behavior.stays_up(image.app):
            self._boot_and_stay(image)
        else:
            self._begin(image)

    def update(self, image: Image, start: bool = True) -> None:
        """Replace the image in place: stop what runs (a requested stop), start the new one.

        ``start=False`` leaves a stopped machine stopped with the new image, as flyctl
        does for a machine that was not running (``shouldSkipLaunch``).
        """
        was_running = self.state not in ("created", "stopped", "destroyed")
        self._write(self.profile.update)
        self._halt()
        self._write(self.profile.replaced)
        if start or was_running:
            self._begin(image)
        else:
            self.image = image

    def sleep(self) -> None:
        """Autostop: fly-proxy stops the idle machine (not a crash)."""
        self._write(self.profile.autostop)
        self._halt()
        self._set_state("stopped")

    def wake(self) -> None:
        """Autostart: fly-proxy starts the stopped machine for a request.

        Only a machine at rest: one that flyd is about to restart is left to flyd.
        """
        resting = self._process is None or not self._process.is_alive
        if self.state == "stopped" and self.image is not None and resting:
            self._write(self.profile.autostart)
            self._begin(self.image)

    def destroy(self) -> None:
        """Delete the machine, as the legacy rollback did."""
        self._halt()
        self._change("destroyed", self.profile.destroy)

    # -- the life ---------------------------------------------------------------------

    def _halt(self) -> None:
        state = self.state  # a quiet restart that is due has happened...
        self._restart_at = _NEVER  # ...one that is not never will
        if self._boot is not None:  # a boot without a process: it never ends now
            self._boot.callbacks.remove(self._booted)
            self._boot = None
        if self._process is not None and self._process.is_alive and not self._parked:
            # A parked life never resumes: it is dropped instead of interrupted, which
            # spares SimPy an Interruption event and a thrown exception per update of a
            # healthy machine (every publish over a running previous release).
            self._process.interrupt()
        self._process = None
        self._parked = False
        if state in ("starting", "started"):
            self._change("stopped", self.profile.stop, (0, False, True, False, 0))

    def _begin(self, image: Image) -> None:
        self.image = image
        # The state changes now, not when the process first runs, so a look taken in the
        # same instant never reads the old image's "started".
        self._set_state("starting")
        self._process = self.env.process(self._life(image))

    def _boot_and_stay(self, image: Image) -> None:
        """``_begin`` for an app that never exits: one timeout to the boot's end, no process.

        The life's first step, done now: the same jitter draw (``_first_draw``) and boot
        time. A process would do it one SimPy step later, so this is only for a caller that
        scheduled everything the process's first step would have come after (``launch``).
        Then the machine reads started and stays up, as a parked life does. Kept because a
        benchmark needs it: without it the incident world (its previous release) measured
        1.44-1.46x bare SimPy, with it 1.38-1.40x (``benchmarks/bench_core.py``, ~7 us a run).
        """
        self.image = image
        self._set_state("starting")
        jitter = self.platform.jitter
        boot = behavior.boot_s(image.app, self.platform.boot_s)
        self._boot = self.env.timeout(boot * (1.0 + (-jitter + 2 * jitter * self._first_draw())))
        self._boot.callbacks.append(self._booted)

    def _first_draw(self) -> float:
        """The first boot's jitter draw: the one a stopped quiet restart left unused
        (``_spare_draw``), else a new one."""
        drawn, self._spare_draw = self._spare_draw, None
        if drawn is None:
            drawn = self.rng.random() if self.platform.jitter else 0.0
        return drawn

    def _booted(self, _event: simpy.Event) -> None:
        self._boot = None
        self._change("started", self.profile.started)
        self._parked = True

    def _set_state(self, state: str) -> None:
        self._change(state, ())

    def _write(self, specs: tuple[Spec, ...]) -> None:
        """Append the events of a transition that leaves the state as it is."""
        self._change(None, specs)

    def _change(
        self, state: str | None, specs: tuple[Spec, ...], exit_fields: tuple[Any, ...] = ()
    ) -> None:
        """One transition: append the events ``specs`` declare, then enter ``state``.

        ``exit_fields`` fill an exit's fields: (exit_code, oom_killed, requested_stop,
        restarting, restart_count). ``state`` None leaves the state (and tells no one).
        This is the one place that writes a machine's events; it appends the records to
        the log itself, not through a call per transition (two or three a crash;
        measured: 1.63 s -> 1.35 s for the 1,000-machine world's machines alone).
        """
        if specs:
            stamp = self.platform.epoch_ms + round(self.env.now * 1000)
            log = self.log
            keep = self.all_events
            for kind, status, source, is_exit in specs:
                if is_exit:
                    record: Record = (kind, status, stamp, source, *exit_fields)
                else:
                    record = (kind, status, stamp, source, None, False, False, False, 0)
                log.records.append(record)
                if keep is not None:
                    keep.append(Event(*record))
            log.appended += len(specs)
        if state is None:
            return
        was = self._state
        self._state = state
        self._restart_at = _NEVER  # a change ends any quiet restart (the life's next one)
        serving = self.serving
        if serving is not None:
            up = state == "started"
            if up is not (was == "started"):
                serving.count += 1 if up else -1
                if serving.count == up:  # 1 after the first start, 0 after the last stop
                    serving.changed()
        if self.history is not None:
            self.history.append((self.env.now, state))
        waiting = self._next_change
        if waiting is not None:
            self._next_change = None
            waiting.succeed(state)
        if self.on_state is not None:
            self.on_state(self)

    def _exited(
        self,
        now: float,
        ref: str,
        exit_code: int,
        oom_killed: bool,
        *,
        restart_count: int,
        restarted: deque[float] | None,
    ) -> bool:
        """The app exited on its own: record it, write the exit; does flyd restart it?

        ``restarted``: the times of earlier restarts, kept only under on-failure.
        """
        if exit_code != 0 or oom_killed:
            self.crash_times.append(now)
            self.crash_images.append(ref)
        platform = self.platform
        policy = platform.restart_policy
        recent = 0 if restarted is None else recent_restarts(restarted, now, platform.retry_window_s)
        restarting = restarts(policy, exit_code, oom_killed, recent, platform.max_retries)
        # superfly/docs restart-policy: ``always`` never lets the machine enter stopped.
        self._change(
            "starting" if policy == "always" else "stopped",
            self.profile.crash,
            (exit_code, oom_killed, False, restarting, restart_count),
        )
        if restarting:
            if restarted is not None:
                restarted.append(now)
            self.restarts_total += 1
        return restarting

    def _life(self, image: Image) -> Generator[simpy.Event, Any, None]:
        """The machine running ``image``: boot, run, exit, and restart while flyd does."""
        env, platform, profile, change = self.env, self.platform, self.profile, self._change
        app, ref, rng, jitter = image.app, image.ref, self.rng, platform.jitter
        # rng.uniform(-jitter, jitter) is ``a + (b - a) * random()``: the same draw and
        # arithmetic inline, without a Python-level call per draw (two a cycle).
        random, low, span = rng.random, -jitter, 2 * jitter
        boot = behavior.boot_s(app, platform.boot_s)
        delay, policy = platform.restart_delay_s, platform.restart_policy
        started_events = profile.started
        # Only on-failure counts restarts: those within its window (0: the whole life).
        counted: deque[float] | None = deque() if policy == "on-failure" else None
        # A restart that writes no event need not be a SimPy event: the restart delay and
        # the next boot are then one wait (one event and one transition fewer a crash;
        # measured: incident world 222 -> 197 us). Under ``always`` nothing changes at
        # the restart (a crashed machine already reads starting). Otherwise the machine
        # reads stopped until ``_restart_at`` and starting after it (``state``), and
        # ``on_state`` is not told: only with ``quiet_restarts`` (no trace, and a
        # listener that ignores stopped -> starting). The jitter of that boot is drawn
        # at the crash, not after the delay (the same draw: the machine's stream has no
        # other reader); see ``_spare_draw``.
        quiet_restart = not profile.restart and (policy == "always" or self.quiet_restarts)
        # A crash loop (the same exit every start) draws its jitter here; other
        # behaviours ask ``next_exit`` per start.
        steady = behavior.steady_exit(app)
        base, exit_code, oom_killed = steady if steady is not None else (0.0, 0, False)
        starts, restart_at = 0, -1.0  # restart_at: when a quiet restart's delay ends
        drawn = self._first_draw()
        try:
            while True:
                booting = boot * (1.0 + (low + span * drawn))
                if restart_at < 0:
                    yield env.timeout(booting)
                else:
                    # The boot ends at the float instant a separate restart event would
                    # give (``restart_at + booting``), not at ``now + (delay + booting)``.
                    yield env.timeout(restart_at + booting - env.now)
                starts += 1
                change("started", started_events)
                if steady is not None:
                    after = base * (1.0 + (low + span * random()))
                else:
                    ended = behavior.next_exit(app, starts, rng, jitter)
                    if ended is None:
                        self._parked = True
                        yield env.event()  # stays up until an update, sleep or destroy
                        return
                    after, exit_code, oom_killed = ended
                yield env.timeout(after)
                now = env.now
                restarting = self._exited(
                    now, ref, exit_code, oom_killed, restart_count=starts - 1, restarted=counted
                )
                if not restarting:
                    return  # gave up (or policy no, or a clean exit): stays stopped
                if quiet_restart:
                    restart_at = now + delay
                    if policy != "always":
                        self._restart_at = restart_at
                else:
                    yield env.timeout(delay)
                    change("starting", profile.restart)
                drawn = random() if jitter else 0.0
        except simpy.Interrupt:
            if jitter and env.now < restart_at:
                # Stopped inside a quiet restart's delay: the boot drawn for never began.
                # The next boot takes the draw, as it would have made it itself.
                self._spare_draw = drawn
            return
