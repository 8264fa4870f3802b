"""A real deploy step on virtual time (``compare --check-http`` / ``--deploy-cmd``, ``--time virtual``).

The world's clock stands still while the step computes and jumps when all of it waits:
the tests read it from the looks the twin records (platform ms), which a step on the wall
clock would shift by its own running time.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.scenario import load
from platform_testbed.sim.publish.runresult import RunResult
from platform_testbed.sim.twin.step import CHECK_HTTP, ProcessStep

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_PRELOAD and /proc: Linux"),
    pytest.mark.skipif(shutil.which("cc") is None or shutil.which("curl") is None
                       or shutil.which("jq") is None, reason="needs cc, curl and jq"),
]
DEPLOY = Path(__file__).parent.parent / "examples" / "deploy"
# FLY_API_HOSTNAME with or without its scheme (a base URL, as Fly's docs give it).
API = ('api() { curl -sS -H "Authorization: Bearer $FLY_API_TOKEN" '
       '"http://${FLY_API_HOSTNAME#http://}/v1/apps/$FLY_APP_NAME$1"; }\n')


@pytest.fixture(autouse=True)
def _default_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOOK_DELAY_S", "FLY_IMAGE_REF", "FLY_PREVIOUS_IMAGE_REF"):
        monkeypatch.delenv(name, raising=False)


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "step.sh"
    path.write_text("#!/bin/sh\nset -e\n" + API + body)
    path.chmod(0o755)
    return path


def _run(argv: tuple[str, ...], scenario: str = "healthy-release",
         seed: int = 1) -> tuple[RunResult, ProcessStep]:
    step = ProcessStep(CHECK_HTTP, argv, "http-step", 60.0, 1.0, "virtual")
    return step(load(scenario), seed), step


def _looks_ms(result: RunResult) -> list[int]:
    return [recorded.look.at_ms for recorded in result.looks]


def _publish_ms(scenario: str = "healthy-release") -> int:
    world = load(scenario)
    return world.platform.epoch_ms + round(world.publish.at_s * 1000)


def test_computing_does_not_move_the_clock(tmp_path: Path) -> None:
    """Start-up and 0.3 s of work before the first request: the look is at the publish itself."""
    script = _script(tmp_path, f"{sys.executable} -c 'sum(range(6_000_000))'\n"
                               "api /machines >/dev/null\napi /machines >/dev/null\n")
    result, step = _run((str(script),))
    assert result.error is None, result.error
    assert _looks_ms(result) == [_publish_ms(), _publish_ms()]
    assert [t.clock for t in step.timings] == ["virtual"]


@pytest.mark.serial
def test_sixty_simulated_seconds_take_two_wall_seconds_at_most(tmp_path: Path) -> None:
    """Looks, two 20 s sleeps and a 20 s held wait: 60 simulated s, within 2 wall s (measured)."""
    script = _script(tmp_path, "api /machines >/dev/null\nsleep 20\n"
                     "id=$(api /machines | jq -r '.[0].id')\n"
                     'api "/machines/$id/wait?state=stopped&timeout=20" >/dev/null\n'
                     "sleep 20\napi /machines >/dev/null\n")
    start = time.monotonic()
    result, step = _run((str(script),))
    wall = time.monotonic() - start
    assert result.error is None, result.error
    looks = _looks_ms(result)
    assert looks[0] == _publish_ms()
    assert looks[-1] - looks[0] == 60_000, [x - looks[0] for x in looks]
    print(f"60 simulated s: {wall:.2f} wall s (the process {step.timings[0].command_s:.2f} s)")
    assert step.timings[0].command_s <= 2.0  # measured 0.3-0.6 s on 2 busy cores


def _burn() -> None:
    while True:
        pass


@contextlib.contextmanager
def _busy(loops: int = 3) -> Iterator[None]:
    burners = [multiprocessing.get_context("spawn").Process(target=_burn, daemon=True)
               for _ in range(loops)]
    for burner in burners:
        burner.start()
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.join()


def _verdict(seed: int) -> tuple[object, ...]:
    result, _ = _run((str(DEPLOY / "check-timestamp.sh"),), "sept25-crash-loop", seed)
    assert result.verdict is not None, result.error
    return result.verdict.ok, result.verdict.reason, result.outcome, tuple(_looks_ms(result))


@pytest.mark.serial
def test_the_same_seed_gives_the_same_verdict_under_load() -> None:
    """check-timestamp.sh, seed 3: the same verdict, reason and looks (to the ms) with 3 busy loops."""
    calm = _verdict(3)
    with _busy():
        loaded = _verdict(3)
    assert loaded[2] == "caught"
    assert loaded == calm


def test_speed_with_virtual_time_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """`--time virtual --speed 5`: one line naming --speed, exit 2, before any world runs."""
    assert main(["compare", "healthy-release", "--check-http", "true", "--time", "virtual",
                 "--speed", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--speed" in err
    assert "--time scaled" in err


def test_the_command_line_runs_virtual_time_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --time or --speed a process row runs on virtual time, and says so."""
    assert main(["compare", "healthy-release", "--check-http", "true", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)
    assert "http-true: 1 run(s) on virtual time" in captured.err


def test_the_step_gets_no_fly_credentials_of_the_callers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller's FLY_ACCESS_TOKEN, FLY_API_TOKEN and FLY_API_BASE_URL stay out; HOME is scratch."""
    monkeypatch.setenv("FLY_ACCESS_TOKEN", "real-access-token-of-the-caller")
    monkeypatch.setenv("FLY_API_TOKEN", "real-api-token-of-the-caller")
    monkeypatch.setenv("FLY_API_BASE_URL", "https://api.machines.dev")
    monkeypatch.setenv("LOOK_DELAY_S", "7")  # the caller's own settings still reach it
    seen = tmp_path / "seen"
    script = _script(tmp_path, f'env > {seen}\nls -A "$HOME" >> {seen}\necho "$HOME" > {seen}.home\n')
    result, _ = _run((str(script),))
    assert result.error is None, result.error
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert "FLY_ACCESS_TOKEN" not in env
    assert "FLY_API_BASE_URL" not in env
    assert env["FLY_API_TOKEN"] != "real-api-token-of-the-caller"
    assert "127.0.0.1:" in env["FLY_API_HOSTNAME"]
    assert env["LOOK_DELAY_S"] == "7"
    home = Path((tmp_path / "seen.home").read_text().strip())
    assert home != Path.home()
    assert not home.exists()  # scratch: removed after the run


def test_a_token_the_step_prints_is_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The twin's token (and the caller's Fly token) printed by the step show as *** in the reason."""
    monkeypatch.setenv("FLY_ACCESS_TOKEN", "caller-secret-token")
    script = _script(tmp_path, 'echo "token $FLY_API_TOKEN and caller-secret-token"\n')
    result, _ = _run((str(script),))
    assert result.verdict is not None
    assert result.verdict.reason == "exit 0: token *** and ***"


def test_workers_run_a_twin_per_world_with_the_same_rows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`compare --runs 3 --workers 2` with a process row: the rows of --workers 1, and the pool's
    wall time and worlds a wall second on stderr."""
    script = _script(tmp_path, "api /machines >/dev/null\nsleep 30\n"
                               "api /machines | jq -e 'length > 0' >/dev/null\n")
    docs = []
    for workers in ("1", "2"):
        assert main(["compare", "sept25-crash-loop", "--check-http", str(script), "--runs", "3",
                     "--workers", workers, "--json"]) == 0
        captured = capsys.readouterr()
        doc = json.loads(captured.out)
        docs.append([(run["seed"], r["outcome"], r["reason"], r["decided_at_s"])
                     for run in doc["runs"] for r in run["results"]])
    assert docs[0] == docs[1]
    assert len(docs[0]) == 3
    assert "processes: 3 world(s) on 2 worker(s) in " in captured.err
    assert "worlds a wall second" in captured.err


