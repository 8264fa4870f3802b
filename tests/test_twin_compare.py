"""compare --check-http / --deploy-cmd: a real process as a row, judged against the ground truth.

The examples run at speed 20 with LOOK_DELAY_S=0.5 (the scenario's 10 s look delay on the
platform clock), so each world takes a second or two of wall time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.scenario import load
from platform_testbed.sim.twin.step import CHECK_HTTP, DEPLOY_CMD, ProcessStep
from tests.procs import processes

ROOT = Path(__file__).parent.parent
DEPLOY = ROOT / "examples" / "deploy"
FAST = ["--speed", "20"]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


@pytest.fixture(autouse=True)
def _short_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOK_DELAY_S", "0.5")  # 10 s of the platform at speed 20
    for name in ("FLY_IMAGE_REF", "FLY_PREVIOUS_IMAGE_REF"):
        monkeypatch.delenv(name, raising=False)


def _compare(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["compare", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def _results(doc: dict[str, Any], check: str) -> list[dict[str, Any]]:
    return [r for run in doc["runs"] for r in run["results"] if r["check"] == check]


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _group_members(pgid: int, settle_s: float = 5.0) -> list[int]:
    """Every live process whose process group is ``pgid`` (from /proc), once none is left
    or ``settle_s`` has passed: a SIGKILLed process is gone only when the kernel has torn
    it down, which on loaded cores came after the command's exit (failed once at -n 2
    beside a CI run).

    Zombies are dead (killed, waiting for whoever inherited them to reap them: in a
    container whose init does not reap, they stay): they are not counted.
    """
    deadline = time.monotonic() + settle_s
    while True:
        live = [pid for pid, state, _, group in processes() if group == pgid and state != "Z"]
        if not live or time.monotonic() >= deadline:
            return live
        time.sleep(0.05)


def test_check_http_timestamp_catches_every_seed(capsys: pytest.CaptureFixture[str]) -> None:
    """The timestamp script as --check-http in the incident: caught 3/3, restored, site never down."""
    code, doc, _ = _compare(capsys, "sept25-crash-loop", "--check-http",
                            str(DEPLOY / "timestamp.sh"), "--runs", "3", *FAST)
    assert code == 0
    assert doc["summary"] == {"http-timestamp": {
        "caught": 3, "missed": 0, "passed": 0, "false_alarm": 0, "blind": 0, "undecided": 0,
        "error": 0}}
    rows = _results(doc, "http-timestamp")
    assert [r["rollback"] for r in rows] == ["restored"] * 3
    assert [r["site"]["down_s"] for r in rows] == [0.0] * 3
    assert all(r["reason"].startswith("exit 1: timestamp:") for r in rows)


def test_deploy_cmd_timestamp_is_caught_and_restores(capsys: pytest.CaptureFixture[str]) -> None:
    """The timestamp script deploying itself: it fails the release and the machines run the previous image."""
    code, doc, _ = _compare(capsys, "sept25-crash-loop", "--deploy-cmd",
                            str(DEPLOY / "timestamp.sh"), *FAST)
    assert code == 0
    [row] = _results(doc, "deploy-timestamp")
    assert (row["outcome"], row["verdict"], row["rollback"]) == ("caught", "fail", "restored")
    # The looks it took saw its own update to the release, then its rollback.
    images = [m["image"] for look in row["looks"] for m in look["machines"]]
    assert "registry.fly.io/app:release" in images
    assert images[-1] == "registry.fly.io/app:previous"


def test_healthy_release_every_example_passes(capsys: pytest.CaptureFixture[str]) -> None:
    """On a healthy release each example, as a check and as the deploy, lets it go live."""
    code, doc, _ = _compare(
        capsys, "healthy-release", *FAST,
        "--check-http", str(DEPLOY / "check-timestamp.sh"),
        "--check-http", str(DEPLOY / "check-count.sh"),
        "--deploy-cmd", str(DEPLOY / "timestamp.sh"), "--deploy-cmd", str(DEPLOY / "count.sh"))
    assert code == 0
    assert {name: counts["passed"] for name, counts in doc["summary"].items()} == {
        "http-check-timestamp": 1, "http-check-count": 1,
        "deploy-timestamp": 1, "deploy-count": 1}
    assert {r["rollback"] for run in doc["runs"] for r in run["results"]} == {None}


def test_check_http_row_sits_beside_the_builtin_checks(capsys: pytest.CaptureFixture[str]) -> None:
    """With --check the process's row joins the simulated checks' rows, on one ground truth."""
    code, doc, _ = _compare(capsys, "sept25-crash-loop", "--check", "count", "--check-http",
                            str(DEPLOY / "check-timestamp.sh"), *FAST)
    assert code == 0  # the scenario's [expect] count = missed held
    [run] = doc["runs"]
    assert run["release_bad"] is True
    assert [(r["check"], r["outcome"]) for r in run["results"]] == [
        ("count", "missed"), ("http-check-timestamp", "caught")]


# Serial: the process sleeps on the wall clock while the world runs 20x faster, so which
# looks it records depends on how long its curl and jq calls take: at load 6 on 2 cores
# (the parallel pass beside other work) its replay once gave no verdict; alone it passes.
@pytest.mark.serial
def test_record_replays_the_process_looks(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--record writes the looks the process took; replay gives them to the built-in timestamp check."""
    recording = tmp_path / "looks.jsonl"
    code, doc, _ = _compare(capsys, "sept25-crash-loop", "--check-http",
                            str(DEPLOY / "check-timestamp.sh"), "--record", str(recording), *FAST)
    assert code == 0
    [row] = _results(doc, "http-check-timestamp")
    lines = recording.read_text().splitlines()
    assert len(lines) == len(row["looks"]) >= 3
    assert {json.loads(line)["run"] for line in lines} == {"http-check-timestamp/seed=1"}
    assert main(["replay", str(recording), "--check", "timestamp", "--json"]) == 0
    [replayed] = json.loads(capsys.readouterr().out)["results"]
    assert replayed["verdict"] == "fail"


