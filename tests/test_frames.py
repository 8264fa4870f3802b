"""``to_pandas()``: the typed results as DataFrames, and pandas only when one is asked for."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from sim import api
from sim.frames import INSTALL, frame
from sim.publish.compare import RESULT_COLUMNS, RESULT_DTYPES, result_row
from sim.scenario import OUTCOMES
from sim.sweep.output import SUMMARY_DTYPES
from sim.sweep.units import columns

pd = pytest.importorskip("pandas")

ROOT = Path(__file__).resolve().parent.parent

SEEDS = range(3)


@pytest.fixture(scope="module")
def incident():
    """count, timestamp and restart-counter (blind on Fly) over three seeds of 25 September."""
    return api.compare("sept25-crash-loop", ["count", "timestamp", "restart-counter"], SEEDS)


@pytest.fixture(scope="module")
def caps():
    """A two-point sweep of the event list's cap, two seeds, two checks."""
    return api.sweep({"scenario": "sept25-crash-loop", "checks": ["count", "timestamp"],
                      "seeds": [0, 1], "axes": {"platform.event_log_cap": [2, 10]}})


def _plain(value):
    """A cell as a Python value: pandas' missing markers as None."""
    if value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def test_a_comparison_gives_one_row_per_seed_and_check_with_its_typed_values(incident):
    """Each row holds what the RunResult it comes from says, in the order seeds and checks ran."""
    table = incident.to_pandas()
    assert list(table.columns) == ["seed", *RESULT_COLUMNS, "reason"]
    expected = [(run.seed, result) for run in incident.seeds for result in run.results]
    assert len(table) == len(expected) == len(SEEDS) * len(incident.checks)
    for (_, row), (seed, result) in zip(table.iterrows(), expected, strict=True):
        assert row["seed"] == seed
        assert row["check"] == result.check
        assert row["outcome"] == result.outcome
        assert bool(row["release_bad"]) is result.bad
        assert _plain(row["decided_at_s"]) == result.decided_at_s
        assert _plain(row["rollback"]) == result.rollback
        assert row["down_s"] == result.site.down_s
        assert row["requests"] == result.site.requests
        assert row["not_found"] == result.site.not_found
        assert row["reason"] == (result.verdict.reason if result.verdict else result.error)


def test_result_columns_have_the_dtypes_their_values_need(incident):
    """Counts nullable integers, times floats, the truth boolean, outcome ordered as OUTCOMES."""
    dtypes = incident.to_pandas().dtypes
    assert list(dtypes["outcome"].categories) == list(OUTCOMES)
    for column in ("requests", "served", "not_found", "bad_gateway"):
        assert str(dtypes[column]) == "Int64"
    for column in ("decided_at_s", "late_failure_at_s", "down_s"):
        assert str(dtypes[column]) == "float64"
    assert str(dtypes["release_bad"]) == "boolean"
    for column in ("check", "verdict", "rollback", "error", "reason"):
        assert str(dtypes[column]) == "string"


def test_per_check_rows_count_every_outcome_as_the_summary_does(incident):
    """One row per check: each outcome's count (zeros too), runs, and the mean site downtime."""
    table = incident.to_pandas(per="check")
    assert list(table["check"]) == list(incident.checks)
    for _, row in table.iterrows():
        counts = incident.summary[row["check"]]
        assert {o: row[o] for o in OUTCOMES} == counts.to_json()
        assert row["runs"] == counts.total == len(SEEDS)
        assert row["mean_down_s"] == incident.stats[row["check"]].mean_down_s
    assert table.loc[table["check"] == "restart-counter", "blind"].item() == len(SEEDS)


def test_a_comparison_that_kept_no_runs_tabulates_per_check_only():
    """keep_runs=False holds no rows: per='run' says so, per='check' still covers every run."""
    from sim.publish.compare import compare  # noqa: PLC0415

    scenario = api.load_scenario("sept25-crash-loop")
    flat = compare(scenario, api.build(scenario, ["count"]), range(4), keep_runs=False)
    with pytest.raises(ValueError, match="only 0 of 4 runs were kept"):
        flat.to_pandas()
    assert flat.to_pandas(per="check")["runs"].tolist() == [4]
    with pytest.raises(ValueError, match="per: 'run' or 'check'"):
        flat.to_pandas(per="seed")


def test_sweep_rows_become_one_row_each_in_file_column_order(caps):
    """Columns as the CSV has them; every cell equals the row's value (None as missing)."""
    table = caps.to_pandas()
    assert list(table.columns) == columns(caps.sweep)
    assert len(table) == len(caps.rows) == caps.sweep.units * 2
    for (_, cells), row in zip(table.iterrows(), caps.rows, strict=True):
        assert {c: _plain(cells[c]) for c in table.columns} == row
    assert str(table["platform.event_log_cap"].dtype) == "int64"  # an axis keeps its own type


def test_a_world_that_raised_keeps_typed_columns_with_missing_counts():
    """A sweep's error row (no counts, no truth) fits the nullable dtypes instead of failing."""
    good = dict(result_row(api.run("sept25-crash-loop", "count")))
    broken = dict.fromkeys(RESULT_COLUMNS) | {"check": "x", "outcome": "error", "error": "boom"}
    table = frame([good, broken], RESULT_COLUMNS, RESULT_DTYPES)
    assert table["requests"].isna().tolist() == [False, True]
    assert table["release_bad"].isna().tolist() == [False, True]
    assert str(table["requests"].dtype) == "Int64"
    assert table["outcome"].tolist() == ["missed", "error"]


def test_the_sweep_summary_is_one_row_per_check_of_its_json(caps):
    """SweepSummary.to_pandas(): check, then the --json summary's fields with their values."""
    table = caps.summary.to_pandas()
    assert list(table.columns) == list(SUMMARY_DTYPES)
    for _, row in table.iterrows():
        wanted = caps.summary.checks[row["check"]].to_json()
        assert list(wanted) == list(table.columns[1:])
        assert {k: _plain(row[k]) for k in wanted} == wanted


def test_without_pandas_to_pandas_says_in_one_line_what_to_install(incident, caps, monkeypatch):
    """A missing pandas is one ImportError line naming the extra, from every to_pandas()."""
    monkeypatch.setitem(sys.modules, "pandas", None)  # what an environment without it does
    for call in (incident.to_pandas, caps.to_pandas, caps.summary.to_pandas):
        with pytest.raises(ImportError) as raised:
            call()
        message = str(raised.value)
        assert "\n" not in message
        assert message.endswith(INSTALL)
        assert "[pandas]" in INSTALL


def test_importing_the_simulator_does_not_import_pandas():
    """pandas is imported by to_pandas() only: the core and the front door load without it."""
    code = ("import sim, sim.api, sim.publish.compare, sim.sweep, sys; "
            "assert 'pandas' not in sys.modules, 'pandas was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
