"""Checks in any language: the JSON Lines subprocess adapter, its errors, cleanup and schemas."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import textwrap
import time
from pathlib import Path

import jsonschema
import pytest

from platform_testbed.checks import Event, Look, MachineSnapshot, Verdict, Wait, make_check
from platform_testbed.checks.flyjson import replay
from platform_testbed.checks.layered import TimestampCheck
from platform_testbed.sim.checkcmd import (
    AnswerError,
    CommandCheck,
    ExternalCheckError,
    derive_name,
    parse_answer,
    schema,
)
from platform_testbed.sim.checkload.loader import load_checks
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish.world import run
from tests.procs import RELAY
from tests.procs import children as _children

ROOT = Path(__file__).resolve().parent.parent
TIMESTAMP_JS = ROOT / "examples" / "checks" / "timestamp.js"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed: the example check is JavaScript")
NODE_CHECK = f"node {shlex.quote(str(TIMESTAMP_JS))}"


def _python_child(tmp_path: Path, body: str, name: str = "child.py") -> str:
    """A command running a small Python script as the check's process."""
    script = tmp_path / name
    script.write_text(textwrap.dedent(body))
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


# --- parity: the JavaScript timestamp check against the Python one -----------------------


@needs_node
@pytest.mark.parametrize("name", list(scenario.shipped()))
def test_node_timestamp_check_matches_python_on_every_shipped_scenario(name):
    """The node port gives the Python timestamp check's verdict, reason, machine and decision time."""
    loaded = scenario.load(name)
    options = loaded.check.model_dump()
    python = make_check("timestamp", options)
    [node] = load_checks([f"cmd:{NODE_CHECK}"], options)
    assert isinstance(node, CommandCheck)
    with node:  # one process serves every seed's run
        for seed in range(loaded.seed, loaded.seed + 4):
            ours, theirs = run(loaded, seed, python), run(loaded, seed, node)
            assert theirs.error is None
            assert theirs.verdict is not None
            assert ours.verdict is not None
            assert (theirs.verdict.ok, theirs.verdict.reason, theirs.verdict.machine) == (
                ours.verdict.ok, ours.verdict.reason, ours.verdict.machine
            )
            assert theirs.verdict.layer == ours.verdict.layer
            assert theirs.decided_at_s == ours.decided_at_s
            assert len(theirs.looks) == len(ours.looks)
            assert theirs.outcome == ours.outcome


def _machine(state: str, at_ms: int, *events: Event) -> MachineSnapshot:
    return MachineSnapshot("m1", state, "app:release", tuple(events), at_ms)


def _crash(at_ms: int) -> Event:
    return Event("exit", "stopped", at_ms, exit_code=1, restarting=True, restart_count=1)


@needs_node
def test_node_check_rounds_exact_ties_as_python_formats_them():
    """Times that are exact ties at one decimal (+0.25 s, +10.75 s) are rounded half to even."""
    start = Event("start", "started", 100)
    looks = [
        Look(1000, (_machine("started", 1000, start),)),
        Look(6000, (_machine("started", 6000, Event("start", "started", 600), _crash(250), start),)),
        Look(11000, (_machine("started", 11000, Event("start", "started", 11000), _crash(10750)),)),
    ]
    expected = replay(TimestampCheck(), 0, looks).verdict
    assert expected is not None
    assert "+10.8 s" in expected.reason
    assert "+0.2 s" in expected.reason
    with CommandCheck(NODE_CHECK) as node:
        assert replay(node, 0, looks).verdict == expected


# --- one process, several runs ------------------------------------------------------------

ECHO_RUN = """
    import json, os, sys
    for line in sys.stdin:
        request = json.loads(line)
        if len(request["looks"]) < 2:
            print(json.dumps({"wait": 1}), flush=True)
        else:
            reason = f"{request['run']} pid {os.getpid()} options {request['options']}"
            print(json.dumps({"verdict": {"ok": True, "reason": reason, "machine": None}}), flush=True)
"""