def test_world_runs_on_the_wall_clock_only_while_the_process_runs() -> None:
    """A run lasts about as long as its process, and the decision lands at speed × its wall time."""
    step = ProcessStep(CHECK_HTTP, ("sleep", "0.5"), "http-sleep", 10.0, 20.0)
    result = step(load("healthy-release"), 1)
    [timing] = step.timings
    assert 0.5 <= timing.command_s < 1.5
    assert timing.run_s - timing.command_s < 1.5  # before the publish and after: instant
    assert result.decided_at_s is not None
    assert abs(result.decided_at_s - 20 * timing.command_s) < 1.0
    assert result.outcome == "passed"


def test_hanging_process_is_an_error_within_the_limit_and_leaves_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A process that hangs (and leaves a child behind) is killed at --http-timeout with its group."""
    pidfile = tmp_path / "pid"
    script = _script(tmp_path, "hang.sh", f"echo $$ > {pidfile}\nsleep 300 &\nsleep 300\n")
    began = time.monotonic()
    code, doc, _ = _compare(capsys, "sept25-crash-loop", "--check-http", str(script),
                            "--http-timeout", "1", *FAST)
    assert time.monotonic() - began < 6
    assert code == 1  # a process row in error fails the gate without --fail-on (issue 31)
    [row] = _results(doc, "http-hang")
    assert row["outcome"] == "error"
    assert row["reason"].startswith("did not exit within 1 s of wall time (--http-timeout)")
    assert _group_members(int(pidfile.read_text())) == []


def test_process_left_running_by_an_exited_command_is_killed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A command that exits with a child still running in the background leaves no process."""
    pidfile = tmp_path / "pid"
    script = _script(tmp_path, "leaves.sh", f"echo $$ > {pidfile}\nsleep 300 &\nexit 0\n")
    code, doc, _ = _compare(capsys, "healthy-release", "--check-http", str(script), *FAST)
    assert code == 0
    assert _results(doc, "http-leaves")[0]["outcome"] == "passed"
    assert _group_members(int(pidfile.read_text())) == []


