"""The array-drawn traffic tally counts exactly what the step-by-step tally counts."""

from __future__ import annotations

import random

import pytest
import simpy

import sim.publish.site as site_mod
from sim.publish.site import BAD_GATEWAY, NOT_FOUND, SERVED, Site, arrivals_before


def _site(bounds: list[tuple[float, str]]) -> Site:
    site = Site(simpy.Environment(), live=None)
    site.segments = bounds
    return site


@pytest.mark.parametrize("case", range(60))
def test_tally_seeded_equals_stepwise_tally(case: int) -> None:
    """Random timelines, rates and seeds (short and long seed keys): identical tallies."""
    pick = random.Random(case)
    seed = pick.getrandbits(64) if case % 5 else pick.randrange(1 << 32)
    start, end = pick.uniform(0, 60), pick.uniform(100, 900)
    times = sorted(pick.uniform(0, end) for _ in range(pick.randrange(1, 30)))
    outcomes = [NOT_FOUND, SERVED, BAD_GATEWAY]
    bounds = [(0.0, NOT_FOUND)] + [(t, outcomes[i % 3]) for i, t in enumerate(times)]
    rps = pick.choice([0.0, 0.3, 5.0, 40.0])
    stepwise = _site(bounds).tally(start, end, rps, random.Random(seed))
    assert _site(bounds).tally_seeded(start, end, rps, seed) == stepwise


def test_bound_on_an_arrival_is_counted_exactly() -> None:
    """A bound placed exactly on an arrival falls back to the exact stream and agrees."""
    seed, rps, start, end = (1 << 40) + 7, 5.0, 30.0, 600.0
    rng = random.Random(seed)
    t = start + rng.expovariate(rps)
    for _ in range(100):
        t += rng.expovariate(rps)
    bounds = [(0.0, NOT_FOUND), (t, SERVED), (t + 1e-13, BAD_GATEWAY)]
    expected = _site(bounds).tally(start, end, rps, random.Random(seed))
    assert _site(bounds).tally_seeded(start, end, rps, seed) == expected
    assert arrivals_before(seed, rps, start, end, [t, end])[0] == 100


def test_stream_that_runs_out_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Too few uniforms drawn at first: the stream is redrawn longer, counts unchanged."""
    monkeypatch.setattr(site_mod, "_MARGIN_SIGMAS", -3.0)
    monkeypatch.setattr(site_mod, "_MARGIN_EXTRA", 0)
    site_mod._STREAMS.clear()
    seed, bounds = (1 << 50) + 3, [(0.0, NOT_FOUND), (100.0, SERVED), (300.0, BAD_GATEWAY)]
    expected = _site(bounds).tally(30.0, 600.0, 5.0, random.Random(seed))
    assert _site(bounds).tally_seeded(30.0, 600.0, 5.0, seed) == expected


def test_stream_too_long_to_keep_is_counted_step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream over the kept-size limit is counted in constant memory, with equal counts."""
    monkeypatch.setattr(site_mod, "_STREAM_MAX_KEPT", 10)
    site_mod._STREAMS.clear()
    seed, bounds = (1 << 45) + 11, [(0.0, NOT_FOUND), (31.5, SERVED), (31.5, BAD_GATEWAY),
                                    (200.0, SERVED), (450.0, NOT_FOUND)]
    expected = _site(bounds).tally(30.0, 600.0, 5.0, random.Random(seed))
    assert _site(bounds).tally_seeded(30.0, 600.0, 5.0, seed) == expected
    assert not site_mod._STREAMS
