"""How fast the simulator core is against bare SimPy, and how a local sweep scales.

Run: ``.venv/bin/python benchmarks/bench_core.py`` (a few minutes). Every figure is a
ratio measured in this one run: the full model and its bare twin run as pairs, A B A B
... (the order swapped every pair, fresh seeds each pair), and the median of the pairs'
ratios is printed with its spread (quartiles, or the range for a few pairs), because
these machines are shared and noisy; the load average is printed at start and end.

The bare SimPy model of a world is the least a SimPy program must do to simulate it:
each machine crash-loops by the scenario's rules (boot, crash, restart delay, the same
jitter draws, giving up after ``max_retries`` under ``on-failure``) appending tuples to
a ``deque(maxlen=event_log_cap)``, and one poller copies every deque each
``look_delay_s`` from the publish to the horizon. Nothing else: no site, no check,
no pipeline, no reconciler, no traffic, no oracle.

The full model is ``sim.publish.world.run`` with the check, including the ground truth it
needs (the oracle run when the run itself cannot prove the release bad). Under ``always``,
where a restart writes no event, the full model makes the restart delay and the next boot
one SimPy wait (``Machine._quiet``: nothing anyone can see happens at the restart); the
bare twin yields each delay as plain SimPy code would. ``run`` pauses the cyclic garbage
collector for the run (``sim.publish.gcpause.gc_paused``); every twin here runs with it
paused the same way, so the collector is no part of any ratio.

A sweep world with its checks: a world of the shipped 10,000-point sweep as the sweep runs
it (``sim.sweep.units.unit_rows``: the point's scenario and checks built, the checks riding
shared worlds until one decides, the pipeline's step after each verdict, the oracle when no
world proved the release bad, each world's traffic tallied, the rows), against its bare
twin doing the same work (``bare_sweep_world``): the twin does what the row reports, no
less and no more. It builds the point's scenario and check objects with the same calls the
sweep makes (input, identical on both sides, about 60-100 us of a ~450 us world), then
plain SimPy and NumPy, no model code: the previous release launched and the roll, the
machines' crash loops writing the profile's events, the site's timeline, each check's
``next`` called directly, the first verdict acting (go live and the reconciler's passes
to its late failure, or the rollback restoring the previous release), checks that decided
otherwise riding on in a copy of the world made just before the verdict acted (as the
model's ``sim.publish.forking``), the oracle going on from such a copy to the first crash,
the traffic's Poisson draw, the rows. Before the timing, every timed
world is run on both sides untimed: the twin's rows (verdicts, decided times, rollback,
late failure, ground truth, every count) must equal the model's, and the SimPy events the
two process must be the same number, or the bench stops. The twin covers only this
sweep's features (``twin_covers`` refuses any other world).
"""

from __future__ import annotations

import gc
import heapq
import itertools
import os
import random
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import simpy

from platform_testbed.checks import Event, Look, MachineSnapshot, Step, Verdict, Wait, make_check
from platform_testbed.checks.protocol import Check
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.config import scenario as scenarios
from platform_testbed.sim.config.scenario import Scenario
from platform_testbed.sim.publish.gcpause import gc_paused
from platform_testbed.sim.publish.world import run
from platform_testbed.sim.sweep import SweepResult, load_sweep, run_sweep
from platform_testbed.sim.sweep.file import Sweep, validation_env
from platform_testbed.sim.sweep.units import unit_rows

ROOT = Path(__file__).resolve().parent.parent


def bare_world(sc: Scenario, seed: int, fly_events: bool = False) -> int:
    """The bare SimPy twin of a crash-looping world; returns how many looks it took.

    ``fly_events``: each event holds the nine fields a check reads of a Fly event (type,
    status, integer millisecond timestamp, source, exit code, OOM, requested stop,
    restarting, restart count), as the model's do, instead of two or five: what the shape
    of the events alone costs, apart from everything else the model does.
    """
    env = simpy.Environment()
    root = random.Random(seed)
    rngs = [random.Random(root.getrandbits(64)) for _ in range(sc.release.machines)]
    rules, app = sc.platform, sc.release
    logs: list[deque[tuple[Any, ...]]] = [deque(maxlen=rules.event_log_cap) for _ in rngs]
    looks: list[list[tuple[Any, ...]]] = []
    epoch = rules.epoch_ms

    def machine(rng: random.Random, log: deque[tuple[Any, ...]]) -> Generator[Any, Any, None]:
        yield env.timeout(sc.publish.at_s)
        jitter = rules.jitter
        restarts = 0
        while True:
            yield env.timeout(rules.boot_s * (1.0 + rng.uniform(-jitter, jitter)))
            log.append(("start", "started", epoch + round(env.now * 1000), "flyd", None, False,
                        False, False, 0) if fly_events else ("start", env.now))
            yield env.timeout(app.crash_after_s * (1.0 + rng.uniform(-jitter, jitter)))
            restarting = rules.restart_policy == "always" or (
                rules.restart_policy == "on-failure" and restarts < rules.max_retries
            )
            log.append(("exit", "stopped", epoch + round(env.now * 1000), "flyd", app.exit_code,
                        False, False, restarting, restarts) if fly_events
                       else ("exit", env.now, app.exit_code, restarting, restarts))
            if not restarting:
                return
            restarts += 1
            yield env.timeout(rules.restart_delay_s)

    def poller() -> Generator[Any, Any, None]:
        yield env.timeout(sc.publish.at_s)
        while True:
            looks.append([tuple(log) for log in logs])
            yield env.timeout(sc.check.look_delay_s)

    for rng, log in zip(rngs, logs, strict=True):
        env.process(machine(rng, log))
    env.process(poller())
    env.run(until=sc.horizon_s)
    return len(looks)


