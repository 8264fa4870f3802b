"""A rollout scenario over several seeds as one frozen value: its runs, timing and expectations.

``RolloutRuns.to_json()`` is the ``testbed rollout --json`` document and ``to_pandas()``
its runs as a table; the text report stays ``sim.rollout.report.rollout_table``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from platform_testbed.checks.timing import TimingResult, check_timing
from platform_testbed.sim.config.settings import seed_values
from platform_testbed.sim.rollout.config import RolloutScenario
from platform_testbed.sim.rollout.expect import Expectation, check_expectations
from platform_testbed.sim.rollout.report import aggregate, rollout_json
from platform_testbed.sim.rollout.result import RolloutResult
from platform_testbed.sim.rollout.world import run
from platform_testbed.sim.runtime.frames import BOOL, FLOAT, INT, TEXT, frame

if TYPE_CHECKING:
    import pandas as pd

#: Version of the ``--json`` documents of ``testbed rollout`` and ``lint-timing``
#: (sim/schemas/rollout.schema.json, lint-timing.schema.json); sim.cli.rollout prints it.
SCHEMA_VERSION = 1

#: ``to_pandas()``: one row per run, the scalar fields of ``RolloutResult.summary()``
#: with the deploy's flattened into ``deploy_*``.
RUN_DTYPES: Mapping[str, str] = MappingProxyType({
    "seed": INT, "deploy_status": TEXT, "deploy_reason": TEXT, "deploy_started_s": FLOAT,
    "deploy_finished_s": FLOAT, "requests": INT, "served": INT, "bad_gateway": INT,
    "health_ok": INT, "draining_503": INT, "non_200": INT, "answered": INT,
    "non_200_rate": FLOAT, "bad_gateway_rate": FLOAT, "silent_breakage": BOOL,
    "repairs_mid_deploy": INT,
})
#: ``to_pandas(per="server")``: one row per server per run; ``missing`` joins the
#: components the server lost with ", " (empty when it lost none).
SERVER_DTYPES: Mapping[str, str] = MappingProxyType({
    "seed": INT, "server": TEXT, "drifted": BOOL, "missing": TEXT, "force_killed": BOOL,
    "bad_gateway": INT, "watchdog_repairs": INT, "repairs_mid_deploy": INT,
})


@dataclass(frozen=True, slots=True)
class RolloutRuns:
    """One rollout scenario run once per seed, with its timing invariants and expectations."""

    scenario: RolloutScenario
    runs: tuple[RolloutResult, ...]
    timing: tuple[TimingResult, ...]
    expectations: tuple[Expectation, ...]

    @property
    def seeds(self) -> tuple[int, ...]:
        """The seeds, in the order they ran."""
        return tuple(r.seed for r in self.runs)

    @property
    def summary(self) -> dict[str, Any]:
        """Totals over the runs (``--json``'s ``summary``): 502s, drain 503s, silent breakage."""
        return aggregate(self.runs)

    @property
    def expectations_failed(self) -> tuple[Expectation, ...]:
        """The scenario's ``[expect]`` entries the runs did not meet (``testbed rollout`` exits 1)."""
        return tuple(e for e in self.expectations if not e.held)

    def to_json(self) -> dict[str, Any]:
        """The ``testbed rollout --json`` document of the same scenario and seeds."""
        return {"schema_version": SCHEMA_VERSION,
                **rollout_json(self.scenario, self.runs, self.timing, self.expectations)}

    def to_pandas(self, per: Literal["run", "server"] = "run") -> pd.DataFrame:
        """The runs as a pandas DataFrame (needs the ``pandas`` extra).

        ``per="run"``: one row per seed, the columns of ``RUN_DTYPES`` (rounded as the
        JSON is). ``per="server"``: one row per server per seed, ``SERVER_DTYPES``.
        """
        if per == "server":
            return frame([_server_row(r.seed, s) for r in self.runs for s in r.summary()["servers"]],
                         SERVER_DTYPES)
        if per != "run":
            raise ValueError(f"per: 'run' or 'server' (got {per!r})")
        return frame([_run_row(r.summary()) for r in self.runs], RUN_DTYPES)


def _run_row(summary: Mapping[str, Any]) -> dict[str, Any]:
    deploy = {f"deploy_{key}": value for key, value in summary["deploy"].items()}
    return {key: value for key, value in {**summary, **deploy}.items() if key in RUN_DTYPES}


def _server_row(seed: int, server: Mapping[str, Any]) -> dict[str, Any]:
    return {"seed": seed, "server": server["name"],
            **{key: value for key, value in server.items() if key in SERVER_DTYPES},
            "missing": ", ".join(server["missing"])}


def run_rollout(scenario: RolloutScenario, seeds: Iterable[int]) -> RolloutRuns:
    """Run the scenario once per seed, check its timing and judge its ``[expect]`` on the runs."""
    chosen = seed_values("seeds", seeds)  # the rule sim.api's run, compare and hunt share
    runs = tuple(run(scenario, seed) for seed in chosen)
    timing = tuple(check_timing(scenario.drain_timing(), scenario.timing.max_reheal_s))
    return RolloutRuns(scenario, runs, timing, tuple(check_expectations(scenario.expect, runs)))
