"""Real Fly Machines API payloads (tests/data/fly/, sources in SOURCES.md) read and replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from platform_testbed.checks import BUILTIN_CHECKS, Event
from platform_testbed.checks.flyjson import payload_recording
from platform_testbed.sim.cli.parser import main

DATA = Path(__file__).resolve().parent / "data" / "fly"
PAYLOADS = sorted(DATA.glob("*.json"))


def load(name: str) -> object:
    """The parsed JSON of one committed payload."""
    return json.loads((DATA / name).read_text())


def test_at_least_six_payloads_from_three_sources_are_committed() -> None:
    """The evidence the issue asks for is there, and every file is listed in SOURCES.md."""
    sources = (DATA / "SOURCES.md").read_text()
    assert len(PAYLOADS) >= 6
    assert all(f"`{path.name}`" in sources for path in PAYLOADS)
    assert {"superfly/docs", "SecurityDiscovery/laravel-fly-machines",
            "obeli-sk/components-flyio"} <= {line.split("|")[2].strip()
                                             for line in sources.splitlines()
                                             if line.startswith("| `")}


@pytest.mark.parametrize("path", PAYLOADS, ids=lambda p: p.name)
@pytest.mark.parametrize("check", sorted(BUILTIN_CHECKS))
def test_every_payload_replays_through_every_check(path: Path, check: str, capsys) -> None:
    """`testbed replay FILE --check NAME` accepts each real payload: exit 0 or 1, never 2."""
    code = main(["replay", str(path), "--check", check, "--json"])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    rows = json.loads(captured.out)["results"]
    assert [(r["check"], r["looks_recorded"]) for r in rows] == [(check, 1)]


def test_docs_exit_127_newest_exit_and_times() -> None:
    """docs _get.erb: newest event exit 127, not OOM, not restarting, restart_count 0, stopped."""
    recording = payload_recording(load("docs-get-exit-127.json"))
    (machine,) = recording.looks[0].machines
    assert machine.state == "stopped"
    assert [(e.type, e.status, e.source) for e in machine.events] == [
        ("exit", "stopped", "flyd"), ("update", "replacing", "user"),
        ("start", "started", "flyd"), ("launch", "created", "user"),
    ]
    newest = machine.newest_exit()
    assert newest == Event("exit", "stopped", 1653047898717, "flyd", exit_code=127)
    assert machine.gave_up
    # the look is the newest event; the publish is the update event
    assert recording.looks[0].at_ms == 1653047898717
    assert recording.publish_started_ms == 1653047897200


def test_laravel_monitor_event_exit_is_a_requested_stop_with_code_0() -> None:
    """laravel README: the exit sits under MonitorEvent, requested_stop true, no exit_code (0)."""
    recording = payload_recording(load("laravel-postgres-user-restart.json"))
    (machine,) = recording.looks[0].machines
    assert [(e.type, e.status, e.source) for e in machine.events] == [
        ("start", "started", "flyd"), ("start", "started", "flyd"),
        ("restart", "starting", "flyd"), ("exit", "stopped", "flyd"),
        ("restart", "stopping", "user"),
    ]
    newest = machine.newest_exit()
    assert newest is not None
    assert (newest.timestamp, newest.exit_code, newest.requested_stop, newest.oom_killed,
            newest.restarting, newest.restart_count) == (1669151872435, 0, True, False, False, 0)
    assert not newest.is_crash
    # no launch/update event: the publish defaults to the look, the newest start
    assert recording.looks[0].at_ms == recording.publish_started_ms == 1669151873327


def test_obelisk_start_with_an_empty_request_is_a_plain_start() -> None:
    """obelisk test payload: start/started with "request": {} reads as a start, no exit."""
    recording = payload_recording(load("obelisk-started-request-empty.json"))
    (machine,) = recording.looks[0].machines
    assert machine.events == (
        Event("start", "started", 1757505787751, "flyd"),
        Event("launch", "created", 1757505784914, "user"),
    )
    assert machine.newest_exit() is None
    assert recording.publish_started_ms == 1757505784914


def test_docs_launch_without_events_is_dated_by_created_at() -> None:
    """launch_syd_resp: no events key; the look is dated by created_at 2022-05-20T17:07:36Z."""
    recording = payload_recording(load("docs-2022-launch-no-events.json"))
    (machine,) = recording.looks[0].machines
    assert (machine.state, machine.events) == ("starting", ())
    # 2022-05-20T17:07:36Z = 1653066456 s since the epoch (date -u -d @1653066456)
    assert recording.looks[0].at_ms == recording.publish_started_ms == 1_653_066_456_000


def test_docs_list_is_one_look_of_two_machines() -> None:
    """_list_resp (an array): both machines in one look, at the newest start of the two."""
    recording = payload_recording(load("docs-list-two-started.json"))
    look = recording.looks[0]
    assert [(m.id, m.state) for m in look.machines] == [
        ("a5c5de9ce64ca12", "started"), ("9c487adb2596113", "started"),
    ]
    assert look.at_ms == 1698719726615
    assert recording.publish_started_ms == 1698719723203  # the newer of the two launches


def test_docs_create_and_replacing_payloads() -> None:
    """_create_resp is one launch/created; the 2022 get is mid-update, state replacing."""
    created = payload_recording(load("docs-create-launch-created.json")).looks[0].machines[0]
    assert (created.state, created.events) == (
        "created", (Event("launch", "created", 1699408350300, "user"),))
    replacing = payload_recording(load("docs-2022-get-replacing.json"))
    assert replacing.looks[0].machines[0].state == "replacing"
    assert replacing.publish_started_ms == replacing.looks[0].at_ms == 1652299077507


def test_a_machines_wrapper_and_options_set_the_times(tmp_path, capsys) -> None:
    """{"machines": [...]} reads like an array; --at-ms and --publish-ms override the defaults."""
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"machines": load("docs-list-two-started.json")}))
    assert main(["replay", str(path), "--check", "count", "--json",
                 "--publish-ms", "1698719723000", "--at-ms", "1698719730000"]) in (0, 1)
    row = json.loads(capsys.readouterr().out)["results"][0]
    assert row["looks_recorded"] == 1
    recording = payload_recording(load("docs-list-two-started.json"), 1698719730000, 1698719723000)
    assert (recording.publish_started_ms, recording.looks[0].at_ms) == (1698719723000,
                                                                       1698719730000)


def test_payload_problems_are_bad_input_naming_the_field(tmp_path, capsys) -> None:
    """A payload event without timestamp, or a publish after the look: exit 2, one line."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"id": "m", "state": "started", "events": [{"type": "start"}]}]))
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("payload: field 'machines[0].events[0].timestamp' is missing")
    good = DATA / "docs-get-exit-127.json"
    assert main(["replay", str(good), "--publish-ms", "1653047898718"]) == 2
    assert "later than the look" in capsys.readouterr().err


def test_at_ms_is_refused_for_a_json_lines_recording(tmp_path, capsys) -> None:
    """A recording carries its own times: --at-ms with one is bad input, exit 2."""
    looks = tmp_path / "looks.jsonl"
    main(["compare", "sept25-crash-loop", "--check", "timestamp", "--record", str(looks)])
    capsys.readouterr()
    assert main(["replay", str(looks), "--at-ms", "5"]) == 2
    assert "--at-ms: only for a raw payload file" in capsys.readouterr().err
