"""A Fly-style machine: lifecycle states, boot, the app's exits, restart policy, event list."""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal

import simpy

from checks import Event, MachineSnapshot
from sim.behavior import Behavior
from sim.eventlog import EventLog

RestartPolicy = Literal["no", "always", "on-failure"]


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

    def __init__(
        self,
        env: simpy.Environment,
        machine_id: str,
        rules: PlatformRules,
        rng: random.Random,
        *,
        on_state: Callable[[Machine], None] | None = None,
        trace: bool = False,
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
        #: With ``trace``: every (time, state) change and every event, uncapped, for plots.
        self.history: list[tuple[float, str]] | None = [] if trace else None
        self.all_events: list[Event] | None = [] if trace else None

    def now_ms(self) -> int:
        """The platform clock in integer milliseconds."""
        return self.rules.epoch_ms + round(self.env.now * 1000)

    def snapshot(self) -> MachineSnapshot:
        """What an API read of this machine returns now."""
        return MachineSnapshot(
            id=self.id,
            state=self.state,
            image=self.image.ref if self.image else "",
            events=self.log.newest_first(),
            at_ms=self.now_ms(),
            restart_counter=self.restarts_total if self.rules.restart_counter else None,
        )

    def launch(self, image: Image) -> None:
        """Create the machine with its first image and start it."""
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

    def _halt(self) -> None:
        if self._process is not None and self._process.is_alive:
            self._process.interrupt()
        if self.state in ("starting", "started"):
            self._record("exit", "stopped", exit_code=0, requested_stop=True)
        self._process = None

    def _begin(self, image: Image) -> None:
        self.image = image
        # The state changes now, not when the process first runs, so a look taken in the
        # same instant never reads the old image's "started".
        self._set_state("starting")
        self._process = self.env.process(self._run(image))

    def _set_state(self, state: str) -> None:
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
        rules = self.rules
        behavior = image.behavior
        starts = 0
        restarts = 0
        try:
            while True:
                if self.state != "starting":
                    self._set_state("starting")
                yield self.env.timeout(self._jittered(behavior.boot_s(rules.boot_s)))
                starts += 1
                self._set_state("started")
                self._record("start", "started")
                crash = behavior.crash(starts, self.rng, rules.jitter)
                if crash is None:
                    # Stays up until an update, sleep or destroy interrupts it.
                    yield self.env.event()
                    return
                yield self.env.timeout(crash.after_s)
                self.crashes.append((self.env.now, image.ref))
                restarting = rules.restart_policy == "always" or (
                    rules.restart_policy == "on-failure" and restarts < rules.max_retries
                )
                self._record(
                    "exit",
                    "stopped",
                    exit_code=crash.exit_code,
                    oom_killed=crash.oom_killed,
                    restarting=restarting,
                    restart_count=restarts,
                )
                self._set_state("stopped")
                if not restarting:
                    return
                restarts += 1
                self.restarts_total += 1
                yield self.env.timeout(rules.restart_delay_s)
        except simpy.Interrupt:
            return