@dataclass(frozen=True)
class KeepLooking:
    """A check that looks every ``look_delay_s`` until ``until_s`` after the publish, then passes.

    The large world needs a check that polls the whole horizon, as the bare poller does;
    the built-in checks decide within a minute and the run would end early.
    """

    look_delay_s: float = 10.0
    until_s: float = 590.0
    name = "keep-looking"

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Wait one delay after each look until the time is up."""
        if looks and looks[-1].at_ms - publish_started_ms >= self.until_s * 1000:
            return Verdict(True, f"{len(looks)} looks")
        return Wait(self.look_delay_s if looks else 0.0)


#: ``Philox`` re-keyed per draw, as ``sim.platform.traffic`` draws (making a NumPy bit
#: generator per world costs more than the draw): the twin's traffic costs what a plain
#: NumPy program that knew the trick would pay, no more.
_PHILOX = np.random.Philox(key=0)
_TRAFFIC = np.random.Generator(_PHILOX)
_STOPPED_EXIT = (0, False, True, False, 0)  # a requested stop: the update's, the rollback's


def _bare_requests(seed: int, rps: float, lengths: list[float]) -> list[int]:
    """Poisson requests over the segments (total Poisson, split multinomially), as the model."""
    total = float(sum(x for x in lengths if x > 0))
    if rps <= 0 or total <= 0:
        return [0] * len(lengths)
    key = seed & (2**128 - 1)
    state: dict[str, Any] = {
        "bit_generator": "Philox",
        "state": {"counter": [0, 0, 0, 0], "key": [key & (2**64 - 1), key >> 64]},
        "buffer": [0, 0, 0, 0], "buffer_pos": 4, "has_uint32": 0, "uinteger": 0,
    }
    _PHILOX.state = cast(Any, state)  # numpy types it as arrays; lists work
    requests = int(_TRAFFIC.poisson(rps * total))
    if len(lengths) == 1:
        return [requests]
    counts: list[int] = _TRAFFIC.multinomial(requests, [max(x, 0.0) / total for x in lengths]).tolist()
    return counts


class _BareRider:
    """One check across the twin's worlds of a seed: what it asked, and what it decided."""

    def __init__(self, check: Check) -> None:
        self.check = check
        self.waits: list[float] = []
        self.looks: list[Look] = []
        self.done = False
        self.verdict: Verdict | None = None
        self.decided_at = 0.0


@dataclass(slots=True)
class _Step:
    """Machine ``i``'s next step on its timeout: ``step(world, i)`` (a fork rebinds it)."""

    world: _BareWorld
    i: int
    step: Callable[[_BareWorld, int], None]

    def __call__(self, _: simpy.events.Event) -> None:
        self.step(self.world, self.i)


