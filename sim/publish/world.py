"""One simulated world: the app's machines, the publish driving one check, reconciler, site.

Inputs: the scenario (frozen) and a seed; state: ``_World`` while SimPy runs; out: ``RunResult``.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import simpy

from platform_testbed.checks import Check, Look, Verdict
from platform_testbed.checks.drive import CheckFailed, check_name, drive
from platform_testbed.checks.protocol import prepare
from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.config.scenario import Scenario
from platform_testbed.sim.platform.machine import Image, Machine
from platform_testbed.sim.publish.deploying import drive_publish, record_failure
from platform_testbed.sim.publish.gcpause import gc_paused
from platform_testbed.sim.publish.runresult import MachineTrace, RecordedLook, RunResult, Trace
from platform_testbed.sim.publish.site import DOWN_STATES, Site, SiteTally

# The result types live in ``sim.publish.runresult``; importable from here as before.
__all__ = [
    "MachineTrace", "RecordedLook", "RunResult", "Trace", "build", "conclude", "ground_truth",
    "release_crashes", "run", "run_checks", "start_previous",
]


@dataclass(eq=False)
class _World:
    """A run in progress: the platform of one world and what has happened so far."""

    scenario: Scenario
    seed: int
    env: simpy.Environment
    machines: list[Machine]
    site: Site
    traffic_seed: int
    proxy_seed: int
    previous: Image | None
    release: Image
    looks: list[RecordedLook] = field(default_factory=list)
    verdict: Verdict | None = None
    decided_at_s: float | None = None
    rollback: str | None = None
    late_failure_at_s: float | None = None
    error: str | None = None
    error_detail: str | None = None
    #: Stop simulating once nothing later can change the run's result (off for traces).
    stop_when_settled: bool = False
    #: Set when the run itself saw the release crash before any rollback.
    proved_bad: bool = False
    #: Set once a rollback changed the machines: from then on the run is no oracle.
    diverged: bool = False
    waking: bool = False  # fly-proxy's autostart ([traffic] autostart) is on its way
    #: Each machine's state just before the roll (those that existed): what a deploy
    #: tool's List showed then; every look after the publish carries it (``Look.pre_deploy``).
    pre_deploy: dict[str, str] | None = None
    _proxy_rng: random.Random | None = None

    @property
    def proxy_rng(self) -> random.Random:
        """fly-proxy's own stream (request arrivals), made only if it is used."""
        if self._proxy_rng is None:
            self._proxy_rng = random.Random(self.proxy_seed)
        return self._proxy_rng

    @property
    def publish_at_s(self) -> float:
        """When the publish begins (simulated seconds)."""
        return self.scenario.publish.at_s

    def settle(self) -> None:
        """Nothing from now on can change the result: end the run here if allowed."""
        if self.stop_when_settled:
            stop = self.env.event()
            stop.callbacks.append(simpy.core.StopSimulation.callback)
            stop.succeed()


def build(scenario: Scenario, seed: int, trace: bool = False) -> _World:
    """Lay out a world: machines (not yet launched), site, and the streams of randomness."""
    env = simpy.Environment()
    root = random.Random(seed)
    # Child streams drawn in a fixed order: each machine and the traffic get their own,
    # so a check's actions never shift another part of the world's randomness.
    machine_rngs = [random.Random(root.getrandbits(64)) for _ in range(scenario.release.machines)]
    traffic_seed = root.getrandbits(64)
    proxy_seed = root.getrandbits(64)
    before = scenario.previous
    previous = Image(before.image, before) if before is not None else None
    release = Image(scenario.release.image, scenario.release)
    site = Site(env, live="previous" if previous else None)
    width = len(str(scenario.release.machines))
    machines = [
        Machine(env, f"m{i:0{width}d}", scenario.platform, rng, serving=site,
                trace=trace)
        for i, rng in enumerate(machine_rngs, start=1)
    ]
    world = _World(scenario, seed, env, machines, site, traffic_seed, proxy_seed, previous, release)
    if scenario.traffic.autostart and scenario.traffic.rps > 0:
        def autostart(machine: Machine) -> None:
            if machine.state == "stopped":
                _on_stopped(world)
        for machine in machines:
            machine.on_state = autostart
    return world


def _look(world: _World) -> RecordedLook:
    machines = world.machines
    at_ms = world.scenario.platform.epoch_ms + round(world.env.now * 1000)
    return RecordedLook(
        Look(at_ms, tuple([m.snapshot(at_ms) for m in machines]), world.pre_deploy),
        tuple([m.log.dropped for m in machines]),
    )


