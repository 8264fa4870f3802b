"""Several checks in one world of a seed: fewer simulations, the same results byte for byte.

Why it exists: a comparison or a sweep judges every check of a seed against one ground
truth, and a world per check simulates the same platform once per check. ``run_checks``
lets the checks ride one world side by side until one decides (``_Shared``); those that
decide the same thing in the same step share the rest of it, the others ride a new world
of the same seed, and the oracle runs at most once a seed. Checks that look alike and
agree cost one world, not one each (a sweep's case); where they all decide apart sharing
saves nothing and costs a little, so ``_Gain`` turns it off for that list of checks.

The guarantee: each check's ``RunResult`` is byte for byte what ``world.run`` gives it in a
world of its own (tests/test_shared_worlds.py), because a look changes nothing and SimPy
orders simultaneous events by when they were scheduled (``_Shared`` says why in full).

What it relies on in ``sim.publish.world``: the stages of one run, ``build``, ``start``
(with the riders' own publish process), ``roll``, ``take_look``, ``act`` on a verdict and
``release_crashes`` / ``ground_truth`` for the truth, and ``simulate`` / ``run_result`` /
``run`` for a check that rides alone; on SimPy, the front of its private event queue
(``_Shared._same_step``).
"""

from __future__ import annotations

import heapq
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import simpy

from platform_testbed.checks import Check, Look, Verdict
from platform_testbed.checks.drive import CheckFailed, check_name, drive
from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.config.scenario import Scenario
from platform_testbed.sim.publish.deploying import record_failure
from platform_testbed.sim.publish.forking import DROP, fork, rest_crashes
from platform_testbed.sim.publish.forking import Entry as _Entry
from platform_testbed.sim.publish.gcpause import gc_paused
from platform_testbed.sim.publish.runresult import RecordedLook, RunResult, result_in
from platform_testbed.sim.publish.site import SiteTally
from platform_testbed.sim.publish.world import (
    World,
    act,
    build,
    ground_truth,
    release_crashes,
    roll,
    run,
    run_result,
    simulate,
    start,
    take_look,
)

__all__ = ["run_checks"]


def run_checks(
    scenario: Scenario, seed: int, checks: Sequence[Check],
    budget: CheckBudget = DEFAULT_CHECK_BUDGET, share: bool | None = None,
) -> list[RunResult]:
    """Every check in the same world (same seed), judged against one ground truth.

    The same results as ``run`` for each check, byte for byte, from one simulation: the
    checks ride one world side by side until one decides (``_Shared``); those that decide
    the same thing in the same step share the rest of it, the others go on in a copy of
    the world as it was just before that verdict acted (``sim.publish.forking``), so no
    stretch of the seed's world is simulated twice. The oracle, where no world proved the
    release bad by itself, goes on from the last copy made before a rollback.

    ``share`` False gives each check a world of its own (``run``: the reference the shared
    way is tested against); True or None share.
    """
    if 0 < sum(map(_alone, checks)) < len(checks):
        return _beside(scenario, seed, checks, budget, share)
    with gc_paused():
        if any(map(_alone, checks)) or (share is False and len(checks) > 1):
            alone = [simulate(scenario, seed, check, False, budget) for check in checks]
            bad = any(w.proved_bad for w in alone) or ground_truth(scenario, seed)
            return [run_result(w, check, bad, False) for w, check in zip(alone, checks, strict=True)]
        # The budget's wrapper is the driver's alone: the check itself is what the run reports.
        riders = [
            _Rider(check, drive(budget.guard(check), scenario.publish_started_ms, budget.max_looks))
            for check in checks
        ]
        worlds: list[_Shared] = []
        shared: _Shared | None = _Shared(build(scenario, seed), riders)
        oracle: World | None = None  # the last copy with no rider: where the oracle goes on
        while shared is not None:
            shared.known = any(w.world.proved_bad for w in worlds)
            shared.run()
            worlds.append(shared)
            then = shared.then
            if shared.away:
                # A copy of the world just before the verdict acted, or (a world that
                # cannot be copied) a new one that replays what they asked so far.
                if then is None:
                    then = _Shared(build(scenario, seed), shared.away)
                else:
                    then.adopt(shared.away)
            elif then is not None:  # nobody rides on in it: the oracle's, if it needs one
                then.adopt(())
                oracle, then = then.world, None
            shared = then
        bad = any(w.world.proved_bad for w in worlds) or _truth(scenario, seed, worlds, oracle)
        results: dict[int, RunResult] = {}
        for shared in worlds:
            tally = shared.world.site.tally(shared.world.publish_at_s, scenario.horizon_s,
                                            scenario.traffic.rps, shared.world.traffic_seed)
            for rider in shared.members:
                results[id(rider)] = rider.result(shared.world, tally, seed, bad)
        return [results[id(rider)] for rider in riders]


