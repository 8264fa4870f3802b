"""Typed results end to end: frozen values, --json rendered from them with a schema version."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.sim.checkload.loader import build_checks
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario
from platform_testbed.sim.config.scenario import OUTCOMES
from platform_testbed.sim.publish.compare import SCHEMA_VERSION, Comparison, OutcomeCounts, compare
from platform_testbed.sim.sweep import load_sweep, run_sweep

DATA = Path(__file__).parent / "data"


def _comparison(names: list[str], runs: int = 2) -> Comparison:
    world = scenario.load("sept25-crash-loop")
    built = build_checks(names, world.check)
    return compare(world, [b.check for b in built], range(world.seed, world.seed + runs),
                   setups=[b.setup for b in built])


def test_outcome_counts_has_one_field_per_outcome_in_order() -> None:
    """OutcomeCounts' fields are exactly OUTCOMES, so to_json lists every outcome in order."""
    assert tuple(f.name for f in dataclasses.fields(OutcomeCounts)) == OUTCOMES
    assert list(OutcomeCounts().plus("missed").to_json()) == list(OUTCOMES)


def test_a_comparison_is_frozen() -> None:
    """compare returns a frozen value: fields cannot be reassigned, the summary not mutated."""
    report = _comparison(["count"], runs=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.scenario = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        report.summary["count"] = OutcomeCounts()  # type: ignore[index]


def test_summary_counts_every_seed_and_keeps_zero_counts() -> None:
    """Each check's counts add up to the seeds run; outcomes that never happened are 0, not absent."""
    report = _comparison(["count", "timestamp"], runs=3)
    for name in ("count", "timestamp"):
        counts = report.summary[name]
        assert counts.total == 3
        assert counts.total == sum(r.outcome == o for r in report.results_of(name) for o in OUTCOMES)
        doc = report.to_json()["summary"][name]
        assert set(doc) == set(OUTCOMES)
        assert doc["false_alarm"] == 0


def test_to_json_carries_the_schema_version_and_round_trips_through_json() -> None:
    """to_json is plain JSON with schema_version on top and the results of every seed."""
    report = _comparison(["count", "timestamp"])
    doc = json.loads(json.dumps(report.to_json()))
    assert doc["schema_version"] == SCHEMA_VERSION == 1
    assert [run["seed"] for run in doc["runs"]] == [run.seed for run in report.seeds]
    assert [r["check"] for r in doc["runs"][0]["results"]] == ["count", "timestamp"]
    assert doc["check_options"]["count"]["look_delay_s"] == {"value": 10.0, "source": "scenario"}


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "sept25-crash-loop", "--check", "count", "--json"],
        ["compare", "sept25-crash-loop", "--check", "count", "--runs", "2", "--json"],
        ["checks", "--runs", "1", "--check", "count", "--json"],
    ],
)
def test_every_json_output_carries_schema_version(argv: list[str], capsys) -> None:
    """compare and checks --json documents say which schema they follow."""
    main(argv)
    assert json.loads(capsys.readouterr().out)["schema_version"] == SCHEMA_VERSION


def test_replay_json_carries_schema_version(tmp_path: Path, capsys) -> None:
    """replay --json says its schema version and each row's options with their source."""
    looks = tmp_path / "looks.jsonl"
    main(["compare", "sept25-crash-loop", "--check", "timestamp", "--record", str(looks)])
    capsys.readouterr()
    assert main(["replay", str(looks), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == SCHEMA_VERSION
    [row] = doc["results"]
    assert row["check"] == "timestamp"
    assert row["check_options"]["look_delay_s"] == {"value": 10.0, "source": "recording"}


def test_checks_json_lists_every_outcome_for_every_scenario(capsys) -> None:
    """checks --json gives, per scenario and check, every outcome with its count (zeros kept)."""
    assert main(["checks", "--runs", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["outcomes"]) == set(scenario.shipped())
    for per_check in doc["outcomes"].values():
        assert list(per_check) == list(BUILTIN_CHECKS)
        for counts in per_check.values():
            assert list(counts) == list(OUTCOMES)
            assert sum(counts.values()) == 2


def test_expectations_are_reported_only_for_checks_that_ran(capsys) -> None:
    """With only count run, the text names count's expectation and says timestamp's was not judged."""
    assert main(["compare", "sept25-crash-loop", "--check", "count"]) == 0
    out = capsys.readouterr().out
    assert "expectations held: count missed\n" in out + "\n"
    assert "timestamp caught" not in out
    assert "not judged (did not run): timestamp" in out


def test_expectations_json_names_only_checks_that_ran(capsys) -> None:
    """--json's expect holds the expectations judged; expect_not_run names the others."""
    main(["compare", "sept25-crash-loop", "--check", "count", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["expect"] == {"count": "missed"}
    assert doc["expect_not_run"] == ["timestamp"]


def test_sweep_summary_is_typed_and_its_json_has_the_schema_version() -> None:
    """The sweep summary is a frozen value; its counts agree with the rows it summarises."""
    result = run_sweep(load_sweep(DATA / "sweeps" / "small.toml"), workers=1, per_task=8)
    summary = result.summary
    assert summary is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        summary.points = 0  # type: ignore[misc]
    for name, check in summary.checks.items():
        rows = [r for r in result.rows if r["check"] == name]
        assert check.rows == len(rows) > 0
        assert check.counts.missed == sum(r["outcome"] == "missed" for r in rows)
    doc = summary.to_json()
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["checks"]["count"]["bad_worlds"] == summary.checks["count"].bad_worlds