class _BareWorld:
    """One world of the sweep's scenario in plain SimPy: the previous release, the roll, the
    machines' crash loops with their events, the site's timeline, the checks riding it until
    one decides, then what the pipeline does with that verdict (go live and the reconciler's
    passes, or the rollback), as ``sim.publish.world`` does for this scenario's features."""

    def __init__(self, sc: Scenario, seed: int, riders: Sequence[_BareRider] = ()) -> None:
        self.sc = sc
        self.env = simpy.Environment()
        root = random.Random(seed)
        rules = sc.platform
        n = sc.release.machines
        self.rngs = [random.Random(root.getrandbits(64)) for _ in range(n)]
        self.traffic_seed = root.getrandbits(64)
        root.getrandbits(64)  # the proxy's stream: drawn, unused without autostart
        width = len(str(n))
        self.ids = [f"m{i:0{width}d}" for i in range(1, n + 1)]
        self.states = ["created"] * n
        self.logs: list[deque[Event]] = [deque(maxlen=rules.event_log_cap) for _ in range(n)]
        self.images = [""] * n
        #: Each log newest first, as the last look built it (None: written since), as the
        #: model's event log keeps its view: a look rebuilds only what changed.
        self.views: list[tuple[Event, ...] | None] = [None] * n
        self.pending: list[simpy.Event | None] = [None] * n
        self.starts = [0] * n
        self.budgets = [[0, 0.0, False] for _ in range(n)]  # used, opened, spent
        self.crashes: list[list[tuple[float, str]]] = [[] for _ in range(n)]
        self.live: str | None = "previous"
        self.up = 0
        self.segments: list[tuple[float, str]] = [(0.0, "bad_gateway")]
        self.at = sc.publish.at_s
        self.epoch = rules.epoch_ms
        self.pre_deploy: dict[str, str] | None = None
        self.riders = list(riders)
        self.members: list[_BareRider] = []
        self.away: list[_BareRider] = []
        self.gone: set[int] = set()
        self.acting: tuple[bool, bool] | None = None
        self.looks_due: dict[int, tuple[_BareRider, int]] = {}
        self.diverged = False
        self.proved_bad = False
        self.rollback: str | None = None
        self.late_failure_at_s: float | None = None
        self.first_crash: simpy.Event | None = None
        self.then: _BareWorld | None = None  # the copy made where the first verdict acted
        self.forked = False
        self.known = False  # an earlier world of the seed proved the release bad

    # -- the machines ----------------------------------------------------------------
    def ms(self) -> int:
        return self.epoch + round(self.env.now * 1000)

    def write(self, i: int, kind: str, status: str, source: str = "flyd",
              exit_fields: tuple[int | None, bool, bool, bool, int] | None = None) -> None:
        stamp = self.ms()
        self.views[i] = None
        self.logs[i].append(Event(kind, status, stamp, source, *exit_fields) if exit_fields
                            else Event(kind, status, stamp, source))

    def enter(self, i: int, state: str) -> None:
        was, self.states[i] = self.states[i], state
        up = state == "started"
        if up is not (was == "started"):
            self.up += 1 if up else -1
            if self.up == up:
                self.site_changed()

    def site_changed(self) -> None:
        outcome = ("not_found" if self.live is None else "served" if self.up else "bad_gateway")
        if outcome != self.segments[-1][1]:
            self.segments.append((self.env.now, outcome))

    def after(self, i: int, delay: float, step: Callable[[int], None]) -> None:
        timeout = self.env.timeout(delay)
        timeout.callbacks.append(_Step(self, i, step.__func__))  # type: ignore[attr-defined]
        self.pending[i] = timeout

    def begin(self, i: int, image: str) -> None:
        self.images[i] = image
        self.starts[i] = 0
        self.enter(i, "starting")
        self.boot(i)

    def boot(self, i: int) -> None:
        jitter = self.sc.platform.jitter
        drawn = self.rngs[i].random() if jitter else 0.0
        self.after(i, self.sc.platform.boot_s * (1.0 + (-jitter + 2 * jitter * drawn)),
                   self.started)

    def started(self, i: int) -> None:
        self.pending[i] = None
        self.starts[i] += 1
        self.write(i, "start", "started")
        self.enter(i, "started")
        if self.images[i] == "previous":
            return  # the previous release is healthy: it stays up
        jitter = self.sc.platform.jitter
        crash_after = self.sc.release.crash_after_s
        self.after(i, crash_after * (1.0 + (-jitter + 2 * jitter * self.rngs[i].random())),
                   self.exited)

    def exited(self, i: int) -> None:
        self.pending[i] = None
        rules, now = self.sc.platform, self.env.now
        self.crashes[i].append((now, self.images[i]))
        budget = self.budgets[i]
        restarting = False
        if not budget[2]:  # on-failure, a fixed window opened at its first restart
            if budget[0] and now - budget[1] >= rules.retry_window_s:
                budget[0] = 0
            if not budget[0]:
                budget[1] = now
            if budget[0] >= rules.max_retries:
                budget[2] = True
            else:
                budget[0] += 1
                restarting = True
        self.write(i, "exit", "stopped", exit_fields=(
            self.sc.release.exit_code, False, False, restarting, self.starts[i] - 1))
        self.enter(i, "stopped")
        if (self.first_crash is not None and not self.first_crash.triggered
                and now >= self.at and self.images[i] == "release"):
            self.first_crash.succeed()
        if restarting:
            self.after(i, rules.restart_delay_s, self.restarted)

    def restarted(self, i: int) -> None:
        self.pending[i] = None
        if self.sc.platform.events == "fly-restart-start":  # fly-exit-start writes none
            self.write(i, "restart", "starting")
        self.enter(i, "starting")
        self.boot(i)

    def update(self, i: int, image: str) -> None:
        self.write(i, "update", "replacing", "user")
        pending = self.pending[i]
        if pending is not None:
            pending.callbacks = []
            self.pending[i] = None
        if self.states[i] in ("starting", "started"):
            self.write(i, "exit", "stopped", exit_fields=_STOPPED_EXIT)
            self.enter(i, "stopped")
        self.budgets[i] = [0, 0.0, False]
        self.begin(i, image)

    # -- the publish, the checks and the pipeline --------------------------------------
    def publish(self) -> Generator[Any, Any, None]:
        publish = self.env.timeout(self.at)
        for i in range(len(self.ids)):
            self.write(i, "launch", "created", "user")
            self.begin(i, "previous")
        yield publish
        self.pre_deploy = {m: s for m, s in zip(self.ids, self.states, strict=True)
                           if s != "created"} or None
        for i in range(len(self.ids)):
            self.update(i, "release")
        for rider in self.riders:
            if id(rider) not in self.gone:
                self.ride(rider, -1)

    def look(self) -> Look:
        at = self.ms()
        return Look(at, tuple(
            MachineSnapshot(self.ids[i], self.states[i], self.images[i] and self.image_ref(i),
                            self.view(i), at)
            for i in range(len(self.ids))), self.pre_deploy)

    def view(self, i: int) -> tuple[Event, ...]:
        view = self.views[i]
        if view is None:
            view = self.views[i] = tuple(reversed(self.logs[i]))
        return view

    def image_ref(self, i: int) -> str:
        sc = self.sc
        assert sc.previous is not None
        return sc.release.image if self.images[i] == "release" else sc.previous.image

    def reply(self, rider: _BareRider, k: int) -> float | None:
        if k + 1 < len(rider.waits):
            return rider.waits[k + 1]
        if rider.done:
            return None
        if k >= 0:
            rider.looks.append(self.look())
        step = rider.check.next(self.sc.publish_started_ms, rider.looks)
        if isinstance(step, Wait):
            rider.waits.append(step.seconds)
            return step.seconds
        assert isinstance(step, Verdict)
        rider.verdict, rider.decided_at, rider.done = step, self.env.now, True
        return None

    def ride(self, rider: _BareRider, k: int) -> None:
        while True:
            wait = self.reply(rider, k)
            if wait is None:
                self.decided(rider)
                return
            k += 1
            if wait:
                if self.acting is not None:
                    self.leave(rider)
                    return
                timeout = self.env.timeout(wait)
                timeout.callbacks.append(self.due)
                self.looks_due[id(timeout)] = (rider, k)
                return

    def due(self, event: simpy.events.Event) -> None:
        rider, k = self.looks_due.pop(id(event))
        if id(rider) not in self.gone:
            self.ride(rider, k)

    def leave(self, rider: _BareRider) -> None:
        if id(rider) not in self.gone:
            self.gone.add(id(rider))
            self.away.append(rider)

    def decided(self, rider: _BareRider) -> None:
        assert rider.verdict is not None
        action = (rider.verdict.ok, bool(getattr(rider.check, "rolls_back", True)))
        if self.acting is not None:
            if action == self.acting:
                self.members.append(rider)
                self.gone.add(id(rider))
            else:
                self.leave(rider)
            return
        self.acting = action
        self.members = [rider]
        self.gone.add(id(rider))
        # Riders whose look is the very next event of this instant look before the verdict
        # acts (SimPy's queue front, as ``sim.publish.sharing._Shared`` reads it).
        queue, env = self.env._queue, self.env
        taken = []
        while queue and queue[0][0] == env.now and id(queue[0][3]) in self.looks_due:
            entry = heapq.heappop(queue)
            other, k = self.looks_due[id(entry[3])]
            taken.append((entry, other))
            if id(other) not in self.gone:
                self.ride(other, k)
        # The others ride on in a copy of this world as it is now (as ``sim.publish.forking``
        # copies the model's), and so does the oracle after a rollback no crash proved.
        away = [r for r in self.riders if r not in self.members]
        if away or not (action[0] or self.known or self.release_crashed()):
            self.then = self.fork(away, [e for e, r in taken if r not in self.members])
        for other in away:
            self.leave(other)
        if action[0]:
            self.live = "release"
            self.site_changed()
            self.env.process(self.reconciler())
            return
        self.proved_bad = self.release_crashed()
        self.diverged = True  # restore: every machine back on the previous release
        for i in range(len(self.ids)):
            self.update(i, "previous")
        self.rollback = "restored"

    def reconciler(self) -> Generator[Any, Any, None]:
        env, interval = self.env, self.sc.reconciler.interval_s
        seen = [len(c) for c in self.crashes]
        while True:
            yield env.timeout(interval - env.now % interval)
            crashed = any(len(c) > n for c, n in zip(self.crashes, seen, strict=True))
            seen = [len(c) for c in self.crashes]
            if crashed or any(s in ("stopped", "failed", "destroyed") for s in self.states):
                self.live = None
                self.site_changed()
                self.late_failure_at_s = env.now - self.at
                stop = env.event()  # settled: nothing later changes the rows
                stop.callbacks.append(simpy.core.StopSimulation.callback)
                stop.succeed()
                return

    def release_crashed(self) -> bool:
        return any(t >= self.at and image == "release" for c in self.crashes for t, image in c)

    def fork(self, riders: list[_BareRider], taken: list[Any]) -> _BareWorld:
        """This world now in a new environment, ``riders`` riding on (their looks ``taken``
        off the queue put back): every list copied, every queued callback rebound."""
        new = _BareWorld.__new__(_BareWorld)
        new.__dict__.update(self.__dict__)
        env = simpy.Environment(self.env.now)
        new.env = env
        new.rngs = []
        for rng in self.rngs:
            stream = random.Random.__new__(random.Random)
            stream.setstate(rng.getstate())
            new.rngs.append(stream)
        new.states, new.images, new.views = list(self.states), list(self.images), list(self.views)
        new.logs = [log.copy() for log in self.logs]
        new.starts = list(self.starts)
        new.budgets = [list(b) for b in self.budgets]
        new.crashes = [list(c) for c in self.crashes]
        new.segments = list(self.segments)
        new.riders, new.members, new.away, new.gone = list(riders), [], [], set()
        new.acting, new.looks_due, new.then, new.forked = None, {}, None, True
        pending = {id(t): i for i, t in enumerate(self.pending) if t is not None}
        new.pending = [None] * len(self.pending)
        entries = list(self.env._queue) + list(taken)
        queue: list[Any] = []
        for at, priority, eid, event in entries:
            copy = simpy.Event(env)
            copy._ok, copy._value = True, None
            callbacks = event.callbacks
            if id(event) in pending:
                step = cast(_Step, callbacks[0])
                copy.callbacks = [_Step(new, step.i, step.step)]
                new.pending[pending[id(event)]] = copy
            elif id(event) in self.looks_due:
                rider, k = self.looks_due[id(event)]
                if rider not in riders:
                    continue
                copy.callbacks = [new.due]
                new.looks_due[id(copy)] = (rider, k)
            else:
                assert callbacks == [simpy.core.StopSimulation.callback], callbacks
                copy.callbacks = list(callbacks)
            heapq.heappush(queue, (at, priority, eid, copy))
        env._queue = queue
        env._eid = itertools.count(next(self.env._eid))
        return new

    def run(self) -> None:
        if self.forked:
            for rider in self.riders:  # copied in the publish's step: first answers now
                if not rider.waits and not rider.done:
                    self.ride(rider, -1)
            self.env.run()
        else:
            self.env.process(self.publish())
            self.env.run(until=self.sc.horizon_s)
        if not self.diverged:
            self.proved_bad = self.release_crashed()
        if self.acting is None:
            self.members = [r for r in self.riders if id(r) not in self.gone]
        self.away.sort(key=self.riders.index)

    def oracle(self) -> bool:
        """The ground truth as the model takes it: no check, to the first release crash."""
        env = self.env
        self.first_crash = env.event()
        env.process(self.publish())
        env.run(until=env.any_of([self.first_crash, env.timeout(self.sc.horizon_s)]))
        return self.release_crashed()

    def rest(self) -> bool:
        """The oracle from a copy on: to the first release crash, or the copied horizon."""
        self.first_crash = self.env.event()
        self.first_crash.callbacks.append(simpy.core.StopSimulation.callback)
        self.env.run()
        return self.release_crashed()

    def tally(self) -> tuple[int, int, int, int, float]:
        """requests, served, not_found, bad_gateway, down_s from the publish to the horizon."""
        start, end = self.at, self.sc.horizon_s
        time_in = {"served": 0.0, "not_found": 0.0, "bad_gateway": 0.0}
        down = 0.0
        seen_live = False
        ends = [b for b, _ in self.segments[1:]] + [end]
        for (begin, outcome), finish in zip(self.segments, ends, strict=True):
            seen_live = seen_live or outcome != "not_found"
            lo, hi = max(begin, start), min(finish, end)
            if hi > lo:
                time_in[outcome] += hi - lo
                if outcome == "not_found" and seen_live:
                    down += hi - lo
        served, not_found, bad_gateway = _bare_requests(
            self.traffic_seed, self.sc.traffic.rps, list(time_in.values()))
        return served + not_found + bad_gateway, served, not_found, bad_gateway, round(down, 3)