def test_one_process_serves_several_runs_each_with_a_fresh_run_id(tmp_path):
    """Driving the same adapter for two seeds reuses its process and sends a new run id."""
    loaded = scenario.load("healthy-release")
    with CommandCheck(_python_child(tmp_path, ECHO_RUN), options={"look_delay_s": 7}) as check:
        first, second = run(loaded, 1, check), run(loaded, 2, check)
        assert first.verdict is not None
        assert second.verdict is not None
        pid = check.pid
        assert first.verdict.reason == f"run-1 pid {pid} options {{'look_delay_s': 7}}"
        assert second.verdict.reason == f"run-2 pid {pid} options {{'look_delay_s': 7}}"


def test_fewer_looks_than_last_time_starts_a_new_run(tmp_path):
    """A call with fewer looks than the previous one is a new run, even without an empty call."""
    look = Look(1000, (_machine("started", 1000, Event("start", "started", 100)),))
    with CommandCheck(_python_child(tmp_path, ECHO_RUN)) as check:
        check.next(0, [])
        first = check.next(0, [look, look])
        second = check.next(0, [look])
        third = check.next(0, [look, look])
    assert isinstance(first, Verdict)
    assert first.reason.startswith("run-1 ")
    assert second == Wait(1.0)
    assert isinstance(third, Verdict)
    assert third.reason.startswith("run-2 ")


# --- what goes wrong turns into the outcome error ----------------------------------------


def _error_of(command: str, timeout_s: float = 5.0) -> str:
    """The run's error message when the check is this command, in the 25 September world."""
    with CommandCheck(command, name="broken", timeout_s=timeout_s) as check:
        result = run(scenario.load("sept25-crash-loop"), 1, check)
    assert result.outcome == "error"
    assert result.error is not None
    assert "\n" not in result.error
    return result.error


def test_a_command_that_hangs_is_an_error_within_its_timeout(tmp_path):
    """A child that never answers costs one timeout, then the run's outcome is error."""
    command = _python_child(tmp_path, "import time\ntime.sleep(60)\n")
    began = time.monotonic()
    error = _error_of(command, timeout_s=0.2)
    assert time.monotonic() - began < 3
    assert "ExternalCheckError" in error
    assert "gave no answer within 0.2 s" in error


def test_a_command_that_exits_is_an_error_quoting_its_stderr(tmp_path):
    """A child that dies at once: its exit status and the last lines of its stderr."""
    command = _python_child(
        tmp_path, "import sys\nprint('loading config', file=sys.stderr)\nsys.exit('no config found')\n"
    )
    error = _error_of(command)
    assert "exited with status 1" in error
    assert error.endswith("stderr: loading config | no config found")


def test_a_command_that_writes_garbage_is_an_error(tmp_path):
    """A line that is not JSON is named as such, and quoted."""
    command = _python_child(tmp_path, "import sys\nfor line in sys.stdin:\n    print('OK!', flush=True)\n")
    error = _error_of(command)
    assert "answered OK!: not JSON" in error


ANSWERS_EVERY_LINE = "import sys\nfor line in sys.stdin:\n    print({answer!r}, flush=True)\n"


def test_a_command_that_answers_an_invalid_object_is_an_error(tmp_path):
    """An answer the protocol rejects is an error naming the field and the rule."""
    answer = json.dumps({"verdict": {"ok": "yes", "reason": "fine"}})
    command = _python_child(tmp_path, ANSWERS_EVERY_LINE.format(answer=answer))
    error = _error_of(command)
    assert "field 'verdict.ok' must be true or false" in error


def test_a_command_that_answers_twice_has_its_second_line_read_as_the_next_answer(tmp_path):
    """The n-th line answers the n-th request: a second line for one request is the answer
    to the next, whenever it arrives, so the error is the same every time (issue 32)."""
    twice = '{"wait": 1}\njunk'
    command = _python_child(tmp_path, ANSWERS_EVERY_LINE.format(answer=twice))
    error = _error_of(command)
    assert "run-1 after 1 look(s): answered junk: not JSON" in error


