"""A Fly-style machine: its life as SimPy events, writing its profile's events.

A machine's life, in one place: it boots, reads ``started``, runs until its app exits
(``sim.platform.behavior``), and the restart policy (``sim.platform.restarting``) decides
whether flyd boots it again. Every change writes the events its profile (``sim.config.profiles``)
declares for it into the capped event list.

Every change of state happens at its time, in a callback the machine owns on the SimPy
event that carries it (the boot's end, the app's exit, the restart), or in a call made to
the machine (update, sleep, wake, destroy): nothing changes when the state is read, and
anything can wait on a change (``Machine.next_change``). The life is callbacks on
timeouts rather than a process: a process would add an initialisation event per start and
an interruption per stop, and resume a generator at every step.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Callable
from dataclasses import dataclass

import simpy
from simpy.events import NORMAL

from platform_testbed.checks import Event, MachineSnapshot
from platform_testbed.sim.config.profiles import PROFILES, Spec
from platform_testbed.sim.config.scenario import AppTable, PlatformTable
from platform_testbed.sim.platform import behavior
from platform_testbed.sim.platform.eventlog import EventLog
from platform_testbed.sim.platform.restarting import RestartBudget
from platform_testbed.sim.platform.serving import Serving


@dataclass(frozen=True, slots=True)
class Image:
    """A release's image reference and the app it runs."""

    ref: str
    app: AppTable


#: ``tuple.__new__``: a named tuple built from its fields in order, without the named
#: tuple's Python-level ``__new__`` (snapshots at every look, events at every write).
_named = tuple.__new__

#: An exit's own fields: (exit_code, oom_killed, requested_stop, restarting, restart_count).
ExitFields = tuple[int | None, bool, bool, bool, int]
_NO_EXIT: ExitFields = (None, False, False, False, 0)


