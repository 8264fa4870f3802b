"""One simulated world: the app's machines, the publish driving one check, reconciler, site.

Inputs: the scenario (frozen) and a seed; state: ``World`` while SimPy runs; out: ``RunResult``.
The stages of a run (``build``, ``start``, ``roll``, ``take_look``, ``act``, ``simulate``,
``run_result``) are public because ``sim.publish.sharing`` composes them too, to let several
checks ride one world of a seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import simpy

from platform_testbed.checks import Check, Look, Verdict
from platform_testbed.checks.drive import check_name, drive, drive_deploying
from platform_testbed.checks.protocol import prepare
from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.config.scenario import Scenario
from platform_testbed.sim.config.truth import window_end_s
from platform_testbed.sim.platform.environment import new_environment
from platform_testbed.sim.platform.machine import Image, Machine
from platform_testbed.sim.platform.streams import streams
from platform_testbed.sim.publish.deploying import drive_publish
from platform_testbed.sim.publish.gcpause import gc_paused
from platform_testbed.sim.publish.runresult import (
    MachineTrace,
    RecordedLook,
    RunResult,
    Trace,
    result_in,
)
from platform_testbed.sim.publish.site import DOWN_STATES, Site

# The result types live in ``sim.publish.runresult``; importable from here as before.
__all__ = [
    "MachineTrace", "RecordedLook", "RunResult", "Trace", "World", "act", "after_roll", "build",
    "conclude", "cordon", "create_machine", "destroy_machine", "ground_truth", "hook_autostart",
    "put_image", "release_crashes", "release_serves", "restart_machine", "roll", "run",
    "run_result", "simulate", "start", "start_machine", "start_previous", "stop_machine",
    "take_look", "uncordon", "update_machines", "watch_first_crash",
]


@dataclass(eq=False)
class World:
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
    #: Machines a client of the platform destroyed (``destroy_machine``): gone from the app,
    #: not down. (The legacy rollback's destroy ends the site instead.)
    destroyed: list[Machine] = field(default_factory=list)
    #: Machines a client created (``create_machine``), in order.
    created: int = 0
    #: Machines cordoned (``cordon``): not public how fly-proxy weighs them; kept as a mark.
    cordoned: set[str] = field(default_factory=set)

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


def build(scenario: Scenario, seed: int, trace: bool = False) -> World:
    """Lay out a world: machines (not yet launched), site, and the streams of randomness."""
    env = new_environment()
    # Child streams drawn in a fixed order: each machine and the traffic get their own,
    # so a check's actions never shift another part of the world's randomness. Derived
    # once per seed in a process (``sim.platform.streams``).
    seeded = streams(seed, scenario.release.machines)
    machine_rngs = seeded.machine_rngs()
    traffic_seed, proxy_seed = seeded.traffic_seed, seeded.proxy_seed
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
    world = World(scenario, seed, env, machines, site, traffic_seed, proxy_seed, previous, release)
    hook_autostart(world)
    return world


def hook_autostart(world: World) -> None:
    """fly-proxy hears of every machine that stops, if ``[traffic] autostart`` is on.

    ``build``'s last step, and a forked world's (``sim.publish.forking``): the hook is
    bound to its world.
    """
    if world.scenario.traffic.autostart and world.scenario.traffic.rps > 0:
        def autostart(machine: Machine) -> None:
            if machine.state == "stopped":
                _on_stopped(world)
        for machine in world.machines:
            machine.on_state = autostart


def take_look(world: World) -> RecordedLook:
    """A look now: every machine's snapshot as the platform API shows it, and what each log dropped."""
    machines = world.machines
    at_ms = world.scenario.platform.epoch_ms + round(world.env.now * 1000)
    return RecordedLook(
        Look(at_ms, tuple([m.snapshot(at_ms) for m in machines]), world.pre_deploy),
        tuple([m.log.dropped for m in machines]),
    )


