"""Helpers for tests and notebooks: event histories and looks made by hand, and a pure driver.

Like ``structlog.testing``: shipped in the package so users testing their own checks get
the same tools the project's tests use.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import simpy

from platform_testbed.checks import Check, Event, Look, MachineSnapshot, Verdict
from platform_testbed.checks.drive import CheckFailed, drive_deploying
from platform_testbed.checks.drive import drive as drive_check
from platform_testbed.checks.model import Update, to_ms, to_s
from platform_testbed.checks.protocol import prepare
from platform_testbed.sim.config.profiles import DEFAULT_PROFILE
from platform_testbed.sim.config.scenario import (
    AppTable,
    CheckTable,
    PlatformTable,
    PreviousTable,
    PublishTable,
    ReleaseTable,
    RestartPolicy,
    Scenario,
    TrafficTable,
)
from platform_testbed.sim.config.truth import DEFAULT_TRUTH, DEFAULT_WINDOW_S, Truth, window_end_s
from platform_testbed.sim.platform.machine import Image, Machine

STATE_AFTER = {"launch": "starting", "update": "starting", "start": "started", "destroy": "destroyed"}


def crash_loop(
    first_start_ms: int, crash_after_ms: int, restart_ms: int, cycles: int, exit_code: int = 1
) -> list[Event]:
    """Oldest-first events of a crash loop: each cycle a start, then a crash, then a restart."""
    events: list[Event] = []
    t = first_start_ms
    for n in range(cycles):
        events.append(Event("start", "started", t))
        t += crash_after_ms
        events.append(
            Event("exit", "stopped", t, exit_code=exit_code, restarting=True, restart_count=n)
        )
        t += restart_ms
    return events


def state_after(events: Sequence[Event]) -> str:
    """The machine state that the newest event implies (oldest-first input)."""
    if not events:
        return "created"
    newest = events[-1]
    if newest.type == "exit":
        return "stopped"
    return STATE_AFTER.get(newest.type, "started")


def snapshot_at(
    events: Sequence[Event], at_ms: int, cap: int, machine_id: str = "m1", image: str = "app:new"
) -> MachineSnapshot:
    """What the API shows at ``at_ms``: events up to then, the newest ``cap`` of them, newest first."""
    seen = [e for e in events if e.timestamp <= at_ms]
    return MachineSnapshot(
        id=machine_id,
        state=state_after(seen),
        image=image,
        events=tuple(reversed(seen[-cap:])),
        at_ms=at_ms,
    )


def look_at(events: Sequence[Event], at_ms: int, cap: int) -> Look:
    """A one-machine look at ``at_ms``."""
    return Look(at_ms, (snapshot_at(events, at_ms, cap),))


def drive(
    check: Check,
    publish_started_ms: int,
    observe: Callable[[int], Look],
    max_looks: int = 1000,
    until_ms: int | None = None,
) -> tuple[Verdict | None, list[Look]]:
    """Run a check through the one driver loop (``checks.drive``), ``observe(at_ms)`` looking.

    Without ``until_ms`` a check must decide within ``max_looks``; with it, a look due
    after ``until_ms`` ends the drive with no verdict (the horizon). A check that breaks
    the protocol raises ``checks.drive.CheckFailed``.
    """
    looks: list[Look] = []
    now = publish_started_ms
    steps = drive_check(check, publish_started_ms, max_looks=max_looks)
    try:
        wait = next(steps)
        while True:
            now += to_ms(wait)
            if until_ms is not None and now > until_ms:
                return None, looks
            looks.append(observe(now))
            wait = steps.send(looks[-1])
    except StopIteration as done:
        return done.value, looks


# --- whole machine histories, played by the simulator's own machine model -------------
#
# ``world`` runs the real ``sim.platform.machine.Machine`` (SimPy, the same code as every
# simulated publish) for each app, with its platform's jitter drawn from the world's seed as
# the simulator draws it, to the horizon, keeping every event and state change. A look at
# any time is then answered from that history: the capped, newest-first list, the state
# and the restart counter the platform showed at that time.

PUBLISH_MS = 100_000


@dataclass(frozen=True)
class App:
    """How one machine runs the new release: boot, when it exits, how the platform restarts."""

    boot_ms: int = 400
    #: Exit this long after every start; None: the app stays up.
    crash_after_ms: int | None = 2_500
    restart_delay_ms: int = 300
    #: Fly's on-failure ``max_retries``; None: restart forever (policy ``always``).
    max_retries: int | None = 10
    #: 0 is a clean exit (not a crash; on-failure does not restart it).
    exit_code: int = 1
    #: The kernel's OOM killer ends the app (exit 137, ``oom_killed``).
    oom: bool = False
    #: True: the publish updates a machine that ran the previous release (no new launch).
    updated: bool = True
    cap: int = 5
    restart_counter: bool = False
    #: The event profile (``sim.config.profiles``).
    events: str = DEFAULT_PROFILE
    #: The platform's relative spread of boot and crash times, drawn per start from the
    #: world's seed (``[platform] jitter``; 0: every timing exactly as given).
    jitter: float = 0.0
    #: ``no`` restarts nothing; None: on-failure, or always when ``max_retries`` is None.
    restart_policy: RestartPolicy | None = None
    #: Run the simulator's ``crash_on_boot`` behaviour: the app dies ``crash_after_ms``
    #: after every start, during its own startup (same timing as ``crash_after``, its own
    #: name in scenarios and reports).
    crash_on_boot: bool = False

    def __repr__(self) -> str:
        """Only the fields that differ from the defaults: a counterexample reads as its rule."""
        changed = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if getattr(self, f.name) != f.default
        ]
        return f"App({', '.join(changed)})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis (and IPython) print this repr, not every dataclass field."""
        printer.text(repr(self))

    def platform(self) -> PlatformTable:
        """The platform rules this machine runs under (epoch 0)."""
        policy = self.restart_policy or ("always" if self.max_retries is None else "on-failure")
        return PlatformTable(
            event_log_cap=self.cap,
            restart_policy=policy,
            max_retries=self.max_retries if self.max_retries is not None else 0,
            restart_delay_s=to_s(self.restart_delay_ms),
            boot_s=to_s(self.boot_ms),
            jitter=self.jitter,
            epoch_ms=0,
            restart_counter=self.restart_counter,
            events=self.events,
        )

    def release(self) -> AppTable:
        """The new release's app table."""
        if self.crash_after_ms is None:
            return AppTable(behavior="healthy")
        if self.crash_on_boot and not self.oom:
            return AppTable(
                behavior="crash_on_boot",
                crash_on_boot_s=to_s(self.crash_after_ms),
                exit_code=self.exit_code,
            )
        return AppTable(
            behavior="oom" if self.oom else "crash_after",
            crash_after_s=to_s(self.crash_after_ms),
            exit_code=self.exit_code,
        )


    def scenario(
        self, machines: int = 1, horizon_s: float = 600.0, check: CheckTable | None = None
    ) -> Scenario:
        """The same world for the simulator (``sim.publish.world.run``): ``machines`` of this app.

        The publish begins ``PUBLISH_MS`` after the platform's epoch 0, with no traffic
        and no reconciler pass before the horizon matters to a check; run it with the
        world's seed for the same jitter.
        """
        previous = PreviousTable() if self.updated else None
        return Scenario(
            name="testkit",
            horizon_s=to_s(PUBLISH_MS) + horizon_s,
            platform=self.platform(),
            previous=previous,
            release=ReleaseTable(**self.release().model_dump(), machines=machines),
            check=check or CheckTable(),
            publish=PublishTable(at_s=to_s(PUBLISH_MS)),
            traffic=TrafficTable(rps=0),
        )