def test_interrupted_compare_leaves_no_process(tmp_path: Path) -> None:
    """Ctrl-C while the process runs: testbed ends (130) and the process group is gone."""
    pidfile = tmp_path / "pid"
    script = _script(tmp_path, "hang.sh", f"echo $$ > {pidfile}\nsleep 300 &\nsleep 300\n")
    testbed = subprocess.Popen(
        [sys.executable, "-m", "platform_testbed.sim", "compare", "healthy-release",
         "--check-http", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text().strip():
            assert time.monotonic() < deadline, "the process never started"
            time.sleep(0.05)
        testbed.send_signal(signal.SIGINT)
        _, err = testbed.communicate(timeout=30)
    finally:
        if testbed.poll() is None:
            testbed.kill()
            testbed.wait()
    assert testbed.returncode == 130, err
    assert _group_members(int(pidfile.read_text())) == []


def test_process_killed_by_a_signal_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A process that dies by a signal: outcome error, the signal named."""
    script = _script(tmp_path, "dies.sh", "kill -KILL $$\n")
    _, doc, _ = _compare(capsys, "healthy-release", "--check-http", str(script), *FAST)
    [row] = _results(doc, "http-dies")
    assert (row["outcome"], row["reason"]) == ("error", "was killed by signal SIGKILL")


def test_deploy_cmd_that_never_updates_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A deploy step that exits 0 without updating a machine has decided nothing: error, said why."""
    script = _script(tmp_path, "noop.sh", "exit 0\n")
    _, doc, _ = _compare(capsys, "healthy-release", "--deploy-cmd", str(script), *FAST)
    [row] = _results(doc, "deploy-noop")
    assert row["outcome"] == "error"
    assert row["reason"].startswith("never updated a machine to the release image")


def test_check_http_gets_the_api_and_no_image(tmp_path: Path) -> None:
    """--check-http passes host, token and app, and not FLY_IMAGE_REF even if the shell has one."""
    out = tmp_path / "env"
    script = _script(tmp_path, "env.sh", f"env > {out}\n")
    os.environ["FLY_IMAGE_REF"] = "from-the-shell"
    try:
        step = ProcessStep(CHECK_HTTP, (str(script),), "http-env", 10.0, 20.0)
        step(load("healthy-release"), 1)
    finally:
        del os.environ["FLY_IMAGE_REF"]
    seen = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert seen["FLY_API_HOSTNAME"].startswith("http://127.0.0.1:")
    assert seen["FLY_APP_NAME"] == "healthy-release"
    assert seen["FLY_API_TOKEN"]
    assert "FLY_IMAGE_REF" not in seen
    deploy = ProcessStep(DEPLOY_CMD, (str(script),), "deploy-env", 10.0, 20.0)
    deploy(load("healthy-release"), 1)
    seen = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert seen["FLY_IMAGE_REF"] == "registry.fly.io/app:release"
    assert seen["FLY_PREVIOUS_IMAGE_REF"] == "registry.fly.io/app:previous"


@pytest.mark.parametrize(("argv", "message"), [
    (["--check-http", ""], "--check-http: the command is empty"),
    (["--check-http", "examples/deploy/nope.sh"], "no file 'examples/deploy/nope.sh'"),
    (["--deploy-cmd", "no-such-program-here"], "no program 'no-such-program-here' on PATH"),
    (["--check-http", "examples/deploy/README.md"], "is not executable"),
    (["--check-http", "'unclosed"], "cannot split it into words"),
    (["--check-http", "true", "--http-timeout", "0"], "--http-timeout: must be"),
    (["--check-http", "true", "--speed", "0"], "--speed: must be more than 0"),
    (["--check-http", "true", "--check-http", "/bin/true"], "another row is named 'http-true'"),
])
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    argv: list[str], message: str
) -> None:
    """A bad command or limit: exit 2 and one line naming the option, before any world runs."""
    monkeypatch.chdir(ROOT)
    assert main(["compare", "sept25-crash-loop", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1, err
    assert message in err


def test_serve_json_validates_against_its_shipped_schema(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`testbed serve --json` run to its horizon is valid against serve.schema.json; a drift is not."""
    import jsonschema  # noqa: PLC0415 -- the dev extra's validator, as tests/test_json_schemas.py

    schema = json.loads((ROOT / "sim" / "schemas" / "serve.schema.json").read_text())
    assert main(["serve", "healthy-release", "--speed", "10000", "--horizon-s", "40", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)
    assert (document["left_running"], document["outcome"]) == ("never updated to the release", "undecided")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**document, "schema_version": 2}, schema,
                            cls=jsonschema.Draft202012Validator)
