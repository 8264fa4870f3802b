"""A series of publishes (several apps, one day): each its own world, every check in each.

The 25 September write-up counts publishes, not seeds: "3 publishes, 2 apps", each
marked live by the count check and failed minutes later by the reconciler. A series
file lists those publishes, each a scenario (shipped name or path) with its own
overrides and seed; ``testbed series FILE`` runs every check in every publish and
tallies, per check, how many publishes it let go live that the reconciler then failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from platform_testbed.checks.drive import check_name
from platform_testbed.sim.checkload.budget import DEFAULT_CHECK_BUDGET, CheckBudget
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.config import scenario as scenarios
from platform_testbed.sim.config.numbers import Seed
from platform_testbed.sim.config.scenario import Outcome, Scenario
from platform_testbed.sim.config.settings import BadInput, apply_sets, locate, read_toml, validated
from platform_testbed.sim.publish.sharing import run_checks
from platform_testbed.sim.publish.world import RunResult


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class PublishEntry(_Table):
    """``[[publishes]]``: one publish of the series."""

    label: str
    scenario: str
    set: list[str] = []
    seed: Seed | None = None  # the seed rule of every door (sim.config.numbers)


class SeriesFile(_Table):
    """A series file as written."""

    name: str = ""
    description: str = ""
    publishes: list[PublishEntry] = Field(min_length=1, max_length=1_000)
    #: Per check, how many publishes it should let go live that the reconciler then failed.
    expect_late_failures: dict[str, int] = {}


@dataclass(frozen=True, slots=True)
class PublishRun:
    """One publish of the series and what every check made of it."""

    label: str
    scenario: Scenario
    seed: int
    results: tuple[RunResult, ...]


@dataclass(frozen=True, slots=True)
class SeriesResult:
    """Every publish of the series, and per check the publishes it let fail late."""

    name: str
    description: str
    publishes: tuple[PublishRun, ...]
    #: The file's expectations of the checks that ran (those alone are judged).
    expect_late_failures: dict[str, int]
    #: The file's expectations of checks left out of this run: not judged, as compare's.
    expect_not_run: tuple[str, ...] = ()

    def late_failures(self, check: str) -> int:
        """Publishes this check marked live that the reconciler failed later."""
        return sum(
            1 for p in self.publishes for r in p.results
            if r.check == check and r.late_failure_at_s is not None
        )

    def outcomes(self, check: str) -> list[Outcome]:
        """This check's outcome in each publish, in order."""
        return [r.outcome for p in self.publishes for r in p.results if r.check == check]

    @property
    def failed_expectations(self) -> list[str]:
        """One line per check whose count of late failures is not the expected one."""
        return [
            f"{check}: expected {want} late failure(s), got {self.late_failures(check)}"
            for check, want in self.expect_late_failures.items()
            if self.late_failures(check) != want
        ]


def load_series(
    path: str, sets: Sequence[str] = ()
) -> tuple[SeriesFile, list[tuple[PublishEntry, Scenario]]]:
    """Read a series file (a path, or a shipped series' name) and load each publish's scenario
    (``sets``: ``--set`` values over every publish's own)."""
    file = locate(path, scenarios.shipped_series, "series")
    raw = read_toml(file, "{path}: cannot read series file ({reason})")
    spec = validated(SeriesFile, raw, file.name)
    loaded = []
    for i, entry in enumerate(spec.publishes):
        where = locate(entry.scenario, scenarios.shipped, "scenario", relative_to=file.parent)
        base = read_toml(where, "{path}: cannot read scenario file ({reason})")
        base.setdefault("name", where.stem)
        try:
            loaded.append((entry, scenarios.validate(apply_sets(base, [*entry.set, *sets]), where.name)))
        except BadInput as error:
            raise BadInput(f"publishes[{i}] ({entry.label}): {error}") from None
    return spec, loaded


def run_series(
    path: str, specs: Sequence[str], budget: CheckBudget = DEFAULT_CHECK_BUDGET, *,
    sets: Sequence[str] = (), extra: Mapping[str, Any] | None = None,
) -> SeriesResult:
    """Every check in every publish of the series (one world each, its own seed).

    Each publish builds its checks with its own scenario's ``[check]`` timing; every check
    is driven under ``budget`` (``sim.checkload.budget``).
    """
    spec, loaded = load_series(path, sets)
    built = [load_checks(list(specs), world.check.model_dump(), extra) for _, world in loaded]
    names = {check_name(c) for c in built[0]}
    for check, want in spec.expect_late_failures.items():
        if not 0 <= want <= len(loaded):  # a count of publishes: none can hold otherwise
            raise BadInput(f"expect_late_failures.{check}: must be 0 to {len(loaded)}, the "
                           f"publishes in the series (got {want})")
    publishes = []
    for (entry, world), checks in zip(loaded, built, strict=True):
        seed = world.seed if entry.seed is None else entry.seed
        publishes.append(PublishRun(entry.label, world, seed, tuple(run_checks(world, seed, checks, budget))))
    expected = spec.expect_late_failures
    return SeriesResult(
        spec.name or Path(path).stem, spec.description, tuple(publishes),
        {check: want for check, want in expected.items() if check in names},
        tuple(check for check in expected if check not in names),
    )