def test_a_command_that_cannot_start_is_an_error(tmp_path):
    """A program that is not executable is the run's error, not a traceback."""
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    assert "cannot start" in _error_of(shlex.quote(str(script)))


INVALID_ANSWERS = [
    "",
    "[]",
    '{"wait": -1}',
    '{"wait": "5"}',
    '{"wait": true}',
    '{"wait": NaN}',
    '{"wait": Infinity}',
    '{"wait": 1, "verdict": {"ok": true, "reason": "x"}}',
    '{"wait": 1, "wait": 2}',
    '{"sleep": 1}',
    '{"verdict": true}',
    '{"verdict": {"ok": true}}',
    '{"verdict": {"ok": true, "reason": ""}}',
    '{"verdict": {"ok": 1, "reason": "x"}}',
    '{"verdict": {"ok": true, "reason": "x", "machine": 3}}',
    '{"verdict": {"ok": true, "reason": "x", "judged": "no"}}',
    '{"verdict": {"ok": true, "reason": "x", "layer": 2}}',
    '{"verdict": {"ok": true, "reason": "x", "extra": 1}}',
]
#: Not JSON at all, or JSON that Python's parser bends (NaN, a repeated key): a schema
#: judges parsed values, so only the adapter can refuse these.
SCHEMA_CANNOT_SAY = {"", '{"wait": NaN}', '{"wait": Infinity}', '{"wait": 1, "wait": 2}'}
VALID_ANSWERS = [
    '{"wait": 0}',
    '{"wait": 2.5}',
    '{"verdict": {"ok": true, "reason": "x"}}',
    '{"verdict": {"ok": false, "reason": "x", "machine": "m1", "layer": "l", "judged": false}}',
    '{"verdict": {"ok": false, "reason": "x", "machine": null}}',
]


@pytest.mark.parametrize("text", INVALID_ANSWERS)
def test_parse_answer_refuses_what_the_schema_refuses(text):
    """Every answer the adapter refuses is one the shipped answer schema refuses too."""
    with pytest.raises(AnswerError):
        parse_answer(text)
    if text not in SCHEMA_CANNOT_SAY:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(json.loads(text), schema("answer"))


@pytest.mark.parametrize("text", VALID_ANSWERS)
def test_parse_answer_accepts_what_the_schema_accepts(text):
    """Every answer the schema accepts, the adapter reads."""
    jsonschema.validate(json.loads(text), schema("answer"))
    parse_answer(text)


# --- cleanup ------------------------------------------------------------------------------

SPAWNS_AND_HANGS = """
    import subprocess, sys, time
    grandchild = subprocess.Popen(["sleep", "60"])
    print(f"grandchild {grandchild.pid}", file=sys.stderr, flush=True)
    time.sleep(60)
"""


@needs_proc
def test_a_hung_command_and_what_it_started_are_killed_and_reaped(tmp_path):
    """After the timeout the child is reaped (no zombie) and its own child is killed (no orphan)."""
    with CommandCheck(_python_child(tmp_path, SPAWNS_AND_HANGS), timeout_s=0.5) as check:
        with pytest.raises(ExternalCheckError) as raised:
            check.next(0, [])
        assert check.pid is None
    message = str(raised.value)
    grandchild = int(message.rsplit("grandchild ", 1)[1])
    deadline = time.monotonic() + 2
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(grandchild)
    assert _children() == []


@needs_proc
def test_close_ends_a_healthy_process_and_reaps_it(tmp_path):
    """close() ends the child it started; none of this process's children is left."""
    check = CommandCheck(_python_child(tmp_path, ECHO_RUN))
    check.next(0, [])
    pid = check.pid
    assert pid is not None
    assert _alive(pid)
    check.close()
    assert not Path(f"/proc/{pid}").exists()
    assert _children() == []


