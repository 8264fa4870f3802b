"""One simulated world: the app's machines, the publish driving one check, reconciler, site."""

from __future__ import annotations

import functools
import random
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import simpy

from checks import Check, Event, Look, Verdict, Wait
from sim.platform.machine import Image, Machine, PlatformRules, Tie
from sim.publish.clock import LazyClock, gc_paused
from sim.publish.site import DOWN_STATES, DeferredSite, Site, SiteTally
from sim.scenario import PlatformTable, PreviousTable, ReleaseTable, Scenario

# A check that keeps asking for looks without deciding is a broken check, not a slow one.
MAX_LOOKS = 10_000


@dataclass(frozen=True, slots=True)
class RecordedLook:
    """A look as the check saw it, plus what the platform hid from it (dropped events)."""

    look: Look
    dropped: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MachineTrace:
    """Everything one machine did in a run: state changes and every event, none dropped."""

    id: str
    states: tuple[tuple[float, str], ...]
    events: tuple[Event, ...]


@dataclass(frozen=True, slots=True)
class Trace:
    """The full story of a run, for timelines: times in simulated seconds from 0."""

    publish_at_s: float
    horizon_s: float
    epoch_ms: int
    machines: tuple[MachineTrace, ...]
    site: tuple[tuple[float, str], ...]
    previous_image: str | None
    release_image: str


@dataclass
class RunResult:
    """What one check concluded in one world, and what that cost the site."""

    check: str
    seed: int
    verdict: Verdict | None
    decided_at_s: float | None
    rollback: str | None
    late_failure_at_s: float | None
    site: SiteTally
    looks: list[RecordedLook]
    bad: bool
    error: str | None = None
    trace: Trace | None = None

    @property
    def outcome(self) -> str:
        """caught / missed / passed / false_alarm, against the behaviour's ground truth."""
        if self.error is not None:
            return "error"
        if self.verdict is None:
            return "undecided"
        if not self.verdict.judged:
            return "blind"
        if self.bad:
            return "missed" if self.verdict.ok else "caught"
        return "passed" if self.verdict.ok else "false_alarm"


@dataclass
class World:
    """The simulated platform of one run, before or after it ran."""

    scenario: Scenario
    seed: int
    #: SimPy for eager machines; a lazy world's few processes run on a ``LazyClock``.
    env: simpy.Environment | LazyClock
    machines: list[Machine]
    site: Site
    traffic_seed: int
    previous: Image | None
    release: Image
    publish_at_s: float
    looks: list[RecordedLook] = field(default_factory=list)
    verdict: Verdict | None = None
    decided_at_s: float | None = None
    rollback: str | None = None
    late_failure_at_s: float | None = None
    error: str | None = None
    #: Stop simulating once nothing later can change the run's result (off for traces).
    stop_when_settled: bool = False
    #: Set when the run itself proved the release bad before it touched the machines.
    proved_bad: bool = False
    #: Set once a rollback changed the machines: from then on the run is no oracle.
    diverged: bool = False

    @property
    def traffic_rng(self) -> random.Random:
        """The traffic's own random stream (requests are drawn after the run)."""
        return random.Random(self.traffic_seed)

    def settle(self) -> None:
        """Nothing from now on can change the result: end the run here if allowed."""
        if self.stop_when_settled:
            if isinstance(self.env, LazyClock):
                self.env.stop()
                return
            stop = self.env.event()
            stop.callbacks.append(simpy.core.StopSimulation.callback)
            stop.succeed()

    @property
    def publish_started_ms(self) -> int:
        """The platform time at which the publish began."""
        return self.scenario.platform.epoch_ms + round(self.publish_at_s * 1000)


def _parts(scenario: Scenario) -> tuple[PlatformRules, Image | None, Image]:
    """The immutable pieces a scenario's worlds share, built once per distinct tables."""
    return _built_parts(scenario.platform, scenario.previous, scenario.release)


@functools.lru_cache(maxsize=256)
def _built_parts(
    platform: PlatformTable, previous: PreviousTable | None, release: ReleaseTable
) -> tuple[PlatformRules, Image | None, Image]:
    # The tables are frozen pydantic models: hashable, and equal when their values are.
    before = Image(previous.image, previous.as_behavior()) if previous is not None else None
    return platform.rules(), before, Image(release.image, release.as_behavior())


def build(scenario: Scenario, seed: int, trace: bool = False) -> World:
    """Lay out the world: machines running the previous release (or nothing), the site."""
    return _build(scenario, seed, trace, lazy=False)


