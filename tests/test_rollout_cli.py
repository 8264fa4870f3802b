"""The rollout and lint-timing subcommands: output contract and exit statuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main


def test_rollout_json_is_one_object_with_runs_and_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--json prints exactly one JSON object holding every run and the totals."""
    assert main(["rollout", "original", "--runs", "3", "--seed", "5", "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out)
    assert out.count("\n") == 1
    assert [r["seed"] for r in report["runs"]] == [5, 6, 7]
    assert report["summary"]["runs"] == 3
    assert report["summary"]["bad_gateway_total"] == sum(r["bad_gateway"] for r in report["runs"])
    assert report["timing"][0]["name"] == "drain outlasts detection"


def test_rollout_json_is_byte_identical_for_the_same_seed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two invocations with the same seed print the same bytes."""
    main(["rollout", "original", "--seed", "3", "--json"])
    first = capsys.readouterr().out
    main(["rollout", "original", "--seed", "3", "--json"])
    assert capsys.readouterr().out == first


def test_rollout_table_shows_both_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """The human table has the all-non-200 and the 502-only columns and the invariants."""
    assert main(["rollout", "fixed", "--runs", "2"]) == 0
    out = capsys.readouterr().out
    assert "all non-200" in out
    assert "502 only" in out
    assert "0 requests got 502" in out
    assert "ok: drain outlasts detection" in out


def test_rollout_set_overrides_a_setting(capsys: pytest.CaptureFixture[str]) -> None:
    """--set balancer.interval_s=30 turns the fixed deploy's 502 count positive."""
    argv = ["rollout", "fixed", "--runs", "3", "--set", "balancer.interval_s=30", "--json"]
    assert main(argv) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["config"]["balancer"]["interval_s"] == 30
    assert report["summary"]["bad_gateway_total"] > 0
    assert report["expect"][0]["field"] == "bad_gateway"
    assert report["expect"][0]["held"] is False


@pytest.mark.parametrize("name", ["original", "intermediate", "fixed"])
def test_shipped_scenarios_meet_their_expectations(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each shipped scenario's [expect] holds over 20 seeds: exit 0, every expectation held."""
    assert main(["rollout", name, "--runs", "20", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["expect"]
    assert all(e["held"] for e in report["expect"])


def test_unmet_expectation_is_named_in_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    """The human report says which expectation was not met and what the runs showed."""
    sets = ["--set", "deploy.serve_after_drain_s=70", "--set", "deploy.stop_grace_period_s=80"]
    assert main(["rollout", "original", *sets]) == 1
    out = capsys.readouterr().out
    assert "NOT MET: bad_gateway = 'every-run' (0 502s, 0/1 runs with any)" in out


def test_rollout_accepts_a_toml_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A .toml path works as SCENARIO and missing settings take their defaults."""
    path = tmp_path / "mine.toml"
    path.write_text("[fleet]\nservers = 2\n", encoding="utf-8")
    assert main(["rollout", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["scenario"] == "mine"
    assert len(report["runs"][0]["servers"]) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["rollout", "nope"], "unknown rollout scenario 'nope'"),
        (["rollout", "fixed", "--runs", "0"], "--runs: must be at least 1 (got 0)"),
        (["rollout", "fixed", "--runs", "1000000"],
         "--runs: must be at most 100,000 (got 1,000,000)"),
        (["rollout", "fixed", "--seed", "-1"], "--seed: must be 0 or more (got -1)"),
        (["rollout", "fixed", "--set", "deploy.lock"], "expected KEY=VALUE"),
        (["rollout", "fixed", "--set", "fleet.servers=0"], "fleet.servers"),
        (["lint-timing", "missing.toml"], "cannot read scenario file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad input exits 2 with one line on stderr naming the problem, no traceback."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert message in captured.err
    assert "Traceback" not in captured.err


def test_malformed_toml_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that is not TOML exits 2 naming the file."""
    path = tmp_path / "broken.toml"
    path.write_text("[deploy\n", encoding="utf-8")
    assert main(["lint-timing", str(path)]) == 2
    assert "broken.toml: malformed TOML" in capsys.readouterr().err


def test_lint_timing_exits_1_when_an_invariant_breaks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The original config breaks the drain and re-heal rules: exit 1, numbers printed."""
    assert main(["lint-timing", "scenarios/rollouts/original.toml"]) == 1
    out = capsys.readouterr().out
    assert "BROKEN: drain outlasts detection" in out
    assert "detection_s=60" in out
    assert "2 invariants broken" in out


def test_lint_timing_exits_0_for_the_fixed_config(capsys: pytest.CaptureFixture[str]) -> None:
    """The fixed config holds every rule: exit 0."""
    assert main(["lint-timing", "fixed", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert [i["ok"] for i in report["invariants"]] == [True, True, True, True]


def test_lint_timing_uses_the_configured_reheal_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """[timing] max_reheal_s sets the re-heal bound the config is checked against."""
    path = tmp_path / "slow.toml"
    path.write_text(
        "[balancer]\ninterval_s = 5\nunhealthy_threshold = 2\nhealthy_threshold = 2\n"
        "[deploy]\nserve_after_drain_s = 15\nshutdown_s = 5\nstop_grace_period_s = 30\n"
        "[timing]\nmax_reheal_s = 9\n",
        encoding="utf-8",
    )
    assert main(["lint-timing", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [i["ok"] for i in report["invariants"]] == [True, False, True, True]


def test_json_is_byte_identical_across_processes() -> None:
    """Separate interpreters with different hash seeds print the same bytes for one seed."""
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-m", "platform_testbed", "rollout", "original", "--runs", "2", "--json"],
            capture_output=True,
            check=True,
            env=env,
            text=True,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0])["summary"]["runs"] == 2


@pytest.mark.parametrize(("option", "value"), [("--seed", "-1"), ("--runs", "0")])
def test_rollout_and_compare_word_a_bad_count_alike(
    option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same bad --seed or --runs gets the same message from rollout and compare."""
    from platform_testbed.sim.cli.parser import main as testbed_main  # noqa: PLC0415 -- this file tests sim.rollout's main
    assert main(["rollout", "fixed", option, value]) == 2
    from_rollout = capsys.readouterr().err.partition(": ")[2]  # after the program's prefix
    assert testbed_main(["compare", "sept25-crash-loop", option, value]) == 2
    assert capsys.readouterr().err.partition(": ")[2] == from_rollout
