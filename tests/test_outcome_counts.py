"""Outcome counts: one more run of an outcome adds one to that outcome only."""

from __future__ import annotations

import dataclasses

from platform_testbed.sim.config.scenario import OUTCOMES
from platform_testbed.sim.publish.compare import OutcomeCounts


def test_plus_adds_one_to_the_named_outcome_only() -> None:
    """Each outcome's count grows by its own runs; the fields are OUTCOMES, in order."""
    assert [f.name for f in dataclasses.fields(OutcomeCounts)] == list(OUTCOMES)
    counts = OutcomeCounts()
    for times, outcome in enumerate(OUTCOMES, start=1):
        for _ in range(times):
            counts = counts.plus(outcome)  # type: ignore[arg-type]
    assert counts.to_json() == {o: i for i, o in enumerate(OUTCOMES, start=1)}
    assert counts.total == sum(range(1, len(OUTCOMES) + 1))