def _build(scenario: Scenario, seed: int, trace: bool, lazy: bool) -> World:
    env = LazyClock() if lazy else simpy.Environment()
    root = random.Random(seed)
    # Child streams drawn in a fixed order: each machine and the traffic get their own,
    # so a check's actions never shift another part of the world's randomness.
    machine_rngs = [random.Random(root.getrandbits(64)) for _ in range(scenario.release.machines)]
    traffic_seed = root.getrandbits(64)
    rules, previous, release = _parts(scenario)
    site = (DeferredSite if lazy else Site)(env, live="previous" if previous else None)
    width = len(str(scenario.release.machines))
    # A lazy machine reports its started/stopped flips straight into the deferred site.
    flips = site.flips if isinstance(site, DeferredSite) else None
    machines = [
        Machine(
            env, f"m{i:0{width}d}", rules, rng,
            on_state=None if flips is not None else site.machine_changed,
            trace=trace, lazy=lazy, flips=flips,
        )
        for i, rng in enumerate(machine_rngs, start=1)
    ]
    return World(
        scenario, seed, env, machines, site, traffic_seed, previous, release, scenario.publish.at_s
    )


def _catch_up(world: World) -> None:
    """Bring lazy machines to now before anything reads them (no-op when eager)."""
    now = world.env.now
    for machine in world.machines:
        if machine.lazy:
            machine.advance(now)


def _look(world: World) -> RecordedLook:
    machines = world.machines
    now = world.env.now
    at_ms = machines[0].now_ms()
    snapshots = tuple([m.snapshot_at(now, at_ms) for m in machines])
    return RecordedLook(Look(at_ms, snapshots), tuple([m.log.dropped for m in machines]))


def _previous_release(world: World) -> Generator[Any, Any, None]:
    """Launch the previous release at time 0; put it to sleep before the publish if asleep."""
    if world.previous is None:
        return
    for machine in world.machines:
        machine.launch(world.previous)
    assert world.scenario.previous is not None
    if world.scenario.previous.asleep:
        yield world.env.timeout(world.publish_at_s / 2)
        for machine in world.machines:
            machine.sleep()


def _publish(world: World, check: Check | None) -> Generator[Any, Any, None]:
    env = world.env
    yield env.timeout(world.publish_at_s)
    for machine in world.machines:
        if machine.state == "created":
            machine.launch(world.release)
        else:
            machine.update(world.release)
    if check is None:
        return
    started_ms = world.publish_started_ms
    looks: list[Look] = []
    while True:
        try:
            step = check.next(started_ms, looks)
        except Exception as error:  # a user's check may raise anything: it is its outcome
            world.error = f"check raised {type(error).__name__}: {error}"
            return
        if isinstance(step, Verdict):
            break
        if not isinstance(step, Wait) or not step.seconds >= 0:
            world.error = f"check returned {step!r}; expected Wait(seconds >= 0) or Verdict"
            return
        if len(looks) >= MAX_LOOKS:
            world.error = f"check took {MAX_LOOKS} looks without a verdict"
            return
        if step.seconds:
            yield env.timeout(step.seconds)
        recorded = _look(world)
        world.looks.append(recorded)
        looks.append(recorded.look)
    world.verdict = step
    world.decided_at_s = env.now - world.publish_at_s
    if step.ok:
        world.site.set_live("release")
        env.process(_reconciler(world))
        return
    # The rollback changes the machines: what the run saw so far is what the oracle sees.
    _catch_up(world)
    world.proved_bad = release_crashes(world)
    world.diverged = True
    if world.scenario.publish.rollback == "delete":
        for machine in world.machines:
            machine.destroy()
        world.site.set_live(None)
        world.rollback = "deleted"
    elif world.previous is not None:
        for machine in world.machines:
            machine.update(world.previous)
        world.rollback = "restored"
    if world.site.live is None:
        # Nothing can make a release live again: the site serves 404 to the horizon.
        world.settle()


def _reconciler(world: World) -> Generator[Any, Any, None]:
    """Every interval, fail the live release if a machine is down or crashed since last pass.

    It sees the platform as it is (every crash, uncapped), not through a check's looks.
    Its passes run on the platform's schedule, not from the moment the release went live.
    """
    env = world.env
    interval = world.scenario.reconciler.interval_s
    _catch_up(world)
    seen = [len(m.crashes) for m in world.machines]
    while True:
        yield env.timeout(interval - env.now % interval)
        _catch_up(world)
        crashed = [len(m.crashes) > n for m, n in zip(world.machines, seen, strict=True)]
        seen = [len(m.crashes) for m in world.machines]
        if any(crashed) or any(m.state in DOWN_STATES for m in world.machines):
            world.site.set_live(None)
            world.late_failure_at_s = env.now - world.publish_at_s
            world.settle()
            return