class Machine:
    """One machine of the app; ``on_state`` is told of every state change, ``serving`` of starts."""

    # Slots: a world builds a Machine per machine per run, and its life reads these.
    __slots__ = (
        "_always", "_boot_base", "_budget", "_counts_restart", "_epoch_ms", "_exit", "_jitter",
        "_next_change", "_pending", "_quiet", "_quiet_draw", "_quiet_until", "_records", "_ref",
        "_schedule", "_spare_draw", "_starts", "_state", "_steady", "_steady_exit", "_then_exit",
        "_then_start", "all_events", "crash_images", "crash_times", "env", "history", "id",
        "image", "log", "on_state", "platform", "profile", "restarts_total", "rng", "serving",
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
        self._state = "created"
        #: The event ``next_change`` hands out, succeeded at the next change of state.
        self._next_change: simpy.Event | None = None
        self.image: Image | None = None
        self.log = EventLog(platform.event_log_cap)
        #: What the life reads at every step, read once: the log's list, the platform
        #: clock's epoch, the jitter, and whether the policy is ``always``.
        self._records = self.log.records
        self._epoch_ms = platform.epoch_ms
        self._jitter = platform.jitter
        self._always = platform.restart_policy == "always"
        #: ``restart_count_reading``: does an exit's restart_count count the restart it triggers?
        self._counts_restart = platform.restart_count_reading == "counts-this-restart"
        #: ``env.schedule`` and the two callback lists a crash loop hands it, made once:
        #: SimPy reads a processed event's list and never changes it, and ``_halt``
        #: cancels by replacing a pending event's list, not by emptying it.
        self._schedule = env.schedule
        self._then_start: list[Callable[[simpy.Event], None]] = [self._started]
        self._then_exit: list[Callable[[simpy.Event], None]] = [self._exited]
        #: The running image's ref (set with the image at each ``_begin``).
        self._ref = ""
        #: Every crash ever, uncapped: its time and the image ref that crashed; what the
        #: reconciler and the ground truth see. Two sequences, not one of tuples: nothing
        #: in them is an object the cyclic collector walks, where a tuple per crash is
        #: (190,000 in the 1,000-machine benchmark; measured: the collection after such a
        #: run 0.2 s -> ~0 s). The times are a C array of doubles, not a list of floats:
        #: 8 bytes a crash instead of 8 plus a 24-byte float object kept alive (the
        #: 1,000-machine world's peak 72.8 -> 68.4 MB, 190,000 allocations fewer).
        self.crash_times: array[float] = array("d")
        self.crash_images: list[str] = []
        #: The platform's monotonic restart counter (exposed only if the rules say so).
        self.restarts_total = 0
        #: The life's next event: a timeout carrying ``_started``, ``_exited`` or
        #: ``_restarted``. None when nothing is due: the app stays up, or the life ended.
        self._pending: simpy.Event | None = None
        #: The running image's boot time before jitter, and the exit every start ends in
        #: when it is always the same (``behavior.steady_exit``: the crash loops).
        self._boot_base = 0.0
        self._steady: behavior.Exit | None = None
        #: How the running start will end: (exit code, OOM-killed); ``_steady``'s, when set.
        self._exit: tuple[int, bool] = (0, False)
        self._steady_exit: tuple[int, bool] = (0, False)
        #: Starts since the life began: an exit's ``restart_count`` is one less.
        self._starts = 0
        #: on-failure's restart budget (None under the other policies).
        self._budget = self._new_budget()
        #: ``always`` with a profile that writes nothing at a restart: nothing anyone can
        #: see happens at the restart (a crashed machine already reads starting), so the
        #: restart delay and the next boot are one timeout (one event fewer a crash in the
        #: 1,000-machine benchmark). Its boot's jitter is drawn at the exit; stopped
        #: before ``_quiet_until``, the boot never began and the next one takes the draw
        #: (``_spare_draw``), as it would have drawn it itself.
        self._quiet = platform.restart_policy == "always" and not self.profile.restart
        self._quiet_until = 0.0
        self._quiet_draw = 0.0
        self._spare_draw: float | None = None
        #: With ``trace``: every (time, state) change and every event, uncapped, for plots.
        self.history: list[tuple[float, str]] | None = [] if trace else None
        self.all_events: list[Event] | None = [] if trace else None

    @property
    def state(self) -> str:
        """The machine's state now."""
        return self._state

    def next_change(self) -> simpy.Event:
        """An event that succeeds with the new state at the machine's next state change.

        Every caller before that change gets the same event; it succeeds in the instant of
        the change (a long poll such as the Machines API's ``/wait`` resumes then). Two
        changes in one instant (an update's stop and start) succeed it with the first: a
        waiter that must not miss one reads ``state`` when it resumes.
        """
        if self._next_change is None:
            self._next_change = self.env.event()
        return self._next_change

    @property
    def crashes(self) -> list[tuple[float, str]]:
        """Every crash ever, uncapped, as (time, image ref) pairs."""
        return list(zip(self.crash_times, self.crash_images, strict=True))

    def now_ms(self) -> int:
        """The platform clock in integer milliseconds."""
        return self.platform.epoch_ms + round(self.env.now * 1000)

    def snapshot(self, at_ms: int | None = None) -> MachineSnapshot:
        """What an API read of this machine returns now (``at_ms``: the look's clock)."""
        image = self.image
        # ``MachineSnapshot(...)`` with every field given, without the named tuple's
        # Python-level ``__new__``: every look builds one per machine.
        return _named(MachineSnapshot, (
            self.id,
            self._state,
            image.ref if image is not None else "",
            self.log.newest_first(),
            self.now_ms() if at_ms is None else at_ms,
            self.restarts_total if self.platform.restart_counter else None,
        ))

    def fork(self, env: simpy.Environment, serving: Serving | None) -> Machine | None:
        """This machine as it is now, in another world's ``env``: the same state, log and
        random stream; its pending step is a new event (``pending``) the caller queues.

        For a shared world whose checks decide apart (``sim.publish.forking``): the world
        goes on twice from the divergence, not again from time 0. None when something else
        waits on the machine (``next_change``): that waiter cannot be copied.
        """
        if self._next_change is not None:
            return None
        new: Machine = Machine.__new__(Machine)
        for name in Machine.__slots__:
            setattr(new, name, getattr(self, name))
        new.env = env
        new._schedule = env.schedule
        new.serving = serving
        new.on_state = None  # the world's hook, bound to the world: the world rebinds it
        rng = random.Random.__new__(random.Random)
        rng.setstate(self.rng.getstate())
        new.rng = rng
        new.log = self.log.copy()
        new._records = new.log.records
        new.crash_times = array("d", self.crash_times)
        new.crash_images = list(self.crash_images)
        new._budget = None if self._budget is None else self._budget.copy()
        new._then_start = [new._started]
        new._then_exit = [new._exited]
        new.history = None if self.history is None else list(self.history)
        new.all_events = None if self.all_events is None else list(self.all_events)
        pending = self._pending
        if pending is not None:
            callbacks = pending.callbacks
            if callbacks is self._then_start:
                mapped = new._then_start
            elif callbacks is self._then_exit:
                mapped = new._then_exit
            elif callbacks and all(getattr(c, "__self__", None) is self for c in callbacks):
                mapped = [getattr(new, c.__name__) for c in callbacks]
            else:
                return None
            event = simpy.Event(env)
            event._ok = True
            event._value = None
            event.callbacks = mapped
            new._pending = event
        return new

    @property
    def pending(self) -> simpy.Event | None:
        """The life's next event (a timeout in the queue), or None when nothing is due."""
        return self._pending

    # -- what the platform's users and fly-proxy do to a machine -------------------------

    def launch(self, image: Image) -> None:
        """Create the machine with its first image and start it."""
        self._write(self.profile.launch)
        self._begin(image)

    def update(self, image: Image, start: bool = True) -> None:
        """Replace the image in place: stop what runs (a requested stop), start the new one.

        ``start=False`` leaves a stopped machine stopped with the new image, as flyctl
        does for a machine that was not running (``shouldSkipLaunch``). A new image gets a
        new restart budget (not public: assumed).
        """
        was_running = self._state not in ("created", "stopped", "destroyed")
        self._write(self.profile.update)
        self._halt()
        self._write(self.profile.replaced)
        self._budget = self._new_budget()
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

        Only a machine at rest: one that flyd is about to restart is left to flyd. The
        restart budget stays as it was (``sim.platform.restarting``): a machine that gave
        up and is woken is not restarted when it fails again, unless the platform's
        ``autostart_refills_retries`` says an autostart refills it.
        """
        if self._state == "stopped" and self.image is not None and self._pending is None:
            self._write(self.profile.autostart)
            if self.platform.autostart_refills_retries:
                self._budget = self._new_budget()
            self._begin(self.image)

    def destroy(self) -> None:
        """Delete the machine, as the legacy rollback did."""
        self._halt()
        self._change("destroyed", self.profile.destroy)

    # -- the life: each step a callback on the timeout that ends the one before ---------

    def _new_budget(self) -> RestartBudget | None:
        platform = self.platform
        if platform.restart_policy != "on-failure":
            return None
        return RestartBudget(platform.max_retries, platform.retry_window_s, platform.retry_window)

    def _halt(self) -> None:
        """End the life: its next step never comes; a running app stops on request."""
        pending = self._pending
        if pending is not None:
            # Only this machine holds its timeouts: no callbacks cancel the step. (A new
            # list: the one it holds may be ``_then_start`` or ``_then_exit``.)
            pending.callbacks = []
            self._pending = None
            if self.env.now < self._quiet_until:
                self._spare_draw = self._quiet_draw
            self._quiet_until = 0.0
        if self._state in ("starting", "started"):
            self._change("stopped", self.profile.stop, (0, False, True, False, 0))

    def _begin(self, image: Image) -> None:
        """A new life on ``image``: the machine reads starting now, and its boot begins."""
        self.image = image
        self._ref = image.ref
        app = image.app
        self._boot_base = behavior.boot_s(app, self.platform.boot_s)
        self._steady = steady = behavior.steady_exit(app)
        if steady is not None:
            self._steady_exit = (steady[1], steady[2])
        self._starts = 0
        self._set_state("starting")
        # The first boot's jitter draw: the one a stopped quiet restart left unused, else
        # a new one.
        drawn, self._spare_draw = self._spare_draw, None
        if drawn is None:
            drawn = self.rng.random() if self.platform.jitter else 0.0
        self._boot(drawn)

    def _boot(self, drawn: float, fired: simpy.Event | None = None) -> None:
        """Schedule the end of a boot whose jitter draw is ``drawn`` (on ``fired``: ``_next``)."""
        jitter = self.platform.jitter
        self._next(fired, self._boot_base * (1.0 + (-jitter + 2 * jitter * drawn)), self._started)

    def _next(
        self, fired: simpy.Event | None, delay: float, step: Callable[[simpy.Event], None]
    ) -> None:
        """Schedule the life's next ``step`` ``delay`` seconds from now.

        ``fired`` is the timeout whose callback is running (the step before), or None. It
        is processed (SimPy set its callbacks to None before calling them) and only this
        machine holds it, so it is scheduled again rather than a new ``Timeout`` made: the
        same queue entry a timeout would push (``env.schedule`` is what ``Timeout``
        calls), without building an event per step. (Delays are never negative: jitter
        < 1, every duration >= 0.)
        """
        if fired is None:
            fired = self.env.timeout(delay)
            fired.callbacks.append(step)
        else:
            fired.callbacks = [step]
            self.env.schedule(fired, NORMAL, delay)
        self._pending = fired

    def _started(self, fired: simpy.Event) -> None:
        """A boot ended: the machine reads started, and the app's exit (if any) is scheduled."""
        self._pending = None
        self._starts += 1
        self._change("started", self.profile.started)
        jitter = self._jitter
        steady = self._steady
        if steady is not None:
            # rng.uniform(-jitter, jitter) is ``a + (b - a) * random()``: the same draw and
            # arithmetic inline, without a Python-level call per crash.
            after = steady[0] * (1.0 + (-jitter + 2 * jitter * self.rng.random()))
            self._exit = self._steady_exit
        else:
            assert self.image is not None
            ended = behavior.next_exit(self.image.app, self._starts, self.rng, jitter)
            if ended is None:
                return  # stays up until an update, sleep or destroy
            after, exit_code, oom_killed = ended
            self._exit = (exit_code, oom_killed)
        # ``_next(fired, after, self._exited)``, inline: once a start.
        fired.callbacks = self._then_exit
        self._schedule(fired, NORMAL, after)
        self._pending = fired

    def _exited(self, fired: simpy.Event) -> None:
        """The app exited on its own: record it, write the exit, and restart if flyd does."""
        self._pending = None
        now = self.env.now
        exit_code, oom_killed = self._exit
        failed = exit_code != 0 or oom_killed
        if failed:
            self.crash_times.append(now)
            self.crash_images.append(self._ref)
        always = self._always
        budget = self._budget
        restarting = always or (failed and budget is not None and budget.restart(now))
        if restarting:
            # Before the change: whoever hears of the exit reads the counter that includes it.
            self.restarts_total += 1
        # superfly/docs restart-policy: ``always`` never lets the machine enter stopped.
        self._change(
            "starting" if always else "stopped",
            self.profile.crash,
            (exit_code, oom_killed, False, restarting,
             self._starts - (not (restarting and self._counts_restart))),
        )
        if not restarting:
            return  # gave up (or policy no, or a clean exit): stays stopped
        delay, jitter = self.platform.restart_delay_s, self._jitter
        if self._quiet:
            drawn = self.rng.random() if jitter else 0.0
            restart_at = now + delay
            self._quiet_until, self._quiet_draw = restart_at, drawn
            booting = self._boot_base * (1.0 + (-jitter + 2 * jitter * drawn))
            # The boot ends at the float instant a separate restart event would give
            # (``restart_at + booting``), not at ``now + (delay + booting)``.
            # ``_next(fired, ..., self._started)``, inline: once a crash.
            fired.callbacks = self._then_start
            self._schedule(fired, NORMAL, restart_at + booting - now)
            self._pending = fired
        else:
            self._next(fired, delay, self._restarted)

    def _restarted(self, fired: simpy.Event) -> None:
        """The restart delay ended: flyd starts the machine again."""
        self._pending = None
        self._change("starting", self.profile.restart)
        self._boot(self.rng.random() if self.platform.jitter else 0.0, fired)

    def _set_state(self, state: str) -> None:
        self._change(state, ())

    def _write(self, specs: tuple[Spec, ...]) -> None:
        """Append the events of a transition that leaves the state as it is."""
        self._change(None, specs)

    def _change(
        self, state: str | None, specs: tuple[Spec, ...], exit_fields: ExitFields = _NO_EXIT
    ) -> None:
        """One transition: append the events ``specs`` declare, then enter ``state``.

        ``exit_fields`` fill an exit's fields: (exit_code, oom_killed, requested_stop,
        restarting, restart_count). ``state`` None leaves the state (and tells no one).
        This is the one place that writes a machine's events; it appends the records to
        the log itself, not through a call per transition (two or three a crash;
        measured: 1.63 s -> 1.35 s for the 1,000-machine world's machines alone).
        """
        if specs:
            stamp = self._epoch_ms + round(self.env.now * 1000)
            records = self._records
            keep = self.all_events
            for kind, status, source, is_exit in specs:
                # ``Event(...)`` with every field given, without the named tuple's
                # Python-level ``__new__`` (``eventlog._event``).
                event: Event = _named(Event, (
                    (kind, status, stamp, source, *exit_fields) if is_exit
                    else (kind, status, stamp, source, None, False, False, False, 0)
                ))
                records.append(event)
                if keep is not None:
                    keep.append(event)
            self.log.appended += len(specs)
        if state is None:
            return
        was = self._state
        self._state = state
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