@needs_node
@needs_proc
def test_cli_compare_runs_a_command_check_and_leaves_no_process(capsys):
    """`compare --check-cmd` puts the node check beside timestamp; no child outlives main()."""
    code = main(["compare", "sept25-crash-loop", "--runs", "3", "--check", "timestamp",
                 "--check-cmd", NODE_CHECK, "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    for one in report["runs"]:
        ours, theirs = one["results"]
        assert theirs["check"] == "timestamp.js"
        assert {k: theirs[k] for k in ("verdict", "reason", "machine", "decided_at_s", "outcome")} == {
            k: ours[k] for k in ("verdict", "reason", "machine", "decided_at_s", "outcome")
        }
    assert _children() == []


@needs_node
def test_cli_replay_feeds_recorded_looks_to_a_command_check(tmp_path, capsys):
    """A recording of timestamp's runs, replayed to the node check, gives timestamp's verdicts."""
    looks = tmp_path / "looks.jsonl"
    assert main(["compare", "slow-crash-loop", "--check", "timestamp", "--runs", "2",
                 "--record", str(looks), "--json"]) == 0
    capsys.readouterr()
    assert main(["replay", str(looks), "--check-cmd", NODE_CHECK, "--check-cmd-name", "js",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert main(["replay", str(looks), "--check", "timestamp", "--json"]) == 0
    rows += json.loads(capsys.readouterr().out)["results"]
    by_run: dict[str, dict[str, tuple[object, ...]]] = {}
    for row in rows:
        by_run.setdefault(row["run"], {})[row["check"]] = (row["verdict"], row["reason"], row["decided_at_s"])
    assert len(by_run) == 2
    for checks in by_run.values():
        assert checks["js"] == checks["timestamp"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--check-cmd", "no-such-program-xyz"], "no program 'no-such-program-xyz'"),
        (["--check-cmd", "'unbalanced"], "cannot split it into words"),
        (["--check-cmd", "true", "--check-cmd-name", "a", "--check-cmd-name", "b"], "2 name(s) for 1"),
        (["--check", "timestamp", "--check-cmd", "true", "--check-cmd-name", "timestamp"],
         "another check is named 'timestamp'"),
        (["--check-cmd", "true", "--check-cmd-timeout", "0"], "--check-cmd-timeout: must be"),
    ],
)
def test_bad_command_options_are_one_line_bad_input(argv, message, capsys):
    """A command check that cannot work is bad input: exit 2 and one line naming the option."""
    assert main(["compare", "healthy-release", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_names_come_from_the_program_or_the_script_it_runs():
    """The default name is the program, or the script an interpreter runs (not inline code)."""
    assert derive_name(["node", "examples/checks/timestamp.js"]) == "timestamp.js"
    assert derive_name(["./bin/my-check", "--strict"]) == "my-check"
    assert derive_name(["python3", "-u", "check.py"]) == "check.py"
    assert derive_name(["sh", "-c", "exec x > /dev/null"]) == "sh"


# --- schemas ------------------------------------------------------------------------------



@needs_node
def test_real_requests_and_answers_validate_against_the_shipped_schemas(tmp_path):
    """Requests the adapter sent and answers the node check gave, logged in between, are valid."""
    log = tmp_path / "exchange.jsonl"
    relay = _python_child(tmp_path, RELAY, "relay.py")
    command = f"{relay} {shlex.quote(str(log))} {NODE_CHECK}"
    for name in ("sept25-crash-loop", "gives-up", "healthy-release"):
        loaded = scenario.load(name)
        with CommandCheck(command, options=loaded.check.model_dump()) as check:
            assert run(loaded, loaded.seed, check).error is None
    lines = log.read_text().splitlines()
    requests, answers = lines[0::2], lines[1::2]
    assert len(requests) == len(answers) > 10
    assert any(json.loads(r)["looks"] for r in requests)
    assert any("verdict" in json.loads(a) for a in answers)
    for text in requests:
        jsonschema.validate(json.loads(text), schema("request"))
    for text in answers:
        jsonschema.validate(json.loads(text), schema("answer"))
        parse_answer(text)
