"""A world copied as it is now, to go on from here twice: where shared checks decide apart.

Why it exists: where the checks riding one world (``sim.publish.sharing``) decide apart,
the first verdict acts and the others need the world as it was just before. Copying it
then costs a few microseconds; simulating it again from time 0 cost a whole world.

What a copy holds: a new SimPy environment at the same time, its queue the same entries
(time, priority, id) in the same heap order with new events whose callbacks are the copy's
own, and the event counter where the original's was, so every later event is ordered as
it would have been. The machines (state, capped log, random stream, restart budget, crash
record), the site's timeline and fly-proxy's stream are copied; the scenario, images and
events, immutable, are shared. A world that something else waits on (a process in the
queue, a ``next_change`` waiter, fly-proxy's autostart on its way) is not copied: ``fork``
says None, and the caller simulates that world again from time 0 as before.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable, Sequence
from typing import Literal

import simpy
from simpy.core import SimTime, StopSimulation
from simpy.events import EventPriority

from platform_testbed.sim.platform.environment import new_environment
from platform_testbed.sim.platform.machine import Machine
from platform_testbed.sim.publish.site import Site
from platform_testbed.sim.publish.world import (
    World,
    hook_autostart,
    release_crashes,
    watch_first_crash,
)

__all__ = ["DROP", "Entry", "Foreign", "fork", "rest_crashes"]

#: An entry of SimPy's queue: (time, priority, event id, event).
Entry = tuple[SimTime, EventPriority, int, simpy.Event]
#: Maps an event of the original's queue that is not the platform's (a check's next look)
#: to its copy in the new environment, ``DROP`` to leave it out (a look of a check that
#: does not ride on), or None if it cannot be copied.
Foreign = Callable[[simpy.Event, simpy.Environment], "simpy.Event | Literal['drop'] | None"]
DROP: Literal["drop"] = "drop"


def _ready(env: simpy.Environment, callbacks: list[Callable[[simpy.Event], None]]) -> simpy.Event:
    """A triggered event of ``env`` carrying ``callbacks``, to put in its queue by hand."""
    event = simpy.Event(env)
    event._ok = True
    event._value = None
    event.callbacks = callbacks
    return event


def _site(site: Site, env: simpy.Environment) -> Site:
    """The site's state in ``env``: every slot copied, the timeline a list of its own."""
    new: Site = Site.__new__(Site)
    for cls in type(site).__mro__:
        for name in getattr(cls, "__slots__", ()):
            setattr(new, name, getattr(site, name))
    new.env = env
    new.segments = list(site.segments)
    return new


def fork(world: World, foreign: Foreign, taken: Sequence[Entry] = ()) -> World | None:
    """A copy of ``world`` now, to simulate on separately; None if it cannot be copied.

    ``taken``: entries taken off the queue since (looks taken ahead of their turn), put
    back in the copy's.
    """
    if world.waking or world.destroyed:  # fly-proxy's autostart on its way; a client's
        return None  # destroyed machines (the twin's): not copied
    old = world.env
    env = new_environment(old.now)
    site = _site(world.site, env)
    machines: list[Machine] = []
    mapped: dict[int, simpy.Event] = {}
    for machine in world.machines:
        if machine.serving is not world.site:
            return None
        new = machine.fork(env, site)
        if new is None:
            return None
        machines.append(new)
        if machine.pending is not None:
            assert new.pending is not None
            mapped[id(machine.pending)] = new.pending
    queue: list[Entry] = []
    platform = 0
    for at, priority, eid, event in itertools.chain(old._queue, taken):
        copy = mapped.get(id(event))
        if copy is not None:
            platform += 1
        elif event.callbacks == [StopSimulation.callback]:  # ``run``'s until: the horizon
            copy = _ready(env, [StopSimulation.callback])
        else:
            found = foreign(event, env)
            if found is None:
                return None
            if found == DROP:
                continue
            copy = found
        queue.append((at, priority, eid, copy))
    if platform != len(mapped):  # a machine's step not in the queue: not a state we know
        return None
    # The same keys (time, priority, id): the same order, whatever the heap's layout.
    heapq.heapify(queue)
    env._queue = queue
    # The original takes the next id itself: both go on with ids above every one queued.
    env._eid = itertools.count(next(old._eid))
    proxy = world._proxy_rng
    if proxy is not None:
        proxy = random.Random.__new__(random.Random)
        proxy.setstate(world.proxy_rng.getstate())
    # Every field as it is (``dataclasses.replace`` without re-running ``__init__``): the
    # scenario, images, seeds and verdict so far are immutable or replaced here.
    copied: World = World.__new__(World)
    copied.__dict__.update(world.__dict__)
    copied.env, copied.machines, copied.site, copied.looks = env, machines, site, []
    copied.cordoned = set(world.cordoned)
    copied._proxy_rng = proxy
    hook_autostart(copied)
    return copied


def rest_crashes(world: World) -> bool:
    """The oracle from a forked world on: does the release crash by the horizon?

    ``world`` is the world with no check as it was at the fork (no verdict had acted);
    its queue still holds the original's stop at the horizon. It runs until the first
    crash of the release after the publish, as ``ground_truth`` does from time 0.
    """
    watch_first_crash(world).callbacks.append(StopSimulation.callback)
    world.env.run()
    return release_crashes(world)
