"""Open-loop traffic: how many requests fall in each segment of a timeline.

Requests form a Poisson process of rate ``rps``; the counts in disjoint segments are
independent Poisson draws with mean ``rps x length``. Both the publish site and the
rollout's balancer draw them here: one seeded NumPy draw for all segments of a run, so
traffic costs a few array operations however many requests there are.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def generator(seed: int) -> np.random.Generator:
    """The traffic's own random stream for one run (never shared with the model's).

    Philox keyed directly by the seed: it skips the SeedSequence hashing that PCG64's
    constructor does, the larger part of a small run's traffic cost (measured here:
    ~25 us against ~45 us per run).
    """
    return np.random.Generator(np.random.Philox(key=seed & (2**128 - 1)))


def requests_per_segment(seed: int, rps: float, lengths_s: Sequence[float]) -> list[int]:
    """Poisson request counts for consecutive segments of the given lengths (seconds).

    Drawn as the total over all segments (Poisson) split among them in proportion to
    their lengths (multinomial): the same distribution as one Poisson draw per segment,
    and every run of one world with one seed gets the same total, however a check cut
    the timeline into segments.
    """
    total_s = float(sum(length for length in lengths_s if length > 0))
    if rps <= 0 or total_s <= 0:
        return [0] * len(lengths_s)
    rng = generator(seed)
    requests = int(rng.poisson(rps * total_s))
    if len(lengths_s) == 1:
        return [requests]
    shares = [max(length, 0.0) / total_s for length in lengths_s]
    counts: list[int] = rng.multinomial(requests, shares).tolist()
    return counts