@dataclass(frozen=True)
class Step:
    """One entry of a machine's full history: an event, the state after it, the counter."""

    event: Event
    state: str
    restarts: int


@dataclass(frozen=True)
class MachineHistory:
    """One machine's whole history from before the publish to the horizon."""

    id: str
    app: App
    events: tuple[Event, ...]
    #: (ms, state) for every state change, in order.
    states: tuple[tuple[int, str], ...]
    #: (ms, restart counter) after every restart.
    counters: tuple[tuple[int, int], ...]
    times: tuple[int, ...] = field(init=False, repr=False)
    state_times: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "times", tuple(e.timestamp for e in self.events))
        object.__setattr__(self, "state_times", tuple(t for t, _ in self.states))

    @property
    def steps(self) -> tuple[Step, ...]:
        """Every event with the state and restart counter the machine had right after it."""
        return tuple(
            Step(e, self._state(e.timestamp), self._counter(e.timestamp)) for e in self.events
        )

    def _state(self, at_ms: int) -> str:
        seen = bisect.bisect_right(self.state_times, at_ms)
        return self.states[seen - 1][1] if seen else "created"

    def state_before(self, at_ms: int) -> str:
        """The state the machine had just before ``at_ms`` (``created``: not yet launched)."""
        return self._state(at_ms - 1)

    def _counter(self, at_ms: int) -> int:
        seen = bisect.bisect_right([t for t, _ in self.counters], at_ms)
        return self.counters[seen - 1][1] if seen else 0

    def snapshot(self, at_ms: int) -> MachineSnapshot:
        """What an API read at ``at_ms`` returns (events at exactly ``at_ms`` included)."""
        seen = bisect.bisect_right(self.times, at_ms)
        visible = self.events[max(0, seen - self.app.cap) : seen]
        return MachineSnapshot(
            id=self.id,
            state=self._state(at_ms),
            image="registry.fly.io/app:release",
            events=tuple(reversed(visible)),
            at_ms=at_ms,
            restart_counter=self._counter(at_ms) if self.app.restart_counter else None,
        )

    @property
    def crashes_after_publish(self) -> int:
        """Ground truth: how many times the new release crashed (uncapped)."""
        return sum(1 for e in self.events if e.is_crash and e.timestamp >= PUBLISH_MS)

    def serves_until(self, end_ms: int) -> bool:
        """The ``serves`` truth's reading: no exit of its own from the publish to ``end_ms``,
        and started at ``end_ms`` (``sim.config.truth``)."""
        exited = any(e.type == "exit" and not e.requested_stop and PUBLISH_MS <= e.timestamp <= end_ms
                     for e in self.events)
        return not exited and self._state(end_ms) == "started"