def _previous_release(world: _World) -> Generator[Any, Any, None]:
    """Launch a previous release that falls asleep at time 0, and autostop it before the
    publish (``_start`` runs it only then)."""
    assert world.previous is not None
    for machine in world.machines:
        machine.launch(world.previous)
    yield world.env.timeout(world.publish_at_s / 2)
    for machine in world.machines:
        machine.sleep()


def start_previous(world: _World) -> None:
    """Start the previous release as ``_start`` does, with no publish: a client publishes.

    For ``sim.twin``, where a deploy step (or the twin on its behalf) updates the machines.
    """
    if world.previous is None:
        return
    before = world.scenario.previous
    if before is not None and before.asleep:
        world.env.process(_previous_release(world))
    else:
        for machine in world.machines:
            machine.launch(world.previous)


def _on_stopped(world: _World) -> None:
    # Requests reach the app only from the publish on: a machine that autostopped before
    # it did so because nobody called it (that is why it was asleep).
    if not world.waking and world.env.now >= world.publish_at_s:
        world.waking = True
        world.env.process(_autostart(world))


def _autostart(world: _World) -> Generator[Any, Any, None]:
    """fly-proxy: the next request to a live app with no started machine starts one.

    superfly/docs reference/fly-proxy-autostop-autostart: a stopped machine is started
    when a request arrives and none runs. Requests are Poisson (rate ``rps``): the next
    one comes after an exponential wait, drawn from the proxy's own stream.
    """
    yield world.env.timeout(world.proxy_rng.expovariate(world.scenario.traffic.rps))
    world.waking = False
    if world.site.live is None or world.site.serving:
        return
    for machine in world.machines:
        if machine.state == "stopped":
            machine.wake()
            return


def _start(world: _World, check: Check | None, budget: CheckBudget = DEFAULT_CHECK_BUDGET) -> None:
    """Start the previous release (at time 0) and the publish (at ``publish.at_s``).

    A previous release that does not fall asleep needs no process of its own: the
    publish's process launches it in its first step, before it waits for the publish,
    which schedules every later event in the order the two processes gave them (the
    previous release's process ran first and only launched, then the publish's waited).
    """
    env = world.env
    before = world.scenario.previous
    if before is not None and before.asleep:
        env.process(_previous_release(world))
        env.process(_publish(world, check, budget))
    else:
        env.process(_publish(world, check, budget, launch_previous=True))


def _roll(
    world: _World, launch_previous: bool, update: bool = True
) -> Generator[Any, Any, None]:
    """The publish up to its check: wait for ``publish.at_s``, roll the release out.

    ``update`` False leaves the machines as they are: a deploying check updates them
    (``sim.publish.deploying``).
    """
    env = world.env
    publish = env.timeout(world.publish_at_s)
    if launch_previous and world.previous is not None:
        # After the publish's timeout, as the previous release's own process did: its
        # machines' boots come after it in the same instant.
        for machine in world.machines:
            machine.launch(world.previous)
    yield publish
    # A machine still ``created`` does not exist yet for the platform: the roll launches it.
    world.pre_deploy = {m.id: m.state for m in world.machines if m.state != "created"} or None
    if update:
        update_machines(world, world.machines)


def update_machines(world: _World, machines: Sequence[Machine]) -> None:
    """Roll the release onto ``machines`` now: launch a new one, update the others."""
    start_stopped = world.scenario.publish.start_stopped
    for machine in machines:
        if machine.state == "created":
            machine.launch(world.release)
        else:
            machine.update(world.release, start=start_stopped)
    after_roll(world)


def after_roll(world: _World) -> None:
    """A machine the roll left asleep is woken by the next request (``[traffic] autostart``).

    ``_roll``'s last step, and the twin's after its own publish or a client's update.
    """
    if world.scenario.traffic.autostart and any(m.state == "stopped" for m in world.machines):
        _on_stopped(world)


