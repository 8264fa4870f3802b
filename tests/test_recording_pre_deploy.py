"""Pre-deploy states a recording declares (issue 19 item 5): read first, never the first look's state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from platform_testbed.checks import Event, Look, MachineSnapshot
from platform_testbed.checks.flyjson import look_to_json, read_recordings
from platform_testbed.sim.checkload.loader import build_checks
from platform_testbed.sim.config.scenario import BadInput, load
from platform_testbed.sim.publish import world
from platform_testbed.sim.publish.recording import Recorder, load_recordings, replay_all
from platform_testbed.sim.twin.app import ServedApp

T0 = 1_700_000_000_000
#: A crash loop before the publish and after it: start, crash 0.5 s later, restart 1.5 s on.
BEFORE = (Event("launch", "created", T0 - 10_000, "user"), Event("start", "started", T0 - 3_000),
          Event("exit", "stopped", T0 - 2_500, exit_code=1, restarting=True, restart_count=5))


def _events_until(at_ms: int) -> list[Event]:
    events = [*BEFORE, Event("update", "replacing", T0, "user")]
    for k in range(20):
        start_ms, exit_ms = T0 + 1_000 + 2_000 * k, T0 + 1_500 + 2_000 * k
        if start_ms <= at_ms:
            events.append(Event("start", "started", start_ms))
        if exit_ms <= at_ms:
            events.append(Event("exit", "stopped", exit_ms, exit_code=1, restarting=True,
                                restart_count=k + 1))
    return events


def _look(at_ms: int, cap: int, pre_deploy: dict[str, str] | None) -> Look:
    events = _events_until(at_ms)
    newest = events[-1]
    state = "stopped" if newest.type in ("exit", "update") else "started"
    machine = MachineSnapshot("m1", state, "app:release", tuple(reversed(events))[:cap], at_ms)
    return Look(at_ms, (machine,), pre_deploy)


def _recording(tmp_path: Path, cap: int, pre_deploy: dict[str, str] | None) -> str:
    """The looks a poller took every second from the publish: the first between restarts."""
    path = tmp_path / "run.jsonl"
    lines = [look_to_json(_look(T0 + 1_000 * i, cap, pre_deploy if i == 0 else None), T0)
             for i in range(40)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _flyctl(path: str) -> tuple[str | None, str]:
    (row,) = replay_all(load_recordings(path), ["flyctl-smoke"], {})
    return row.verdict, row.reason


def test_the_first_look_catches_it_stopped_between_restarts(tmp_path: Path) -> None:
    """The premise: at the publish it reads stopped, no older event is listed, and undeclared it passes."""
    first = _look(T0, 1, None).machines[0]
    assert first.state == "stopped"
    assert all(e.timestamp >= T0 for e in first.events)
    # The blind spot a declaration closes: the publish-instant look's state stands in.
    assert _flyctl(_recording(tmp_path, 1, None))[0] == "pass"


def test_a_declared_started_crash_loop_is_failed(tmp_path: Path) -> None:
    """Declared started before the publish: flyctl launches and smoke-checks it, and fails it."""
    verdict, reason = _flyctl(_recording(tmp_path, 1, {"m1": "started"}))
    assert verdict == "fail"
    assert "the app appears to be crashing" in reason


def test_a_declared_stopped_machine_is_skipped_with_that_reason(tmp_path: Path) -> None:
    """Declared stopped: flyctl leaves it (shouldSkipLaunch), and the reason says so."""
    verdict, reason = _flyctl(_recording(tmp_path, 1, {"m1": "stopped"}))
    assert verdict == "pass"
    assert "m1 (stopped)" in reason
    assert "not started and not checked" in reason


def test_a_declaration_wins_over_the_events_before_the_publish(tmp_path: Path) -> None:
    """With the older exit listed (restarting: read as starting) a declared stopped still skips."""
    assert _flyctl(_recording(tmp_path, 3, None))[0] == "fail"
    assert _flyctl(_recording(tmp_path, 3, {"m1": "stopped"}))[0] == "pass"


def test_a_declaration_on_the_first_line_holds_for_the_run() -> None:
    """Every look of the run carries the run's declaration, the lines without one too."""
    lines = [look_to_json(_look(T0 + 1_000 * i, 3, {"m1": "started"} if i == 1 else None), T0)
             for i in range(3)]
    (recording,) = read_recordings(lines)
    assert [look.pre_deploy for look in recording.looks] == [{"m1": "started"}] * 3


@pytest.mark.parametrize(("value", "message"), [
    ('"started"', "field 'pre_deploy' must be an object"),
    ('{"m1": "runing"}', "field 'pre_deploy.m1' must be one of created, starting"),
    ('{"m1": 3}', "field 'pre_deploy.m1' must be one of"),
])
def test_a_bad_declaration_is_one_line_of_bad_input(tmp_path: Path, value: str, message: str) -> None:
    """A declaration that is not {id: Fly machine state} is refused, naming the field."""
    line = json.loads(look_to_json(_look(T0, 3, None), T0))
    text = json.dumps(line)[:-1] + f', "pre_deploy": {value}}}'
    path = tmp_path / "bad.jsonl"
    path.write_text(text + "\n")
    with pytest.raises(BadInput) as refused:
        load_recordings(str(path))
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_two_lines_of_a_run_may_not_declare_differently(tmp_path: Path) -> None:
    """A run has one state per machine before its publish."""
    lines = [look_to_json(_look(T0, 3, {"m1": "started"}), T0),
             look_to_json(_look(T0 + 1_000, 3, {"m1": "stopped"}), T0)]
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BadInput, match="line 2: field 'pre_deploy' differs"):
        load_recordings(str(path))


def test_the_simulators_recorded_runs_declare_the_state_before_the_roll() -> None:
    """A recorded run's lines carry each machine's state just before the update."""
    scenario = load("sleeping-api-flyctl")
    (built,) = build_checks(["flyctl-smoke"], scenario.check)
    result = world.run(scenario, 1, built.check)
    recorder = Recorder(scenario.publish_started_ms, {})
    recorder(result)
    declared = {json.dumps(json.loads(line).get("pre_deploy")) for line in recorder.lines}
    assert declared == {json.dumps({"m1": "stopped"})}


def test_the_twins_recordings_declare_the_state_before_its_first_update() -> None:
    """The twin records each machine's state before the release's first update."""
    app = ServedApp(load("sept25-crash-loop"), 1, testbed_publishes=True)
    while app.publish_started_ms is None:
        app.env.step()
    app.get(app.app, "m1")
    assert app.pre_deploy == {"m1": "started"}
    assert app.recorded[-1].look.pre_deploy == {"m1": "started"}