def twin_covers(sc: Scenario) -> None:
    """Refuse a world with a feature the twin does not simulate (it would not be a twin)."""
    rules, before = sc.platform, sc.previous
    covered = {
        "a healthy previous release, awake": before is not None and before.behavior == "healthy"
        and not before.asleep,
        "a crash_after release": sc.release.behavior == "crash_after",
        "on-failure restarts, a fixed window": rules.restart_policy == "on-failure"
        and rules.retry_window == "fixed",
        "the fly-restart-start or fly-exit-start events": rules.events in (
            "fly-restart-start", "fly-exit-start"),
        "no restart counter": not rules.restart_counter,
        "rollback restore": sc.publish.rollback == "restore",
        "publish starts stopped machines": sc.publish.start_stopped,
        "no autostart": not sc.traffic.autostart,
    }
    missing = [what for what, holds in covered.items() if not holds]
    if missing:
        raise ValueError(f"the bare twin simulates only {', '.join(missing)}")


@contextmanager
def counting_steps() -> Iterator[list[int]]:
    """Count the SimPy events every environment processes meanwhile (``[n]``), model or twin."""
    count = [0]
    step = simpy.Environment.step

    def counted(env: simpy.Environment) -> None:
        count[0] += 1
        step(env)

    simpy.Environment.step = counted  # type: ignore[method-assign, assignment]
    try:
        yield count
    finally:
        simpy.Environment.step = step  # type: ignore[method-assign]


