"""Recording looks with `compare --record`, replaying them with `testbed replay`, user checks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from platform_testbed.checks.flyjson import dump_recording, parse_rfc3339_ms, read_recordings
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", sorted(scenario.shipped()))
def test_replay_of_a_recording_gives_the_live_verdicts(name, tmp_path, capsys):
    """Every built-in check, replayed from the simulator's recording, decides as it did live.

    flyctl-smoke with every machine updated at the publish (``rollout=at-publish``): a
    recording holds looks, not a deploying run's updates, so replay reads it that way
    (docs/check-protocol.md "Checks that deploy"); its jitter seed is the recorded one.
    """
    looks = tmp_path / "looks.jsonl"
    assert main(["compare", name, "--runs", "2", "--json", "--record", str(looks),
                 "--check-opt", "flyctl-smoke.rollout=at-publish"]) in (0, 1)
    live = json.loads(capsys.readouterr().out)
    assert main(["replay", str(looks), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)["results"]
    expected = [
        (f"{r['check']}/seed={run['seed']}", r["check"], r["verdict"], r["reason"], r["decided_at_s"])
        for run in live["runs"]
        for r in run["results"]
    ]
    got = [(r["run"], r["check"], r["verdict"], r["reason"], r["decided_at_s"]) for r in replayed]
    assert got == expected


def test_recording_lines_are_fly_machines_api_objects(tmp_path, capsys):
    """Each recorded line holds API-shaped machines: image_ref, events with request.exit_event."""
    looks = tmp_path / "looks.jsonl"
    main(["compare", "sept25-crash-loop", "--check", "timestamp", "--record", str(looks)])
    capsys.readouterr()
    lines = [json.loads(line) for line in looks.read_text().splitlines()]
    machine = lines[-1]["machines"][0]
    assert set(machine) >= {"id", "state", "image_ref", "events"}
    exits = [e for e in machine["events"] if e["type"] == "exit"]
    assert exits
    assert "exit_code" in exits[0]["request"]["exit_event"]
    assert lines[-1]["run"] == "timestamp/seed=1"


def test_replay_chooses_checks_by_name_for_a_real_platform_recording(tmp_path, capsys):
    """A recording without run labels goes to every check asked for."""
    looks = tmp_path / "looks.jsonl"
    main(["compare", "sept25-crash-loop", "--check", "timestamp", "--record", str(looks)])
    capsys.readouterr()
    unlabelled = [json.loads(line) for line in looks.read_text().splitlines()]
    for line in unlabelled:
        del line["run"]
    looks.write_text("".join(json.dumps(line) + "\n" for line in unlabelled))
    assert main(["replay", str(looks), "--check", "count", "--check", "timestamp", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert [(r["check"], r["verdict"]) for r in rows] == [("count", "pass"), ("timestamp", "fail")]


def test_a_broken_recording_is_bad_input_naming_line_and_field(tmp_path, capsys):
    """A recording line without a required field: exit 2, one line naming the line and field."""
    path = tmp_path / "broken.jsonl"
    path.write_text('{"at_ms": 1, "publish_started_ms": 0, "machines": []}\n{"at_ms": 2}\n')
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "line 2" in err
    assert "publish_started_ms" in err


def test_user_check_loads_from_a_file_in_scenarios(capsys):
    """The documented user check loads by file path, takes --check-opt, and gives a verdict."""
    check = str(ROOT / "scenarios" / "user_check.py") + ":AnyCrashCheck"
    assert main(["compare", "sept25-crash-loop", "--check", check, "--check-opt", "settle_s=20",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["runs"][0]["results"][0]
    assert result["check"] == "any-crash"
    assert result["outcome"] == "caught"
    assert result["decided_at_s"] == 20.0


def test_check_opt_for_an_unknown_option_is_bad_input(capsys):
    """A --check-opt the user check class does not take is one line naming its fields, exit 2."""
    check = str(ROOT / "scenarios" / "user_check.py") + ":AnyCrashCheck"
    assert main(["compare", "sept25-crash-loop", "--check", check, "--check-opt", "nope=1"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "nope" in err
    assert "any-crash: settle_s" in err


def test_a_simulator_recording_writes_rfc3339_exited_at_and_reads_back_equal(tmp_path, capsys):
    """Recorded exits carry exited_at as UTC RFC3339 (ms) equal to their timestamp; the file
    reads back to the same looks it was written from."""
    looks = tmp_path / "looks.jsonl"
    main(["compare", "sept25-crash-loop", "--check", "timestamp", "--record", str(looks)])
    capsys.readouterr()
    text = looks.read_text()
    exits = [
        event
        for line in text.splitlines()
        for machine in json.loads(line)["machines"]
        for event in machine["events"]
        if event["type"] == "exit"
    ]
    assert exits
    for event in exits:
        exited_at = event["request"]["exit_event"]["exited_at"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", exited_at)
        assert parse_rfc3339_ms(exited_at) == event["timestamp"]
    recordings = read_recordings(text.splitlines())
    assert dump_recording(recordings[0]) == text


def test_replay_header_names_the_options_the_recording_gave(tmp_path, capsys):
    """The text header groups options by source, a recording's too (as --json says)."""
    looks = tmp_path / "looks.jsonl"
    assert main(["compare", "healthy-release", "--check", "count", "--check-opt",
                 "look_delay_s=4", "--record", str(looks)]) == 0
    capsys.readouterr()
    main(["replay", str(looks)])
    header = capsys.readouterr().out
    assert re.search(r"^  count  look_delay_s=4, [^;(]*\(recording\)$", header, re.M), header


def test_a_run_the_check_deployed_in_is_not_replayed_but_said_why(tmp_path, capsys):
    """flyctl-smoke deploys in the simulator by default; its recording holds looks, not the
    updates, so its row says why replay cannot read it, rather than a verdict the live run
    did not give (it passed at +0.0 s where the live run failed)."""
    looks = tmp_path / "looks.jsonl"
    main(["compare", "restart-counter-platform", "--check", "flyctl-smoke", "--json",
          "--record", str(looks)])
    [live] = [r for run in json.loads(capsys.readouterr().out)["runs"] for r in run["results"]]
    assert live["verdict"] == "fail"
    main(["replay", str(looks), "--json"])
    [row] = json.loads(capsys.readouterr().out)["results"]
    assert row["verdict"] is None
    assert row["reason"].startswith("flyctl-smoke deployed the release in this recorded run")
    assert row["reason"].endswith("record with --check-opt flyctl-smoke.rollout=at-publish")