def _publish(
    world: _World, check: Check | None, budget: CheckBudget, launch_previous: bool = False
) -> Generator[Any, Any, None]:
    env = world.env
    deploys = False
    if check is not None:  # the seed and the update duty reach a check that takes them
        check, deploys = prepare(check, world.seed, updates=True)
    yield from _roll(world, launch_previous, update=not deploys)
    if check is None:
        return
    if deploys:
        yield from drive_publish(
            world, check, budget, look=lambda: _look(world),
            update=partial(update_machines, world),
            conclude=lambda verdict: conclude(world, verdict, getattr(check, "rolls_back", True)))
        return
    # The budget's wrapper is the driver's alone: the check itself is what the run reports.
    steps = drive(budget.guard(check), world.scenario.publish_started_ms, budget.max_looks)
    try:
        wait = next(steps)
        while True:
            if wait:
                yield env.timeout(wait)
            recorded = _look(world)
            world.looks.append(recorded)
            wait = steps.send(recorded.look)
    except StopIteration as done:
        verdict: Verdict = done.value
    except CheckFailed as failed:
        record_failure(world, failed)
        return
    conclude(world, verdict, getattr(check, "rolls_back", True))


def conclude(world: _World, verdict: Verdict, rolls_back: bool = True) -> None:
    """The pipeline's step once the verdict is in: go live (and reconcile) or roll back.

    Also the step a process judging the publish hands its exit status to (``sim.twin.step``).
    """
    env = world.env
    world.verdict = verdict
    world.decided_at_s = env.now - world.publish_at_s
    _act(world, verdict, rolls_back)


def _act(world: _World, verdict: Verdict, rolls_back: bool) -> None:
    """What the publish does with a verdict: mark the release live, or fail it."""
    env = world.env
    if verdict.ok:
        world.site.set_live("release")
        env.process(_reconciler(world))
        return
    world.proved_bad = release_crashes(world)
    if not rolls_back:
        # The deploy tool stops and leaves the machines as they are (flyctl's rolling
        # strategy): they keep serving whatever they run.
        world.rollback = "none"
        world.site.set_live("release")
        return
    # The rollback changes the machines: what the run saw so far is what the oracle sees.
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


def _reconciler(world: _World) -> Generator[Any, Any, None]:
    """Every interval, fail the live release if a machine is down or crashed since last pass.

    It sees the platform as it is (every crash, uncapped), not through a check's looks.
    Its passes run on the platform's schedule, not from the moment the release went live.
    """
    env = world.env
    interval = world.scenario.reconciler.interval_s
    seen = [len(m.crash_times) for m in world.machines]
    while True:
        yield env.timeout(interval - env.now % interval)
        crashed = [len(m.crash_times) > n for m, n in zip(world.machines, seen, strict=True)]
        seen = [len(m.crash_times) for m in world.machines]
        if any(crashed) or any(m.state in DOWN_STATES for m in world.machines):
            world.site.set_live(None)
            world.late_failure_at_s = env.now - world.publish_at_s
            world.settle()
            return


def release_crashes(world: _World) -> bool:
    """Ground truth: did any machine crash while running the new release after the publish?"""
    ref = world.release.ref
    at = world.publish_at_s
    pairs = (zip(m.crash_times, m.crash_images, strict=True) for m in world.machines)
    return any(t >= at and image == ref for crashes in pairs for t, image in crashes)


def ground_truth(scenario: Scenario, seed: int) -> bool:
    """The same world with no check and no rollback: does the release crash by the horizon?"""
    world = build(scenario, seed)
    env = world.env
    _start(world, None)
    first_crash = env.event()
    ref, at = world.release.ref, world.publish_at_s
    hooks = {m.id: m.on_state for m in world.machines}

    def watch(machine: Machine) -> None:
        hook = hooks[machine.id]
        if hook is not None:
            hook(machine)
        # Only the machine that changed can have a new crash: no scan of the whole fleet.
        times, images = machine.crash_times, machine.crash_images
        if not first_crash.triggered and times and times[-1] >= at and images[-1] == ref:
            first_crash.succeed()

    for machine in world.machines:
        machine.on_state = watch
    env.run(until=env.any_of([first_crash, env.timeout(scenario.horizon_s)]))
    return release_crashes(world)


def _trace(world: _World) -> Trace:
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


def _simulate(
    scenario: Scenario, seed: int, check: Check, trace: bool, budget: CheckBudget
) -> _World:
    world = build(scenario, seed, trace)
    world.stop_when_settled = not trace
    env = world.env
    _start(world, check, budget)
    env.run(until=scenario.horizon_s)
    if not world.diverged:
        # No rollback touched the machines: they did what they do with no check at all.
        world.proved_bad = release_crashes(world)
    return world


