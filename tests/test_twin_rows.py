"""A real process's row in ``testbed checks`` and ``testbed sweep``, beside the checks' rows.

The processes here are ``true`` and ``false`` (and a script exiting at once): a verdict
that ignores the world, so each row's outcome is fixed by the ground truth alone, which
the tests take from ``sim.publish.world.ground_truth`` (no check, no process).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.cli.twinopts import row_name
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish.world import ground_truth

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
FAST = ["--speed", "50"]


def _sweep_file(tmp_path: Path, seeds: int = 2) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(
        'name = "tiny"\nscenario = "sept25-crash-loop"\nchecks = ["timestamp"]\n'
        f'seeds = {seeds}\n[axes]\n"release.behavior" = ["crash_after", "healthy"]\n')
    return path


def test_checks_gives_the_process_a_row_in_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    """`checks --check-http true`: in each shipped scenario the row passes the good seeds and
    misses the bad ones (exit 0 is "live"), as the ground truth of each seed says."""
    runs = 2
    assert main(["checks", "--runs", str(runs), "--check", "timestamp", "--check-http", "true",
                 *FAST, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rules"]["http-true"].startswith("the command `true`")
    for name in scenario.shipped():
        loaded = scenario.load(name)
        bad = sum(ground_truth(loaded, s) for s in range(loaded.seed, loaded.seed + runs))
        got = doc["outcomes"][name]["http-true"]
        assert (got["missed"], got["passed"]) == (bad, runs - bad), name


def test_sweep_gives_the_process_a_row_in_every_world(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`sweep --check-http false`: one more row per (point, seed), after the check's, on the
    same ground truth: caught where the release is bad, a false alarm where it is good."""
    out = tmp_path / "rows.csv"
    code = main(["sweep", str(_sweep_file(tmp_path)), "--check-http", "false", *FAST,
                 "--out", str(out), "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["units_done"], summary["complete"]) == (4, True)
    rows = list(csv.DictReader(out.open()))
    assert [(r["point"], r["seed"], r["check"]) for r in rows] == [
        (p, s, c) for p in "01" for s in "12" for c in ("timestamp", "http-false")]
    sept25 = scenario.load("sept25-crash-loop")
    for check_row, process_row in zip(rows[::2], rows[1::2], strict=True):
        world = sept25.model_copy(update={"release": sept25.release.model_copy(
            update={"behavior": check_row["release.behavior"]})})
        bad = ground_truth(world, int(check_row["seed"]))
        assert process_row["release_bad"] == check_row["release_bad"] == str(bad).lower()
        assert process_row["outcome"] == ("caught" if bad else "false_alarm")
        assert process_row["rollback"] == "restored"
    assert summary["checks"]["http-false"]["bad_worlds"] == 2


@pytest.mark.parametrize(("extra", "message"), [
    (["--workers", "2", *FAST], "--workers 2: a sweep with --check-http on the scaled clock "
                                "runs one world at a time"),
    (["--dask", "tcp://127.0.0.1:1"], "--dask: a sweep with --check-http runs on this machine"),
])
def test_sweep_with_a_process_refuses_a_pool(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: list[str], message: str
) -> None:
    """A process runs on this machine (no Dask), and on the wall clock one world at a time
    (more workers are refused): one line each."""
    out = tmp_path / "rows.csv"
    assert main(["sweep", str(_sweep_file(tmp_path)), "--check-http", "true", *extra,
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert message in err
    assert not out.exists()


@pytest.mark.parametrize("command", ["sweep", "compare", "checks"])
def test_worst_case_wall_time_past_the_limit_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    command: str
) -> None:
    """Worlds x processes x --http-timeout past the limit: exit 2 before any world runs, the
    limit named; at the limit it runs."""
    monkeypatch.setenv("TESTBED_MAX_PROCESS_WALL_S", "8")
    marker = tmp_path / "ran"
    script = tmp_path / "mark.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    target = {"sweep": [str(_sweep_file(tmp_path)), "--out", str(tmp_path / "rows.csv")],
              "compare": ["healthy-release", "--runs", "4"], "checks": ["--runs", "1"]}[command]
    # sweep and compare: 4 worlds x 1 process x 3 s = 12 s; checks: 8 scenarios x 3 s = 24 s.
    assert main([command, *target, "--check-http", str(script), "--http-timeout", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "past the limit of 8 s" in err
    assert "TESTBED_MAX_PROCESS_WALL_S" in err
    assert not marker.exists()
    if command != "checks":  # 4 x 2 s = 8 s: at the limit, not past it
        assert main([command, *target, "--check-http", str(script), "--http-timeout", "2",
                     *FAST, "--json"]) == 0
        assert marker.exists()


def test_sweep_help_says_one_worker(capsys: pytest.CaptureFixture[str]) -> None:
    """`sweep --help` says a sweep with a process runs its worlds one at a time, here."""
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "runs its worlds one at a time in this process" in text


def test_row_names_are_one_key_part() -> None:
    """A process row's name is the mode's word and the program's stem, with nothing that splits a key."""
    assert row_name("check-http", ["examples/deploy/timestamp.sh"]) == "http-timestamp"
    assert row_name("deploy-cmd", ["node", "steps/deploy.v2.mjs", "--fast"]) == "deploy-v2"
    assert row_name("deploy-cmd", ["examples/deploy/deploy.sh"]) == "deploy"
    assert row_name("check-http", ["./http_probe.sh"]) == "http_probe"
    assert row_name("deploy-cmd", ["./redeploy.sh"]) == "deploy-redeploy"
    assert row_name("check-http", ["/usr/bin/true"]) == "http-true"


def test_expect_names_a_process_row(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`--expect http-true=OUTCOME` is judged on the process's row like any check's; so is a
    scenario file's [expect] entry for it (exit 0 when it holds, 1 when it does not)."""
    # sept25-crash-loop seed 1 is bad: `true` (exit 0, live) misses it.
    assert main(["compare", "sept25-crash-loop", "--check-http", "true", *FAST, "--json",
                 "--expect", "http-true=missed"]) == 0
    assert json.loads(capsys.readouterr().out)["expect"] == {"http-true": "missed"}
    assert main(["compare", "sept25-crash-loop", "--check-http", "true", *FAST, "--json",
                 "--expect", "http-true=caught"]) == 1
    [miss] = json.loads(capsys.readouterr().out)["expectations_failed"]
    assert (miss["check"], miss["expected"], miss["outcome"]) == ("http-true", "caught", "missed")
    world = tmp_path / "world.toml"
    shipped = (Path(__file__).parent.parent / "scenarios" / "sept25-crash-loop.toml").read_text()
    world.write_text(shipped.split("[expect]")[0] + '[expect]\nhttp-true = "caught"\n')
    assert main(["compare", str(world), "--check-http", "true", *FAST, "--json"]) == 1
    capsys.readouterr()


def test_expect_with_a_dot_says_how_rows_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    """The old `http:timestamp.sh` spelling: one line saying rows have no dot, exit 2."""
    assert main(["compare", "sept25-crash-loop", "--check-http", "true",
                 "--expect", "http:true.sh=caught"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "a check's name has no dot" in err
    assert "http-timestamp" in err
