"""A world's streams of randomness, derived from its seed once per process, not per world.

A world's seed fixes its child streams (one per machine, the traffic's and fly-proxy's
seeds): drawn from ``random.Random(seed)`` in a fixed order. Seeding a Mersenne Twister
costs more than the rest of a small world's layout (measured: 4-8 us a seeding, two a
one-machine world), and a sweep runs the same seeds at every point, so the derivation
is kept per (seed, machines) and each world gets fresh generators in the same states.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["Streams", "streams"]


@dataclass(slots=True)
class Streams:
    """What a seed gives a world of ``len(machine_seeds)`` machines."""

    machine_seeds: tuple[int, ...]
    traffic_seed: int
    proxy_seed: int
    #: The machines' generators' first states, kept from the second world of the seed on
    #: (copying a state costs less than seeding; keeping one costs a copy, so a seed seen
    #: once, as in ``compare --runs N``, never pays for it).
    states: tuple[tuple[object, ...], ...] | None = None
    uses: int = field(default=0)

    def machine_rngs(self) -> list[random.Random]:
        """Fresh generators for the machines, each as ``random.Random(seed)`` would be."""
        self.uses += 1
        states = self.states
        if states is None:
            rngs = [random.Random(s) for s in self.machine_seeds]
            if self.uses > 1 and len(rngs) <= _STATES_UP_TO:
                self.states = tuple(r.getstate() for r in rngs)
            return rngs
        made = []
        for state in states:
            rng = random.Random.__new__(random.Random)
            rng.setstate(state)
            made.append(rng)
        return made


#: Worlds of at most this many machines keep their generators' states (5 KB each).
_STATES_UP_TO = 8
#: Seeds kept; emptied when full (a sweep has a few seeds, a comparison many, once each).
_KEPT_MAX = 4096
_KEPT: dict[tuple[int, int], Streams] = {}


def streams(seed: int, machines: int) -> Streams:
    """The streams of ``seed`` for a world of ``machines`` machines.

    The same values as drawing them here: ``random.Random(seed)``, then 64 bits for
    each machine, then the traffic's, then fly-proxy's.
    """
    key = (seed, machines)
    found = _KEPT.get(key)
    if found is None:
        root = random.Random(seed)
        machine_seeds = tuple(root.getrandbits(64) for _ in range(machines))
        found = Streams(machine_seeds, root.getrandbits(64), root.getrandbits(64))
        if len(_KEPT) >= _KEPT_MAX:
            _KEPT.clear()
        _KEPT[key] = found
    return found