def release_crashes(world: World) -> bool:
    """Ground truth: did any machine crash while running the new release after the publish?"""
    ref = world.release.ref
    return any(
        t >= world.publish_at_s and image == ref for m in world.machines for t, image in m.crashes
    )


def ground_truth(scenario: Scenario, seed: int) -> bool:
    """Run the world with no check and no rollback: is the release bad within the horizon?"""
    world = build(scenario, seed)
    env = world.env
    assert isinstance(env, simpy.Environment)
    env.process(_previous_release(world))
    env.process(_publish(world, None))
    first_crash = env.event()

    def watch(machine: Machine) -> None:
        # Only the machine that changed can have a new crash: no scan of the whole fleet.
        if not first_crash.triggered and machine.crashes:
            t, image = machine.crashes[-1]
            if image == world.release.ref and t >= world.publish_at_s:
                first_crash.succeed()

    for machine in world.machines:
        machine.on_state = watch
    env.run(until=env.any_of([first_crash, env.timeout(scenario.horizon_s)]))
    return release_crashes(world)


def _trace(world: World) -> Trace:
    return Trace(
        publish_at_s=world.publish_at_s,
        horizon_s=world.scenario.horizon_s,
        epoch_ms=world.scenario.platform.epoch_ms,
        machines=tuple(
            MachineTrace(m.id, tuple(m.history or ()), tuple(m.all_events or ()))
            for m in world.machines
        ),
        site=tuple(world.site.segments),
        previous_image=world.previous.ref if world.previous else None,
        release_image=world.release.ref,
    )


def _simulate(scenario: Scenario, seed: int, check: Check, trace: bool) -> World:
    if not trace:
        try:
            return _simulate_in(_build(scenario, seed, trace=False, lazy=True), check, trace)
        except Tie:
            pass  # two things at one instant: only SimPy's event order can settle it
    return _simulate_in(_build(scenario, seed, trace=trace, lazy=False), check, trace)


def _simulate_in(world: World, check: Check, trace: bool) -> World:
    world.stop_when_settled = not trace
    env = world.env
    env.process(_previous_release(world))
    env.process(_publish(world, check))
    env.run(until=world.scenario.horizon_s)
    for machine in world.machines:
        if machine.lazy:
            machine.finish(env.now)
    world.site.finalize()
    if not world.diverged:
        # No rollback touched the machines: they did what they do with no check at all.
        world.proved_bad = release_crashes(world)
    return world


def _result(world: World, check: Check, bad: bool, trace: bool) -> RunResult:
    scenario = world.scenario
    tally = world.site.tally_seeded(
        world.publish_at_s, scenario.horizon_s, scenario.traffic.rps, world.traffic_seed
    )
    return RunResult(
        check=getattr(check, "name", type(check).__name__),
        seed=world.seed,
        verdict=world.verdict,
        decided_at_s=world.decided_at_s,
        rollback=world.rollback,
        late_failure_at_s=world.late_failure_at_s,
        site=tally,
        looks=world.looks,
        bad=bad,
        error=world.error,
        trace=_trace(world) if trace else None,
    )


def run(
    scenario: Scenario, seed: int, check: Check, bad: bool | None = None, trace: bool = False
) -> RunResult:
    """Run one world with one check to the horizon and classify the outcome.

    ``trace`` keeps every state change and event (uncapped) for timelines; it costs
    memory, so sweeps leave it off. Without it a run ends as soon as its result is
    settled. The ground truth is the oracle's (``ground_truth``) unless the run itself
    saw the release crash before any rollback, which the oracle would have seen too.
    """
    with gc_paused():  # the world is garbage once _run returns: collected with the rest
        return _run(scenario, seed, check, bad, trace)


def _run(scenario: Scenario, seed: int, check: Check, bad: bool | None, trace: bool) -> RunResult:
    world = _simulate(scenario, seed, check, trace)
    if bad is None:
        bad = world.proved_bad or ground_truth(scenario, seed)
    return _result(world, check, bad, trace)


def run_checks(scenario: Scenario, seed: int, checks: Sequence[Check]) -> list[RunResult]:
    """Every check in the same world (same seed), judged against one ground truth.

    The same results as ``run`` for each check; the oracle runs at most once, and only
    when no check's run proved the release bad by itself.
    """
    with gc_paused():
        return _run_checks(scenario, seed, checks)


def _run_checks(scenario: Scenario, seed: int, checks: Sequence[Check]) -> list[RunResult]:
    worlds = [_simulate(scenario, seed, check, trace=False) for check in checks]
    bad = any(w.proved_bad for w in worlds) or ground_truth(scenario, seed)
    return [_result(w, c, bad, trace=False) for w, c in zip(worlds, checks, strict=True)]
