"""A SimPy environment made quickly: a world (and each copy of one) makes its own.

``simpy.Environment()`` binds its event classes to the instance by scanning the class's
namespace each time (``BoundClass.bind_early``); the names are found once here and bound
directly, the same attributes and the same environment (measured: about half the cost).
"""

from __future__ import annotations

import itertools
from types import MethodType

import simpy
from simpy.core import BoundClass, SimTime

__all__ = ["new_environment"]

_BOUND = tuple((name, value.cls) for name, value in vars(simpy.Environment).items()
               if type(value) is BoundClass)


def new_environment(now: SimTime = 0, eid: itertools.count[int] | None = None) -> simpy.Environment:
    """An empty environment at ``now`` (as ``Environment()``: the integer 0 by default)
    whose event ids continue from ``eid`` (default: from 0)."""
    env: simpy.Environment = simpy.Environment.__new__(simpy.Environment)
    env._now = now
    env._queue = []
    env._eid = itertools.count() if eid is None else eid
    env._active_proc = None
    for name, cls in _BOUND:
        setattr(env, name, MethodType(cls, env))
    return env