def history(
    machine_id: str, app: App, horizon_ms: int, rng: random.Random | None = None,
    update_ms: int | None = PUBLISH_MS,
) -> MachineHistory:
    """Run one machine on the simulator's model from before the publish to ``horizon_ms``.

    ``rng`` draws the jitter (default: ``random.Random(0)``); no jitter, no draws.
    ``update_ms``: when the release reaches it (a deploying check's ``Update``); None:
    never, so it runs the previous release throughout (or, new, is never created).
    """
    env = simpy.Environment()
    counters: list[tuple[int, int]] = []

    def counted(machine: Machine) -> None:
        # The machine raises its counter before it tells of the exit that restarts it.
        if not counters or counters[-1][1] != machine.restarts_total:
            counters.append((to_ms(env.now), machine.restarts_total))

    machine = Machine(env, machine_id, app.platform(), rng or random.Random(0), trace=True,
                      on_state=counted)

    def publish() -> Generator[Any, Any, None]:
        release = Image("registry.fly.io/app:release", app.release())
        if app.updated:
            machine.launch(Image("registry.fly.io/app:previous", AppTable()))
        if update_ms is None:
            return
        yield env.timeout(to_s(update_ms))
        if app.updated:
            machine.update(release)
        else:
            machine.launch(release)

    env.process(publish())
    # Events at exactly the horizon are part of the history (a look may be taken then).
    env.run(until=to_s(horizon_ms) + 1e-9)
    assert machine.all_events is not None
    assert machine.history is not None
    states = tuple((to_ms(t), s) for t, s in machine.history)
    return MachineHistory(machine_id, app, tuple(machine.all_events), states, tuple(counters))