def _truth(scenario: Scenario, seed: int, worlds: Sequence[_Shared], oracle: World | None) -> bool:
    """The ground truth where no world proved the release bad by itself.

    Under ``crash``: a world no rollback touched that ran to the horizon saw what the oracle
    would (and no crash); else the oracle goes on from the last copy made where a verdict
    acted; only a world that could not be copied costs an oracle from time 0.
    """
    if scenario.truth != "crash":
        # ``serves`` reads the window after the publish (an exit in it, the machines at its
        # end): neither a world a check rode nor a copy keeps that, so it is judged from 0.
        return ground_truth(scenario, seed)
    horizon = scenario.horizon_s
    if any(not w.world.diverged and w.world.env.now >= horizon for w in worlds):
        return False
    if oracle is not None:
        return rest_crashes(oracle)
    return ground_truth(scenario, seed)


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

    def reply(self, world: World, k: int) -> float | None:
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
                recorded = take_look(world)
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

    def result(self, world: World, tally: SiteTally, seed: int, bad: bool) -> RunResult:
        """Its result in ``world``, the world whose rest it shares (as ``run_result`` gives it)."""
        return result_in(
            world, check_name(self.check), verdict=self.verdict,
            decided_at_s=None if self.verdict is None else self.decided_at - world.publish_at_s,
            looks=self.looks, bad=bad, error=self.error, error_detail=self.error_detail,
            seed=seed, site=tally)


#: A look's entry taken off SimPy's queue (``_Shared._same_step``), and its rider.
_Look = tuple[_Entry, "_Rider"]