def bare_sweep_world(sweep: Sweep, unit: int) -> list[dict[str, Any]]:
    """The bare twin of one sweep world: its rows, as ``unit_rows([unit], sweep)`` gives them.

    The point's scenario and check objects are built by the same calls the sweep makes
    (``Sweep.scenario``, ``load_checks``): input, the same on both sides. The rest is
    plain SimPy: the checks ride one world until one decides; its verdict acts; checks
    that decided otherwise ride on in a copy of the world made just before it acted;
    the oracle goes on from such a copy when no world proved the release bad; each
    world's traffic is tallied.
    """
    point, seed_index = divmod(unit, len(sweep.seeds))
    seed = sweep.seeds[seed_index]
    values = sweep.point(point)
    sc = sweep.scenario(values, validation_env())
    twin_covers(sc)
    checks = load_checks(list(sweep.checks), sc.check)
    riders = [_BareRider(c) for c in checks]
    worlds: list[_BareWorld] = []
    with gc_paused():
        world: _BareWorld | None = _BareWorld(sc, seed, riders)
        oracle = None
        while world is not None:
            world.known = any(w.proved_bad for w in worlds)
            world.run()
            worlds.append(world)
            then, world = world.then, None
            if worlds[-1].away:
                assert then is not None
                world = then
            elif then is not None:
                oracle = then
        bad = any(w.proved_bad for w in worlds)
        if not bad and not any(not w.diverged and w.env.now >= sc.horizon_s for w in worlds):
            bad = oracle.rest() if oracle is not None else _BareWorld(sc, seed).oracle()
    head: dict[str, Any] = {"point": point, "seed": seed} | dict(zip(sweep.keys, values, strict=True))
    rows: dict[int, dict[str, Any]] = {}
    for world in worlds:
        requests, served, not_found, bad_gateway, down_s = world.tally()
        for rider in world.members:
            verdict = rider.verdict
            outcome = ("undecided" if verdict is None else "blind" if not verdict.judged
                       else ("missed" if verdict.ok else "caught") if bad
                       else ("passed" if verdict.ok else "false_alarm"))
            rows[id(rider)] = head | {
                "check": rider.check.name,
                "verdict": None if verdict is None else ("pass" if verdict.ok else "fail"),
                "outcome": outcome, "release_bad": bad,
                "decided_at_s": None if verdict is None else round(rider.decided_at - world.at, 3),
                "rollback": world.rollback,
                "late_failure_at_s": None if world.late_failure_at_s is None
                else round(world.late_failure_at_s, 3),
                "down_s": down_s, "requests": requests, "served": served,
                "not_found": not_found, "bad_gateway": bad_gateway, "error": None,
            }
    return [rows[id(r)] for r in riders]