def _result(world: _World, check: Check, bad: bool, trace: bool) -> RunResult:
    scenario = world.scenario
    tally = world.site.tally(
        world.publish_at_s, scenario.horizon_s, scenario.traffic.rps, world.traffic_seed
    )
    looks = tuple(world.looks)
    world.looks.clear()  # out of the world's reference cycles: freed with the result (gc_paused)
    return RunResult(
        check=check_name(check),
        seed=world.seed,
        verdict=world.verdict,
        decided_at_s=world.decided_at_s,
        rollback=world.rollback,
        late_failure_at_s=world.late_failure_at_s,
        site=tally,
        looks=looks,
        bad=bad,
        error=world.error,
        error_detail=world.error_detail,
        trace=_trace(world) if trace else None,
    )


def run(
    scenario: Scenario,
    seed: int,
    check: Check,
    bad: bool | None = None,
    trace: bool = False,
    *,
    budget: CheckBudget = DEFAULT_CHECK_BUDGET,
) -> RunResult:
    """Run one world with one check to the horizon and classify the outcome.

    ``trace`` keeps every state change and event (uncapped) for timelines; it costs
    memory, so sweeps leave it off. Without it a run ends as soon as its result is
    settled. The ground truth is the oracle's (``ground_truth``) unless the run itself
    saw the release crash before any rollback, which the oracle would have seen too.
    ``budget``: the wall-clock limit on a user's check and the looks any check may take.
    """
    with gc_paused():
        world = _simulate(scenario, seed, check, trace, budget)
        if bad is None:
            bad = world.proved_bad or ground_truth(scenario, seed)
        return _result(world, check, bad, trace)


#: ``run_checks`` shares worlds while sharing saves at least this share of them; below, it
#: gives each check a world of its own. Measured (process time, paired, issue 22): where the
#: checks all decide apart, sharing simulates as many worlds and costs more (6 built-ins in
#: sept25-crash-loop: 6.0 worlds a seed, shared 1.14x a world per check, quartiles
#: 1.09-1.17x; benchmarks/bench_sharing.py); a sweep world of crash_period_vs_look_delay
#: takes 1.13 worlds for its 2 checks.
SHARE_MIN_SAVING = 0.1
#: Past this many calls without sharing it is tried again, as the worlds may have changed.
SHARE_PROBE_EVERY = 32


@dataclass(slots=True)
class _Gain:
    """What sharing has saved for one list of checks in this process (a running mean)."""

    worlds: float = 0.0  # worlds simulated per check, in the calls that shared
    shared: int = 0
    since: int = 0  # calls since the last that shared

    def share(self) -> bool:
        """Whether this call shares: yes while learning, while it pays, and now and then."""
        if self.shared < 4 or self.worlds <= 1.0 - SHARE_MIN_SAVING:
            return True
        self.since += 1
        return self.since >= SHARE_PROBE_EVERY

    def saw(self, worlds: int, checks: int) -> None:
        """One call shared, and simulated ``worlds`` worlds for ``checks`` checks."""
        weight = 1 / min(self.shared + 1, 16)  # the recent past counts most
        self.worlds += (worlds / checks - self.worlds) * weight
        self.shared += 1
        self.since = 0


#: Per list of check names (the scenario changes from world to world in a sweep).
_GAINS: dict[tuple[str, ...], _Gain] = {}