class _Shared:
    """One world that several checks ride, until one decides.

    Why it gives each check its own world's result: a look reads the machines and
    changes nothing, and SimPy orders simultaneous events by when they were scheduled,
    so the events one check adds never reorder another's against the world's. Until a
    verdict acts, each rider sees exactly what it would alone. The first verdict acts
    here; just before it does, the world is copied (``then``: ``sim.publish.forking``).
    Riders whose next look is the very next event of the same instant (nothing of the
    world between) look now, before it acts, and those that decide the same thing (pass,
    or fail with the same rollback) share this world's rest. Every other rider goes
    ``away`` and rides on in the copy, where nothing acted: a look it already took there
    is replayed from its record (the same look: nothing happened between), not asked
    again. A world that cannot be copied leaves ``then`` None: the riders away ride a
    new world from time 0 that replays their recorded waits (same events, same order).
    """

    def __init__(self, world: World, riders: Sequence[_Rider], forked: bool = False) -> None:
        world.stop_when_settled = True
        self.world = world
        self.riders = list(riders)
        self.members: list[_Rider] = []  # whose result this world gives
        self.away: list[_Rider] = []
        #: The copy of this world made just before its first verdict acted.
        self.then: _Shared | None = None
        #: Set when an earlier world of the seed proved the release bad (no oracle needed).
        self.known = False
        self._forked = forked  # a copy: it goes on from where it was made, not from time 0
        self._gone: set[int] = set()  # ids of riders away from this world
        self._acting: tuple[bool, bool] | None = None  # the action being taken now
        #: Each pending look's timeout: the rider and the look it leads to.
        self._pending: dict[int, tuple[simpy.Event, _Rider, int]] = {}

    def run(self) -> None:
        """Simulate to the horizon (or until settled); say who shares this world's result."""
        world = self.world
        if self._forked:
            # Copied in the publish's own step: who had not given a first answer gives it now.
            for rider in self.riders:
                if id(rider) not in self._gone and not rider.waits and not rider.done:
                    self._at(rider, -1)
            world.env.run()  # the copied queue holds the original's stop at the horizon
        else:
            start(world, self._publish)
            world.env.run(until=world.scenario.horizon_s)
        if not world.diverged:
            world.proved_bad = release_crashes(world)
        if self._acting is None:  # nothing acted: every rider still here shares it
            self.members = [r for r in self.riders if id(r) not in self._gone]
        self.away.sort(key=self.riders.index)

    def adopt(self, riders: Sequence[_Rider]) -> None:
        """Of the riders copied here, only ``riders`` (the original's away) ride on."""
        keep = {id(r) for r in riders}
        self._gone.update(id(r) for r in self.riders if id(r) not in keep)
        self.riders = list(riders)

    def _publish(self, launch_previous: bool) -> Generator[Any, Any, None]:
        # The same steps as ``world._publish``: the roll, then each check's first answer in the
        # same step, in check order.
        yield from roll(self.world, launch_previous)
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
        looked = self._same_step()
        # Everyone else needs a world where this verdict did not act: a copy of this one
        # now (looks changed nothing; the looks just taken go back in its queue). So does
        # the oracle, after a rollback that no crash before it proved right.
        away = [r for r in self.riders if r not in self.members]
        rollback = not rider.action[0] and rider.action[1]
        # (Under a truth other than ``crash`` the oracle runs from time 0: no copy for it.)
        crash_truth = self.world.scenario.truth == "crash"
        if away or (rollback and crash_truth and not (self.known or release_crashes(self.world))):
            self.then = self._fork(away, [entry for entry, r in looked if r not in self.members])
        for other in away:
            self._leave(other)
        assert rider.verdict is not None
        act(self.world, rider.verdict, rider.action[1])

    def _fork(self, riders: list[_Rider], looked: Sequence[_Entry]) -> _Shared | None:
        """This world now, with ``riders`` (and the looks ``looked`` they just took here
        back in its queue) to ride on; None if it cannot be copied."""
        then = _Shared(self.world, riders, forked=True)

        def look(event: simpy.Event, env: simpy.Environment) -> simpy.Event | Literal["drop"] | None:
            entry = self._pending.get(id(event))
            if entry is None:
                return None
            if entry[1] not in riders:  # decided here, or gone before: it rides no more
                return DROP
            copy = simpy.Event(env)
            copy._ok, copy._value, copy.callbacks = True, None, [then._due]
            then._pending[id(copy)] = (copy, entry[1], entry[2])
            return copy

        world = fork(self.world, look, looked)
        if world is None:
            return None
        world.stop_when_settled = True
        then.world = world
        return then

    def _same_step(self) -> list[_Look]:
        """Let riders whose look is the very next event, in this instant, look now; the
        queue entries taken, with their riders."""
        env = self.world.env
        # SimPy's queue is a heap of (time, priority, id, event); its front is what
        # ``env.step`` runs next. Private to SimPy (4.x): only our own look timeouts are
        # taken off it, and only when they are next (tests/test_shared_worlds.py).
        queue = env._queue
        taken: list[_Look] = []
        while queue and queue[0][0] == env.now and id(queue[0][3]) in self._pending:
            entry = heapq.heappop(queue)
            event = entry[3]
            # Left in ``_pending``: a copy of this world (``_fork``) still has it to come.
            _, other, k = self._pending[id(event)]
            taken.append((entry, other))
            if id(other) not in self._gone:
                self._at(other, k)
        return taken