@dataclass(frozen=True)
class Paired:
    """The ratios of A's time over B's in pairs run back to back."""

    ratios: tuple[float, ...]
    a_s: float  # median seconds per call of A
    b_s: float

    @property
    def median(self) -> float:
        """The median of the pairs' ratios."""
        return statistics.median(self.ratios)

    def spread(self) -> str:
        """Quartiles with 4 pairs or more, else the range."""
        if len(self.ratios) >= 4:
            low, _, high = statistics.quantiles(self.ratios, n=4)
            return f"quartiles {low:.2f}-{high:.2f}x"
        return f"range {min(self.ratios):.2f}-{max(self.ratios):.2f}x"

    def line(self, goal: str) -> str:
        """``median 1.23x (quartiles 1.1-1.3x, 31 pairs)   (goal ...)``."""
        return (f"  ratio        {self.median:8.2f}x median of {len(self.ratios)} pairs "
                f"({self.spread()})   (goal {goal})")


def paired(a: Callable[[int], object], b: Callable[[int], object], seeds: int,
           pairs: int, first_seed: int = 0) -> Paired:
    """Run A and B on the same fresh seeds, pair after pair, the order swapped every pair.

    Each pair's ratio is A's time over B's on the same seeds a moment apart, so a burst
    of other load shifts both sides of a pair rather than one model's best round.
    """
    ratios, a_times, b_times = [], [], []
    for p in range(pairs):
        batch = range(first_seed + p * seeds, first_seed + (p + 1) * seeds)
        took = {}
        for name in ("a", "b") if p % 2 == 0 else ("b", "a"):
            fn = a if name == "a" else b
            began = time.perf_counter()
            for seed in batch:
                fn(seed)
            took[name] = (time.perf_counter() - began) / seeds
            # The batch's last world leaves its reference cycles to the collector's next
            # young pass, which would run inside the other side's timing (the 1,000-machine
            # twin's cycles hold its looks: measured 0.16-0.35 s, the model's 0.05-0.1 s):
            # collected here, untimed, so neither side pays for the other's garbage.
            gc.collect(0)
        ratios.append(took["a"] / took["b"])
        a_times.append(took["a"])
        b_times.append(took["b"])
    return Paired(tuple(ratios), statistics.median(a_times), statistics.median(b_times))