def run_checks(
    scenario: Scenario, seed: int, checks: Sequence[Check],
    budget: CheckBudget = DEFAULT_CHECK_BUDGET, share: bool | None = None,
) -> list[RunResult]:
    """Every check in the same world (same seed), judged against one ground truth.

    The same results as ``run`` for each check, byte for byte, from fewer simulations:
    the checks ride one world side by side until one decides (``_Shared``); those that
    decide the same thing in the same step share the rest of it, the others ride a new
    world of the same seed that replays what they asked so far. The oracle runs at most
    once, and only when no world proved the release bad by itself.

    Sharing costs a little where it saves nothing (every check decides apart), so by
    default (``share=None``) it is used while it saves ``SHARE_MIN_SAVING`` of the worlds
    for these checks in this process; the results are the same either way.
    """
    if 0 < sum(map(_alone, checks)) < len(checks):
        return _beside(scenario, seed, checks, budget, share)
    gain = None
    if share is None and len(checks) > 1:
        key = tuple(check_name(c) for c in checks)
        gain = _GAINS.get(key) or _GAINS.setdefault(key, _Gain())
        share = gain.share()
    with gc_paused():
        if any(map(_alone, checks)) or (not share and len(checks) > 1):
            alone = [_simulate(scenario, seed, check, False, budget) for check in checks]
            bad = any(w.proved_bad for w in alone) or ground_truth(scenario, seed)
            return [_result(w, check, bad, False) for w, check in zip(alone, checks, strict=True)]
        # The budget's wrapper is the driver's alone: the check itself is what the run reports.
        riders = [
            _Rider(check, drive(budget.guard(check), scenario.publish_started_ms, budget.max_looks))
            for check in checks
        ]
        worlds: list[_Shared] = []
        waiting = riders
        while waiting:
            shared = _Shared(build(scenario, seed), waiting)
            shared.run()
            worlds.append(shared)
            waiting = shared.away
        if gain is not None:
            gain.saw(len(worlds), len(checks))
        bad = any(w.world.proved_bad for w in worlds) or ground_truth(scenario, seed)
        results: dict[int, RunResult] = {}
        for shared in worlds:
            tally = shared.world.site.tally(shared.world.publish_at_s, scenario.horizon_s,
                                            scenario.traffic.rps, shared.world.traffic_seed)
            for rider in shared.members:
                results[id(rider)] = rider.result(shared.world, tally, seed, bad)
        return [results[id(rider)] for rider in riders]


def _alone(check: Check) -> bool:
    """A check that deploys or draws from the run's seed (``for_driver``) rides no shared world.

    Its updates change the world the others would see, and a shared world's riders are
    driven without the seed and the update duty (``sim.publish.deploying``).
    """
    return getattr(type(check), "for_driver", None) is not None


def _beside(
    scenario: Scenario, seed: int, checks: Sequence[Check], budget: CheckBudget,
    share: bool | None,
) -> list[RunResult]:
    """``run_checks`` where some checks run alone: the others share worlds as ever."""
    shared = run_checks(scenario, seed, [c for c in checks if not _alone(c)], budget, share)
    bad, rest = shared[0].bad, iter(shared)  # one ground truth for every check of the seed
    return [run(scenario, seed, c, bad=bad, budget=budget) if _alone(c) else next(rest)
            for c in checks]


@dataclass(eq=False)
class _Rider:
    """One check across the shared worlds of a seed: what it asked, saw and decided.

    ``waits[i]`` is the check's answer before look ``i``; while it still rides,
    ``len(waits) == len(looks) + 1``; once ``done``, ``len(waits) == len(looks)``.
    """

    check: Check
    steps: Generator[float, Look, Verdict]
    waits: list[float] = field(default_factory=list)
    looks: list[RecordedLook] = field(default_factory=list)
    done: bool = False
    verdict: Verdict | None = None
    decided_at: float = 0.0  # simulated seconds (env.now) when it decided
    error: str | None = None
    error_detail: str | None = None
    #: What its verdict makes the publish do: (ok, rolls back); None without a verdict.
    action: tuple[bool, bool] | None = None

    def reply(self, world: _World, k: int) -> float | None:
        """The check's answer after look ``k`` (-1: before the first): a wait, or None once it
        has decided. Recorded in an earlier world if it was asked there, else asked now."""
        if k + 1 < len(self.waits):
            return self.waits[k + 1]
        if self.done:
            return None
        try:
            if k < 0:
                wait = next(self.steps)
            else:
                recorded = _look(world)
                self.looks.append(recorded)
                wait = self.steps.send(recorded.look)
        except StopIteration as finished:
            self.verdict = finished.value
            self.decided_at = world.env.now
            self.done = True
            self.action = (self.verdict.ok, bool(getattr(self.check, "rolls_back", True)))
            return None
        except CheckFailed as failed:
            record_failure(self, failed)
            self.done = True
            return None
        self.waits.append(wait)
        return wait

    def result(self, world: _World, tally: SiteTally, seed: int, bad: bool) -> RunResult:
        """Its result in ``world``, the world whose rest it shares (as ``_result`` gives it)."""
        return RunResult(
            check=check_name(self.check),
            seed=seed,
            verdict=self.verdict,
            decided_at_s=None if self.verdict is None else self.decided_at - world.publish_at_s,
            rollback=world.rollback,
            late_failure_at_s=world.late_failure_at_s,
            site=tally,
            looks=tuple(self.looks),
            bad=bad,
            error=self.error,
            error_detail=self.error_detail,
            trace=None,
        )


