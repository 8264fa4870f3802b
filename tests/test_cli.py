"""The command-line contract: output, determinism, exit codes, one-line bad-input errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario
from platform_testbed.sim.config.scenario import OUTCOMES


def _testbed(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "platform_testbed", *args], capture_output=True, text=True, check=False
    )


def test_list_names_every_shipped_scenario(capsys):
    """`testbed list` prints one line per shipped scenario."""
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = {line.split()[0] for line in lines if line.startswith("  ")}
    assert set(scenario.shipped()) <= names
    assert {"original", "intermediate", "fixed"} <= names


def test_compare_json_has_the_contract_shape(capsys):
    """--json prints one object with runs, per-check results and a summary."""
    assert main(["compare", "sept25-crash-loop", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["scenario"] == "sept25-crash-loop"
    result = report["runs"][0]["results"][0]
    assert set(result) >= {
        "check", "verdict", "reason", "decided_at_s", "outcome", "rollback",
        "late_failure_at_s", "site", "looks",
    }
    assert set(result["site"]) == {"requests", "served", "not_found", "bad_gateway", "down_s"}
    # Every outcome is listed, zero counts included (issue 13: zeros used to be dropped).
    assert report["summary"]["count"] == dict.fromkeys(OUTCOMES, 0) | {"missed": 1}
    assert report["summary"]["timestamp"] == dict.fromkeys(OUTCOMES, 0) | {"caught": 1}
    assert report["schema_version"] == 1
    assert list(report["summary"]) == list(BUILTIN_CHECKS)


def test_same_scenario_and_seed_give_byte_identical_json():
    """Two processes, same scenario and seed: the same bytes on stdout."""
    first = _testbed("compare", "sept25-crash-loop", "--runs", "3", "--json")
    second = _testbed("compare", "sept25-crash-loop", "--runs", "3", "--json")
    assert first.returncode == 0
    assert first.stdout == second.stdout


def test_different_seeds_can_give_different_worlds(capsys):
    """Seeds change the jitter, so the worlds (and their requests) differ."""
    main(["compare", "sept25-crash-loop", "--seed", "1", "--json"])
    one = json.loads(capsys.readouterr().out)["runs"][0]["results"][0]
    main(["compare", "sept25-crash-loop", "--seed", "2", "--json"])
    two = json.loads(capsys.readouterr().out)["runs"][0]["results"][0]
    assert one["looks"] != two["looks"]


def test_runs_covers_consecutive_seeds(capsys):
    """--runs N runs seed … seed+N-1."""
    main(["compare", "healthy-release", "--seed", "7", "--runs", "3", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert [run["seed"] for run in report["runs"]] == [7, 8, 9]


def test_a_broken_expectation_exits_1(tmp_path: Path):
    """A scenario whose [expect] does not hold exits 1 and says which."""
    path = tmp_path / "wrong.toml"
    path.write_text('name = "wrong"\n[release]\nbehavior = "healthy"\n[expect]\ncount = "caught"\n')
    done = _testbed("compare", str(path))
    assert done.returncode == 1
    assert "count expected caught, got passed" in done.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["compare", "no-such-scenario"], "unknown scenario 'no-such-scenario'"),
        (["compare", "sept25-crash-loop", "--check", "nope"], "--check 'nope': unknown check"),
        (["compare", "sept25-crash-loop", "--set", "platform.event_log_cap=0"],
         "platform.event_log_cap: input should be greater than or equal to 1"),
        (["compare", "sept25-crash-loop", "--set", "platform.restart_delay_s=-1"],
         "platform.restart_delay_s: input should be greater than or equal to 0"),
        (["compare", "sept25-crash-loop", "--set", "check.look_delay_s=-5"],
         "check.look_delay_s: input should be greater than 0"),
        (["compare", "sept25-crash-loop", "--set", "platform.event_log_kap=3"],
         "platform.event_log_kap: unknown field"),
        (["compare", "sept25-crash-loop", "--set", "release.behavior=explode"],
         "release.behavior: input should be"),
        (["compare", "sept25-crash-loop", "--runs", "0"], "--runs: must be at least 1"),
        (["compare", "sept25-crash-loop", "--check", "os.path:nothing"], "has no attribute"),
        (["compare"], "the following arguments are required: scenario"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_the_field(args, needle):
    """Bad input: exit status 2, one line on stderr naming the field and rule, no traceback."""
    done = _testbed(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert needle in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_malformed_toml_exits_2_naming_the_file(tmp_path: Path):
    """A file that is not TOML is reported as such, in one line."""
    path = tmp_path / "broken.toml"
    path.write_text("name = \n[platform\n")
    done = _testbed("compare", str(path))
    assert done.returncode == 2
    assert "broken.toml: malformed TOML" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_user_check_that_raises_is_an_error_outcome_not_a_traceback(tmp_path: Path):
    """A user check that raises becomes outcome `error`; the other checks still report."""
    (tmp_path / "mycheck.py").write_text(
        "class Boom:\n    name = 'boom'\n"
        "    def next(self, publish_started_ms, looks):\n        raise RuntimeError('kaput')\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "platform_testbed", "compare", "sept25-crash-loop", "--check", "timestamp",
         "--check", "mycheck:Boom", "--json"],
        capture_output=True, text=True, check=False, env={"PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["runs"][0]["results"]
    assert [r["outcome"] for r in results] == ["caught", "error"]
    assert "RuntimeError: kaput" in results[1]["reason"]
