"""Lazy machines give the results eager (SimPy-process) machines give, for odd checks too."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from checks import Look, Step, Wait
from sim import scenario as scenarios
from sim.publish import world
from sim.publish.world import RunResult


@dataclass(frozen=True)
class Raises:
    """Raises at its third look."""

    name = "raises"

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Wait 2.5 s between looks, then fail loudly."""
        if len(looks) >= 3:
            raise ValueError("broken check")
        return Wait(2.5)


@dataclass(frozen=True)
class NegativeWait:
    """Asks for a negative wait after its first look."""

    name = "negative"

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Return an invalid step."""
        return Wait(-1.0) if looks else Wait(0.0)


@dataclass(frozen=True)
class NeverDecides:
    """Looks every 7 s until the horizon."""

    name = "never"

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Keep looking."""
        return Wait(7.0)


def _eager(scenario: scenarios.Scenario, seed: int, check: object) -> RunResult:
    built = world._simulate_in(world._build(scenario, seed, False, lazy=False), check, False)  # type: ignore[arg-type]
    bad = built.proved_bad or world.ground_truth(scenario, seed)
    return world._result(built, check, bad, False)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["sept25-crash-loop", "sleeping-api-crash-on-boot", "gives-up"])
@pytest.mark.parametrize("check", [Raises(), NegativeWait(), NeverDecides()], ids=lambda c: c.name)
def test_lazy_run_equals_eager_run(name: str, check: object) -> None:
    """Errors, invalid steps and undecided checks: same looks, site, truth and outcome."""
    scenario = scenarios.load(name)
    for seed in range(3):
        lazy = world.run(scenario, seed, check)  # type: ignore[arg-type]
        eager = _eager(scenario, seed, check)
        assert lazy == eager
