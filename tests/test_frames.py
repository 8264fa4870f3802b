"""``to_pandas()``: the typed results as DataFrames, and pandas only when one is asked for."""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from platform_testbed.sim import api
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.scenario import OUTCOMES
from platform_testbed.sim.hunt.search import FOUND_DTYPES
from platform_testbed.sim.publish.compare import RESULT_COLUMNS, RESULT_DTYPES, result_row
from platform_testbed.sim.rollout.runs import RUN_DTYPES, SERVER_DTYPES
from platform_testbed.sim.runtime.frames import frame
from platform_testbed.sim.sweep.output import SUMMARY_DTYPES
from platform_testbed.sim.sweep.units import columns

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
    from platform_testbed.sim.publish.compare import compare  # noqa: PLC0415

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
    table = frame([good, broken], RESULT_DTYPES, RESULT_COLUMNS)
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


@pytest.fixture(scope="module")
def deploys():
    """The original rolling deploy over seeds 0-2."""
    return api.rollout("original", seeds=range(3))


@pytest.fixture(scope="module")
def rollout_json():
    """``testbed rollout original --runs 3 --json``, parsed: the oracle of the tables."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # capsys is per test; this fixture is per module
        assert main(["rollout", "original", "--runs", "3", "--json"]) == 0
    return json.loads(out.getvalue())


def test_rollout_runs_are_one_row_per_seed_of_the_command_lines_json(deploys, rollout_json):
    """Each row is a --json run: its scalar fields, the deploy's as deploy_*, in seed order."""
    table = deploys.to_pandas()
    assert list(table.columns) == list(RUN_DTYPES)
    assert table["seed"].tolist() == [0, 1, 2]
    for (_, cells), run in zip(table.iterrows(), rollout_json["runs"], strict=True):
        wanted = {k: v for k, v in run.items() if not isinstance(v, dict | list)}
        wanted |= {f"deploy_{k}": v for k, v in run["deploy"].items()}
        assert {c: _plain(cells[c]) for c in table.columns} == wanted
    assert {c: str(table[c].dtype) for c in ("seed", "bad_gateway", "silent_breakage",
                                             "deploy_status", "bad_gateway_rate")} == {
        "seed": "Int64", "bad_gateway": "Int64", "silent_breakage": "boolean",
        "deploy_status": "string", "bad_gateway_rate": "float64"}


def test_rollout_servers_are_one_row_per_server_per_seed(deploys, rollout_json):
    """per="server": each --json run's servers, in order, missing components joined by ", "."""
    table = deploys.to_pandas(per="server")
    assert list(table.columns) == list(SERVER_DTYPES)
    wanted = [{"seed": run["seed"], "server": s["name"],
               **{k: v for k, v in s.items() if k != "name"}, "missing": ", ".join(s["missing"])}
              for run in rollout_json["runs"] for s in run["servers"]]
    assert [{c: _plain(cells[c]) for c in table.columns} for _, cells in table.iterrows()] == wanted
    assert table.groupby("seed")["bad_gateway"].sum().tolist() == [
        r.bad_gateway for r in deploys.runs]  # the servers' 502s add up to the run's


def test_rollout_to_pandas_names_its_choices_on_a_bad_per(deploys):
    """per= other than run or server is a ValueError naming both."""
    with pytest.raises(ValueError, match="'run' or 'server'"):
        deploys.to_pandas(per="check")


def test_a_hunt_is_one_row_per_world_found_with_what_testbed_hunt_says(tmp_path, capsys):
    """HuntResult.to_pandas(): --json's found entries, changes as key=value, outcome categorical."""
    result = api.hunt("timestamp", budget=8)
    assert main(["hunt", "--check", "timestamp", "--budget", "8", "--out", str(tmp_path),
                 "--json", "--no-progress"]) == (1 if result.found else 0)
    printed = json.loads(capsys.readouterr().out)["found"]
    table = result.to_pandas()
    assert list(table.columns) == list(FOUND_DTYPES)
    assert len(table) == len(printed) == len(result.found) > 0
    for (_, cells), found in zip(table.iterrows(), printed, strict=True):
        shown = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in found["changes"].items())
        assert {c: _plain(cells[c]) for c in table.columns} == {
            "outcome": found["outcome"], "kind": found["kind"], "changes": shown,
            "decided_at_s": found["decided_at_s"], "why": found["why"], "reason": found["reason"]}
    assert list(table["outcome"].cat.categories) == list(OUTCOMES)


def test_without_pandas_to_pandas_says_in_one_line_what_to_install(incident, caps, deploys,
                                                                     monkeypatch):
    """A missing pandas is one ImportError line naming pandas and its pip command, from every
    to_pandas()."""
    hunted = api.hunt("timestamp", budget=2)
    monkeypatch.setitem(sys.modules, "pandas", None)  # what an environment without it does
    for call in (incident.to_pandas, caps.to_pandas, caps.summary.to_pandas, deploys.to_pandas,
                 hunted.to_pandas):
        with pytest.raises(ImportError) as raised:
            call()
        message = str(raised.value)
        assert message == "to_pandas() needs pandas, which is not installed: pip install 'pandas>=2.1'"


def test_importing_the_simulator_does_not_import_pandas():
    """pandas is imported by to_pandas() only: the core and the front door load without it."""
    code = ("import platform_testbed.sim.api, platform_testbed.sim.publish.compare, "
            "platform_testbed.sim.sweep, platform_testbed.sim.rollout.runs, sys; "
            "assert 'pandas' not in sys.modules, 'pandas was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