class _Shared:
    """One world that several checks ride, until one decides.

    Why it gives each check its own world's result: a look reads the machines and
    changes nothing, and SimPy orders simultaneous events by when they were scheduled,
    so the events one check adds never reorder another's against the world's. Until a
    verdict acts, each rider sees exactly what it would alone. The first verdict acts
    here; riders whose next look is the very next event of the same instant (nothing of
    the world between) look now, before it acts, and those that decide the same thing
    (pass, or fail with the same rollback) share this world's rest. Every other rider
    goes ``away`` to a new world, which replays its recorded waits (same events, same
    order) without asking the check again, and goes on from there.
    """

    def __init__(self, world: _World, riders: Sequence[_Rider]) -> None:
        world.stop_when_settled = True
        self.world = world
        self.riders = list(riders)
        self.members: list[_Rider] = []  # whose result this world gives
        self.away: list[_Rider] = []
        self._gone: set[int] = set()  # ids of riders away from this world
        self._acting: tuple[bool, bool] | None = None  # the action being taken now
        #: Each pending look's timeout: the rider and the look it leads to.
        self._pending: dict[int, tuple[simpy.Timeout, _Rider, int]] = {}

    def run(self) -> None:
        """Simulate to the horizon (or until settled); say who shares this world's result."""
        world = self.world
        before = world.scenario.previous
        env = world.env
        if before is not None and before.asleep:
            env.process(_previous_release(world))
            env.process(self._publish(launch_previous=False))
        else:
            env.process(self._publish(launch_previous=True))
        env.run(until=world.scenario.horizon_s)
        if not world.diverged:
            world.proved_bad = release_crashes(world)
        if self._acting is None:  # nothing acted: every rider still here shares it
            self.members = [r for r in self.riders if id(r) not in self._gone]
        self.away.sort(key=self.riders.index)

    def _publish(self, launch_previous: bool) -> Generator[Any, Any, None]:
        # The same steps as ``_publish``: the roll, then each check's first answer in the
        # same step, in check order.
        yield from _roll(self.world, launch_previous)
        for rider in self.riders:
            if id(rider) not in self._gone:
                self._at(rider, -1)

    def _at(self, rider: _Rider, k: int) -> None:
        """Look ``k`` is due (-1: the publish step): look, and wait or decide."""
        while True:
            wait = rider.reply(self.world, k)
            if wait is None:
                self._decided(rider)
                return
            k += 1
            if wait:
                if self._acting is not None:  # looked before a verdict acts: it rides on elsewhere
                    self._leave(rider)
                    return
                timeout = self.world.env.timeout(wait)
                timeout.callbacks.append(self._due)
                self._pending[id(timeout)] = (timeout, rider, k)
                return

    def _due(self, event: simpy.events.Event) -> None:
        _, rider, k = self._pending.pop(id(event))
        if id(rider) not in self._gone:
            self._at(rider, k)

    def _leave(self, rider: _Rider) -> None:
        if id(rider) not in self._gone:
            self._gone.add(id(rider))
            self.away.append(rider)

    def _decided(self, rider: _Rider) -> None:
        if self._acting is not None:  # deciding in the step of another's verdict
            if rider.action == self._acting:
                self.members.append(rider)
                self._gone.add(id(rider))  # decided here: no more looks in this world
            else:
                self._leave(rider)
            return
        if rider.action is None:  # an error (or no verdict): the world goes on as without it
            return
        self._acting = rider.action
        self.members = [rider]
        self._gone.add(id(rider))
        self._same_step()
        # Everyone else needs a world where this verdict did not act.
        for other in self.riders:
            if other not in self.members:
                self._leave(other)
        assert rider.verdict is not None
        _act(self.world, rider.verdict, rider.action[1])

    def _same_step(self) -> None:
        """Let riders whose look is the very next event, in this instant, look now."""
        env = self.world.env
        # SimPy's queue is a heap of (time, priority, id, event); its front is what
        # ``env.step`` runs next. Private to SimPy (4.x): only our own look timeouts are
        # taken off it, and only when they are next (tests/test_shared_worlds.py).
        queue = env._queue
        while queue and queue[0][0] == env.now and id(queue[0][3]) in self._pending:
            event = heapq.heappop(queue)[3]
            _, other, k = self._pending.pop(id(event))
            if id(other) not in self._gone:
                self._at(other, k)