def gc_paused_too(fn: Callable[[int], object]) -> Callable[[int], object]:
    """The bare twin with the collector paused per run as ``sim.publish.world.run`` pauses it."""

    def paused(seed: int) -> object:
        with gc_paused():
            return fn(seed)

    return paused


def bench_sept25() -> None:
    """The shipped incident world: full model vs bare SimPy, per scenario."""
    sc = scenarios.load("sept25-crash-loop")
    check = make_check("count", sc.check.model_dump())
    result = paired(lambda seed: run(sc, seed, check),
                    gc_paused_too(lambda seed: bare_world(sc, seed)), 60, 31)
    print("sept25-crash-loop, count check, 31 pairs of 60 fresh seeds:")
    print(f"  full model   {result.a_s * 1e6:8.0f} us/scenario = "
          f"{1 / result.a_s:,.0f} scenarios/s per core")
    print(f"  bare SimPy   {result.b_s * 1e6:8.0f} us/scenario")
    print(result.line("<= 1.3x"))


#: Pairs of the 1,000-machine world. One pair's ratio reads anywhere from 0.67x to 1.44x on a
#: quiet machine (load 0.5-0.9; both sides' own times vary 0.67-1.1 s from run to run: the
#: host's other tenants), so a median of 15 moved 1.07x-1.14x-1.31x between runs; 25 pairs,
#: about 70 s, narrow it (the error of a median shrinks as 1/sqrt(pairs)).
LARGE_PAIRS = 25


def large_world() -> Scenario:
    """The 1,000-machine world ``bench_large`` measures."""
    return scenarios.load(
        "sept25-crash-loop",
        ["release.machines=1000", "platform.restart_policy='always'", "horizon_s=630",
         "reconciler.interval_s=100000",
         # The world this benchmark has always measured (the sept25 point before issue 19).
         "platform.restart_delay_s=0.3", "platform.boot_s=0.4", "platform.events='minimal'",
         "check.look_delay_s=10"],
    )


def bench_large() -> None:
    """1,000 machines crash-looping for 600 simulated seconds, a check polling them."""
    sc = large_world()
    check = KeepLooking(sc.check.look_delay_s)
    result = run(sc, 1, check)
    assert len(result.looks) >= 59, "the check must poll the whole horizon"
    pairs = paired(lambda seed: run(sc, seed, check),
                   gc_paused_too(lambda seed: bare_world(sc, seed)), 1, LARGE_PAIRS)
    print(f"1,000 machines crash-looping 600 s, a check looking every 10 s ({LARGE_PAIRS} pairs):")
    print(f"  full model   {pairs.a_s:8.2f} s/scenario")
    print(f"  bare SimPy   {pairs.b_s:8.2f} s/scenario")
    print(pairs.line("<= 1.2x"))
    # How much of the gap is only the events' shape: the same twin writing nine-field events.
    shaped = paired(lambda seed: run(sc, seed, check),
                    gc_paused_too(lambda seed: bare_world(sc, seed, fly_events=True)),
                    1, LARGE_PAIRS, first_seed=LARGE_PAIRS)
    print(f"  against the bare twin writing Fly-shaped events (nine fields, ms stamps): "
          f"{shaped.median:.2f}x median of {len(shaped.ratios)} pairs ({shaped.spread()})")


