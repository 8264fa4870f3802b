"""A scenario's declared expectations, checked against its runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from platform_testbed.sim.rollout.config import ExpectTable
from platform_testbed.sim.rollout.result import RolloutResult


@dataclass(frozen=True, slots=True)
class Expectation:
    """One declared expectation and whether the runs met it."""

    field: str
    expected: str
    held: bool
    observed: str


def check_expectations(expect: ExpectTable, results: Sequence[RolloutResult]) -> list[Expectation]:
    """Each declared expectation, in a fixed order, with what the runs showed."""
    checked = []
    if expect.bad_gateway is not None:
        counts = [r.bad_gateway for r in results]
        held = (
            all(c == 0 for c in counts) if expect.bad_gateway == "zero" else all(c for c in counts)
        )
        observed = f"{sum(counts)} 502s, {sum(1 for c in counts if c)}/{len(counts)} runs with any"
        checked.append(Expectation("bad_gateway", expect.bad_gateway, held, observed))
    if expect.silent_breakage is not None:
        silent = sum(1 for r in results if r.silent_breakage)
        observed = f"{silent}/{len(results)} runs reported success with a component missing"
        checked.append(Expectation("silent_breakage", "never", silent == 0, observed))
    return checked