def test_a_sweep_with_a_process_runs_on_workers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On virtual time a sweep with a process row takes --workers 2 and writes the rows of --workers 1."""
    sweep = tmp_path / "tiny.toml"
    sweep.write_text('name = "tiny"\nscenario = "sept25-crash-loop"\nchecks = ["timestamp"]\n'
                     'seeds = 1\n[axes]\n"release.behavior" = ["crash_after", "healthy"]\n')
    rows = []
    for workers in ("1", "2"):
        out = tmp_path / f"rows-{workers}.csv"
        assert main(["sweep", str(sweep), "--check-http", "true", "--workers", workers,
                     "--out", str(out)]) == 0
        rows.append(out.read_text())
    capsys.readouterr()
    assert rows[0] == rows[1]
    assert rows[0].count("http-true") == 2


def test_without_a_compiler_the_row_runs_on_scaled_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """No library can be built: one line on stderr says why, and the runs are scaled, not lost."""
    monkeypatch.setenv("TESTBED_VTIME_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", "/bin/false")
    result, step = _run(("true",))
    assert result.verdict is not None
    assert [t.clock for t in step.timings] == ["scaled"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "http-step: virtual time: building its preload library with /bin/false failed" in err
    assert "runs on scaled time" in err


def test_a_step_blocked_on_nothing_timed_meets_the_horizon(tmp_path: Path) -> None:
    """Blocked for good with no timed wait (a read from a FIFO nobody writes): the world runs on
    to its horizon in a fraction of a second of wall time, and the run is an error saying so."""
    script = _script(tmp_path, f"mkfifo {tmp_path}/never\nread line < {tmp_path}/never\n")
    start = time.monotonic()
    result, _ = _run((str(script),))
    assert time.monotonic() - start < 30
    assert result.error is not None
    assert "still running at the world's horizon" in result.error


def test_the_shared_clock_file_is_removed_after_the_run(tmp_path: Path) -> None:
    """The file the step's processes read the clock from is gone once the run is over."""
    named = tmp_path / "named"
    script = _script(tmp_path, f'echo "$TESTBED_VTIME_SHM" > {named}\n')
    result, _ = _run((str(script),))
    assert result.error is None, result.error
    path = Path(named.read_text().strip())
    assert path.name.startswith("testbed-vtime-")
    assert not path.exists()


@pytest.mark.parametrize("client", ["look_twice.py", "look_twice.mjs"])
def test_python_and_node_clients_run_on_the_world_clock(client: str) -> None:
    """urllib with time.sleep, and Node's fetch with setTimeout: looks exactly 10 s apart on the
    platform clock, and the program measures 10 s between them with its own clock."""
    if client.endswith(".mjs") and shutil.which("node") is None:
        pytest.skip("no node")
    result, _ = _run((str(Path(__file__).parent / "data" / "vtime" / client),))
    assert result.verdict is not None, result.error
    looks = _looks_ms(result)
    assert looks == [_publish_ms(), _publish_ms() + 10_000]
    assert result.verdict.reason.split()[3] in ("10.000", "10")