def _sweep_worlds(sweep: Sweep, count: int) -> list[int]:
    """``count`` units of the sweep drawn at random (fixed seed), so every pair mixes
    fast and slow points alike."""
    rng = random.Random(22)
    return [rng.randrange(sweep.units) for _ in range(count)]


def bench_sweep_world(pairs: int = 25, per_pair: int = 40) -> None:
    """A sweep world with its checks (as the sweep runs it) vs its bare twin's rows."""
    sweep = load_sweep(ROOT / "scenarios" / "sweeps" / "crash_period_vs_look_delay.toml")
    units = _sweep_worlds(sweep, pairs * per_pair)
    # The two do the same work, provably: the twin's rows (verdicts, decided times,
    # rollback, late failure, ground truth, traffic counts) equal the model's for every
    # world the pairs time, checked before the timing.
    # The SimPy events each side processes are counted too: equal, the same simulated work.
    for unit in units:
        with counting_steps() as model_events:
            model_rows = unit_rows([unit], sweep)
        with counting_steps() as twin_events:
            twin_rows = bare_sweep_world(sweep, unit)
        assert twin_rows == model_rows, f"unit {unit}: twin {twin_rows} != model {model_rows}"
        assert twin_events == model_events, f"unit {unit}: {twin_events} != {model_events} events"

    def model(i: int) -> object:
        return unit_rows([units[i]], sweep)

    def twin(i: int) -> object:
        return bare_sweep_world(sweep, units[i])

    result = paired(model, twin, per_pair, pairs)
    print(f"a world of sweep {sweep.name} with its {len(sweep.checks)} checks, "
          f"{pairs} pairs of {per_pair} random worlds (rows equal in all {len(units)}):")
    print(f"  sweep world  {result.a_s * 1e6:8.0f} us/world = {1 / result.a_s:,.0f} worlds/s "
          "per core (point, checks, worlds, oracle, traffic, rows)")
    print(f"  bare twin    {result.b_s * 1e6:8.0f} us/world (the same work in plain SimPy)")
    print(result.line("<= 1.5x"))


def _burn(n: int) -> float:
    began = time.perf_counter()
    total = 0
    for i in range(n):
        total += i * i
    return time.perf_counter() - began


def burn_speedup() -> float:
    """What 2 processes get over 1 right now for pure Python work: the machine's share."""
    import multiprocessing  # noqa: PLC0415

    n = 8_000_000
    with multiprocessing.get_context("forkserver").Pool(2) as pool:
        pool.map(_burn, [1, 1])  # workers up and imported before the clock starts
        one = _burn(n)
        began = time.perf_counter()
        pool.map(_burn, [n, n], chunksize=1)
        two = time.perf_counter() - began
    return 2 * one / two


def bench_sweep(rounds: int = 3) -> None:
    """The shipped 10,000-point sweep on 1 process and on 2 local workers, best of rounds."""
    sweep = load_sweep(ROOT / "scenarios" / "sweeps" / "crash_period_vs_look_delay.toml")
    before = burn_speedup()
    ones: list[SweepResult] = []
    twos: list[SweepResult] = []
    for r in range(rounds):
        pair = [(ones, 1), (twos, 2)]
        for times, workers in pair if r % 2 == 0 else reversed(pair):
            result = run_sweep(sweep, workers=workers)
            times.append(result)
    after = burn_speedup()
    one = min(ones, key=lambda result: result.elapsed_s)
    two = min(twos, key=lambda result: result.elapsed_s)
    assert one.rows == two.rows
    print(f"sweep {sweep.name}: {sweep.units:,} worlds x {len(sweep.checks)} checks, "
          f"best of {rounds} alternating rounds")
    print(f"  1 worker     {one.elapsed_s:8.2f} s  ({sweep.units / one.elapsed_s:,.0f} worlds/s)")
    print(f"  2 workers    {two.elapsed_s:8.2f} s  ({two.tasks} tasks of {two.per_task} worlds, "
          "pool start-up included)")
    print(f"  speed-up     {one.elapsed_s / two.elapsed_s:8.2f}x   (goal >= 1.7x)")
    print(f"  control: a pure-Python loop gets {before:.2f}x before and {after:.2f}x after on "
          "2 processes (other users' load)")


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (how shared the machine is right now)."""
    if not hasattr(os, "getloadavg"):
        return "load average unknown"
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    """Run the measurements and print them."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"python {sys.version.split()[0]}, simpy {simpy.__version__}, {cores} cores, "
          f"{load_average()} at start")
    asked = sys.argv[1:] or ["sept25", "large", "sweep-world", "sweep"]
    benches = {"sept25": bench_sept25, "large": bench_large, "sweep-world": bench_sweep_world,
               "sweep": bench_sweep}
    for name in asked:
        benches[name]()
    print(f"{load_average()} at end")


if __name__ == "__main__":
    main()