@dataclass(frozen=True)
class World:
    """Machines laid out to a horizon; looks at any time after the publish."""

    machines: tuple[MachineHistory, ...]
    horizon_ms: int
    #: The seed the machines' jitter was drawn from (the simulator's ``seed``).
    seed: int = 0
    #: The ground truth that says whether the release is bad (``sim.config.truth``).
    truth: Truth = DEFAULT_TRUTH
    truth_window_s: float = DEFAULT_WINDOW_S
    #: Each machine's state just before the publish (those the publish updates, not the
    #: ones it launches), as the simulator's looks declare it (``Look.pre_deploy``).
    pre_deploy: Mapping[str, str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        before = {m.id: m.state_before(PUBLISH_MS) for m in self.machines}
        declared = {i: state for i, state in before.items() if state != "created"}
        object.__setattr__(self, "pre_deploy", declared or None)

    def __repr__(self) -> str:
        apps = ", ".join(repr(m.app) for m in self.machines)
        seed = f", seed={self.seed}" if self.seed else ""
        return f"world({apps}, horizon_s={to_s(self.horizon_ms - PUBLISH_MS):g}{seed})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis (and IPython) print this repr, not every event of every machine."""
        printer.text(repr(self))

    def scenario(self, check: CheckTable | None = None) -> Scenario:
        """This world as a simulator scenario; its machines must all run the same app."""
        apps = {m.app for m in self.machines}
        if len(apps) != 1:
            raise ValueError("a scenario runs one app on every machine; this world has several")
        horizon_s = to_s(self.horizon_ms - PUBLISH_MS)
        made = self.machines[0].app.scenario(len(self.machines), horizon_s, check)
        return made.model_copy(update={"truth": self.truth, "truth_window_s": self.truth_window_s})

    def look(self, at_ms: int) -> Look:
        """Every machine read at ``at_ms``."""
        return Look(at_ms, tuple(m.snapshot(at_ms) for m in self.machines), self.pre_deploy)

    @property
    def bad(self) -> bool:
        """Ground truth by ``truth``: a machine crashed after the publish began, or (``serves``)
        one exited within the window or is not started at its end."""
        if any(m.crashes_after_publish for m in self.machines):
            return True
        if self.truth == "crash":
            return False
        end_ms = to_ms(window_end_s(self.truth_window_s, to_s(PUBLISH_MS), to_s(self.horizon_ms)))
        return not all(m.serves_until(end_ms) for m in self.machines)


def world(*apps: App, horizon_s: float = 600.0, seed: int = 0, truth: Truth = DEFAULT_TRUTH,
          truth_window_s: float = DEFAULT_WINDOW_S) -> World:
    """A world of one machine per app, laid out to ``horizon_s`` after the publish.

    ``truth`` and ``truth_window_s`` judge it (``World.bad``; ``sim.config.truth``).

    Each machine draws its jitter from its own stream, split from ``random.Random(seed)``
    in machine order as ``sim.publish.world.build`` splits it: a world of one app on
    every machine is the simulator's world of that seed.
    """
    horizon_ms = PUBLISH_MS + to_ms(horizon_s)
    root = random.Random(seed)
    streams = [random.Random(root.getrandbits(64)) for _ in apps]
    return World(
        tuple(history(f"m{i}", app, horizon_ms, rng)
              for i, (app, rng) in enumerate(zip(apps, streams, strict=True), start=1)),
        horizon_ms,
        seed,
        truth,
        truth_window_s,
    )


@dataclass(frozen=True)
class Run:
    """What a check concluded in a world and the looks it took."""

    verdict: Verdict | None
    looks: tuple[Look, ...]

    @property
    def decided_at_ms(self) -> int | None:
        """When the verdict came: the time of the last look."""
        return self.looks[-1].at_ms if self.looks and self.verdict else None


def drive_world(check: Check, w: World, max_looks: int = 2_000) -> Run:
    """Run a check against a world as the simulator would, until a verdict or the horizon.

    As the simulator does, a check that takes them gets the world's seed and the update
    duty (``checks.protocol.prepare``); one that deploys updates the machines itself:
    each ``Update`` replays the named machines' histories with the release arriving at
    that moment (each on its own stream, so the same draws as the simulator's machine).
    """
    ready, deploys = prepare(check, w.seed, updates=True)
    if deploys:
        return _drive_deploying(ready, w, max_looks)
    verdict, looks = drive(ready, PUBLISH_MS, w.look, max_looks=max_looks, until_ms=w.horizon_ms)
    return Run(verdict, tuple(looks))


def _drive_deploying(check: Check, w: World, max_looks: int) -> Run:
    """``drive_world`` for a check that deploys: no machine has the release until it asks."""
    root = random.Random(w.seed)
    streams = {m.id: root.getrandbits(64) for m in w.machines}
    apps = {m.id: m.app for m in w.machines}
    current = {m.id: history(m.id, m.app, w.horizon_ms, random.Random(streams[m.id]), None)
               for m in w.machines}
    before = w.pre_deploy
    looks: list[Look] = []
    now = PUBLISH_MS
    steps = drive_deploying(check, PUBLISH_MS, max_looks=max_looks)
    try:
        step = next(steps)
        while True:
            if isinstance(step, Update):
                missing = [m for m in step.machine_ids if m not in current]
                if missing:
                    raise CheckFailed(f"check asked to update {', '.join(missing)}, which is "
                                      "not a machine of this world")
                for mid in step.machine_ids:
                    # The world's own history already has the release at the publish.
                    current[mid] = (next(m for m in w.machines if m.id == mid)
                                    if now == PUBLISH_MS else
                                    history(mid, apps[mid], w.horizon_ms,
                                            random.Random(streams[mid]), now))
            else:
                now += to_ms(step)
                if now > w.horizon_ms:
                    return Run(None, tuple(looks))
            looks.append(Look(now, tuple(h.snapshot(now) for h in current.values()), before))
            step = steps.send(looks[-1])
    except StopIteration as done:
        return Run(done.value, tuple(looks))


def incident_looks(count: int, cap: int = 5) -> list[Look]:
    """The brief's platform: every look adds a crash and a start, the list trimmed to ``cap``.

    Cycle k (from 0) crashes at +1000k+300 ms and starts again at +1000k+600 ms after the
    publish; look k is taken at +1000k+900 ms, when the machine reads started. Once the
    list is full, every look holds the same mix of starts and crashes.
    """
    events: list[Event] = [
        Event("update", "replaced", PUBLISH_MS, "user"),
        Event("start", "started", PUBLISH_MS + 100),
    ]
    looks: list[Look] = []
    for k in range(count):
        base = PUBLISH_MS + to_ms(k)
        events.append(
            Event("exit", "stopped", base + 300, exit_code=1, restarting=True, restart_count=k)
        )
        events.append(Event("start", "started", base + 600))
        at_ms = base + 900
        visible = tuple(reversed(events[-cap:]))
        machine = MachineSnapshot("m1", "started", "registry.fly.io/app:release", visible, at_ms)
        looks.append(Look(at_ms, (machine,)))
    return looks