def _previous_release(world: World) -> Generator[Any, Any, None]:
    """Launch a previous release that falls asleep at time 0, and autostop it before the
    publish (``start`` runs it only then)."""
    assert world.previous is not None
    for machine in world.machines:
        machine.launch(world.previous)
    yield world.env.timeout(world.publish_at_s / 2)
    for machine in world.machines:
        machine.sleep()


def start_previous(world: World) -> None:
    """Start the previous release as ``start`` does, with no publish: a client publishes.

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


def _on_stopped(world: World) -> None:
    # Requests reach the app only from the publish on: a machine that autostopped before
    # it did so because nobody called it (that is why it was asleep).
    if not world.waking and world.env.now >= world.publish_at_s:
        world.waking = True
        world.env.process(_autostart(world))


def _autostart(world: World) -> Generator[Any, Any, None]:
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


def start(world: World, publish: Callable[[bool], Generator[Any, Any, None]]) -> None:
    """Start the previous release (at time 0) and the publish (at ``publish.at_s``).

    ``publish(launch_previous)`` is the publish's process: ``_publish`` with its check, or
    a shared world's riders' (``sim.publish.sharing``). A previous release that does not
    fall asleep needs no process of its own: the publish's process launches it in its
    first step (``launch_previous`` True), before it waits for the publish, which
    schedules every later event in the order the two processes gave them (the previous
    release's process ran first and only launched, then the publish's waited).
    """
    env = world.env
    before = world.scenario.previous
    if before is not None and before.asleep:
        env.process(_previous_release(world))
        env.process(publish(False))
    else:
        env.process(publish(True))


def roll(
    world: World, launch_previous: bool, update: bool = True
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


def update_machines(world: World, machines: Sequence[Machine]) -> None:
    """Roll the release onto ``machines`` now: launch a new one, update the others."""
    start_stopped = world.scenario.publish.start_stopped
    for machine in machines:
        put_image(machine, world.release, start_stopped)
    after_roll(world)


def put_image(machine: Machine, image: Image, start: bool) -> None:
    """Roll ``image`` onto one machine now (the publish's step, Machines_update): launch a
    machine still ``created``, update the others (``start`` False: ``skip_launch``)."""
    if machine.state == "created":
        machine.launch(image)
    else:
        machine.update(image, start=start)


def after_roll(world: World) -> None:
    """A machine the roll left asleep is woken by the next request (``[traffic] autostart``).

    ``roll``'s last step, and the twin's after its own publish or a client's update.
    """
    if world.scenario.traffic.autostart and any(m.state == "stopped" for m in world.machines):
        _on_stopped(world)


def _publish(
    world: World, check: Check | None, budget: CheckBudget, launch_previous: bool = False
) -> Generator[Any, Any, None]:
    deploys = False
    if check is not None:  # the seed and the update duty reach a check that takes them
        check, deploys = prepare(check, world.seed, updates=True)
    yield from roll(world, launch_previous, update=not deploys)
    if check is None:
        return
    # The budget's wrapper is the driver's alone: the check itself is what the run reports.
    # A check that does not deploy is driven by ``drive``, which refuses an Update.
    steps = (drive_deploying if deploys else drive)(
        budget.guard(check), world.scenario.publish_started_ms, budget.max_looks)
    rolls_back = getattr(check, "rolls_back", True)
    yield from drive_publish(
        world, steps, look=lambda: take_look(world), update=partial(update_machines, world),
        conclude=lambda verdict: conclude(world, verdict, rolls_back))


def conclude(world: World, verdict: Verdict, rolls_back: bool = True) -> None:
    """The pipeline's step once the verdict is in: go live (and reconcile) or roll back.

    Also the step a process judging the publish hands its exit status to (``sim.twin.step``).
    """
    env = world.env
    world.verdict = verdict
    world.decided_at_s = env.now - world.publish_at_s
    act(world, verdict, rolls_back)


def act(world: World, verdict: Verdict, rolls_back: bool) -> None:
    """What the publish does with a verdict: mark the release live, or fail it.

    ``conclude``'s step after it records the verdict; a shared world acts on its first
    rider's verdict directly, each rider keeping its own (``sim.publish.sharing``).
    """
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


def _reconciler(world: World) -> Generator[Any, Any, None]:
    """Every interval, fail the live release if a machine is down or crashed since last pass.

    It sees the platform as it is (every crash, uncapped), not through a check's looks.
    Its passes run on the platform's schedule, not from the moment the release went live.
    """
    env = world.env
    interval = world.scenario.reconciler.interval_s
    seen = [len(m.crash_times) for m in world.machines]
    while True:
        yield env.timeout(interval - env.now % interval)
        # A machine a client created since the last pass has crashed if it has at all (zip
        # stops at the shorter list, so it is counted here); one it destroyed is not the app's.
        crashed = [len(m.crash_times) > n for m, n in zip(world.machines, seen, strict=False)]
        crashed += [bool(m.crash_times) for m in world.machines[len(seen):]]
        seen = [len(m.crash_times) for m in world.machines]
        if any(crashed) or any(m.state in DOWN_STATES and m not in world.destroyed
                               for m in world.machines):
            world.site.set_live(None)
            world.late_failure_at_s = env.now - world.publish_at_s
            world.settle()
            return


def release_crashes(world: World) -> bool:
    """Ground truth: did any machine crash while running the new release after the publish?"""
    ref = world.release.ref
    at = world.publish_at_s
    pairs = (zip(m.crash_times, m.crash_images, strict=True) for m in world.machines)
    return any(t >= at and image == ref for crashes in pairs for t, image in crashes)


def release_serves(world: World) -> bool:
    """Whether every machine reads started on the release now (what the site routes to)."""
    ref = world.release.ref
    return all(m.state == "started" and m.image is not None and m.image.ref == ref
               for m in world.machines)


def ground_truth(scenario: Scenario, seed: int) -> bool:
    """The same world with no check and no rollback: is the release bad by ``scenario.truth``?

    ``crash``: does it crash by the horizon. ``serves`` (``sim.config.truth``): does it
    crash by the horizon, exit on its own within the window, or have a machine not
    started at the window's end. Nobody stops a machine in this world after the roll, so
    a machine of the release that leaves ``started`` exited on its own.
    """
    world = build(scenario, seed)
    env = world.env
    start(world, partial(_publish, world, None, DEFAULT_CHECK_BUDGET))
    judged = env.event()  # the first crash (crash), or the first exit in the window (serves)
    ref, at = world.release.ref, world.publish_at_s
    serves = scenario.truth == "serves"
    window_end = window_end_s(scenario.truth_window_s, at, scenario.horizon_s)
    hooks = {m.id: m.on_state for m in world.machines}
    was = {m.id: m.state for m in world.machines}

    def watch(machine: Machine) -> None:
        hook = hooks[machine.id]
        if hook is not None:
            hook(machine)
        before, was[machine.id] = was[machine.id], machine.state
        if judged.triggered:
            return
        # Only the machine that changed can have a new crash: no scan of the whole fleet.
        times, images = machine.crash_times, machine.crash_images
        crashed = bool(times) and times[-1] >= at and images[-1] == ref
        # serves: a machine of the release that leaves started in the window stopped serving.
        exited = (serves and before == "started" and machine.state in ("stopped", "starting")
                  and machine.image is not None and machine.image.ref == ref
                  and at <= env.now <= window_end)
        if crashed or exited:
            judged.succeed()

    for machine in world.machines:
        machine.on_state = watch
    if serves:
        env.run(until=env.any_of([judged, env.timeout(window_end)]))
        if judged.triggered or not release_serves(world):
            return True
    env.run(until=env.any_of([judged, env.timeout(scenario.horizon_s - env.now)]))
    return release_crashes(world)


def watch_first_crash(world: World) -> simpy.Event:
    """An event that succeeds when the release first crashes after the publish.

    The ``crash`` truth's stop from a forked world on (``sim.publish.forking``); the
    ``serves`` truth reads the window from time 0 (``ground_truth``), as a copy does not
    keep what the machines did before it was made.
    """
    first_crash = world.env.event()
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
    return first_crash


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


def simulate(
    scenario: Scenario, seed: int, check: Check, trace: bool, budget: CheckBudget
) -> World:
    """Simulate one world with ``check`` to the horizon (or until settled); no ground truth yet.

    ``run``'s first half; ``run_result`` is its second, once the truth is known.
    """
    world = build(scenario, seed, trace)
    world.stop_when_settled = not trace
    env = world.env
    start(world, partial(_publish, world, check, budget))
    env.run(until=scenario.horizon_s)
    if not world.diverged:
        # No rollback touched the machines: they did what they do with no check at all.
        world.proved_bad = release_crashes(world)
    return world


def run_result(world: World, check: Check, bad: bool, trace: bool) -> RunResult:
    """``check``'s result in a simulated ``world``, classified by the ground truth ``bad``."""
    looks = tuple(world.looks)
    world.looks.clear()  # out of the world's reference cycles: freed with the result (gc_paused)
    return result_in(world, check_name(check), verdict=world.verdict,
                     decided_at_s=world.decided_at_s, looks=looks, bad=bad, error=world.error,
                     error_detail=world.error_detail, trace=_trace(world) if trace else None)


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
        world = simulate(scenario, seed, check, trace, budget)
        if bad is None:
            bad = world.proved_bad or ground_truth(scenario, seed)
        return run_result(world, check, bad, trace)


# -- operations a platform client makes (the twin's Machines API calls them) -----------


def create_machine(world: World, image: Image, start: bool = True) -> Machine:
    """A new machine of the app on ``image`` (Machines_create): launched now, or left
    ``created`` with the image (``start`` False: ``skip_launch``).

    Its randomness is a stream of its own, seeded from the world's seed and its number, so
    a client's creates never shift the draws of the machines the scenario has.
    """
    world.created += 1
    number = len(world.machines) + 1
    first = world.machines[0] if world.machines else None
    width = max(len(str(world.scenario.release.machines)), len(str(number)))
    rng = random.Random(f"create:{world.seed}:{world.created}")
    machine = Machine(world.env, f"m{number:0{width}d}", world.scenario.platform, rng,
                      serving=world.site, trace=first is not None and first.history is not None,
                      on_state=first.on_state if first is not None else None)
    world.machines.append(machine)
    if start:
        machine.launch(image)
    else:
        machine.image = image
    return machine


def destroy_machine(world: World, machine: Machine) -> None:
    """Destroy ``machine`` (Machines_delete): it stops if it runs, and is no longer the app's."""
    machine.destroy()
    world.destroyed.append(machine)
    world.cordoned.discard(machine.id)


def cordon(world: World, machine: Machine) -> None:
    """Mark ``machine`` cordoned (Machines_cordon): not public how fly-proxy routes around it."""
    world.cordoned.add(machine.id)


def uncordon(world: World, machine: Machine) -> None:
    """Lift ``machine``'s cordon (Machines_uncordon)."""
    world.cordoned.discard(machine.id)


def start_machine(machine: Machine) -> None:
    """Start a stopped machine that has an image (Machines_start): the model's ``wake``."""
    if machine.state == "stopped" and machine.image is not None:
        machine.wake()


def stop_machine(machine: Machine) -> None:
    """A requested stop of a machine on its way up or up (Machines_stop): ``sleep``."""
    if machine.state in ("starting", "started"):
        machine.sleep()


def restart_machine(machine: Machine) -> None:
    """Stop what runs, then start it again with the same image (Machines_restart)."""
    stop_machine(machine)
    start_machine(machine)
