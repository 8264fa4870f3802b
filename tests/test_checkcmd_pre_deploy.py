"""Check commands get each machine's state before the publish (``pre_deploy``) on the wire.

Issue 19 item 5: a check must read the pre-deploy state from before the publish, never
from the first look. A look that knows it carries ``pre_deploy`` in the request; one that
does not is sent byte for byte as before the field existed. The end-to-end tests drive a
small Python check command that prints back what it received, each bounded by the
per-answer timeout, and leave no child process behind.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from platform_testbed.checks import Event, Look, MachineSnapshot
from platform_testbed.checks.flyjson import look_to_json, parse_line
from platform_testbed.checks.model import MACHINE_STATES
from platform_testbed.sim.checkcmd import CommandCheck, look_to_api, request_line, schema
from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish.world import run
from tests.procs import RELAY
from tests.procs import children as _children

T0 = 1_758_790_830_000

#: Logs every request line it gets, takes the incremental mode when argv[2] says so, and
#: after ``LOOKS`` looks answers a passing verdict whose reason is what it received: each
#: look's ``pre_deploy`` (the string "absent" where a look had none), and the keys of each.
ECHO = """
    import json, sys
    log, incremental = open(sys.argv[1], "a"), sys.argv[2] == "incremental"
    LOOKS = 3
    runs = {}
    for line in sys.stdin:
        log.write(line)
        log.flush()
        req = json.loads(line)
        looks = runs.setdefault(req["run"], [])
        del looks[req.get("looks_from", 0):]
        looks.extend(req["looks"])
        answer = {"wait": 0.5}
        if len(looks) >= LOOKS:
            seen = {"pre_deploy": [look.get("pre_deploy", "absent") for look in looks],
                    "keys": [sorted(look) for look in looks]}
            answer = {"verdict": {"ok": True, "reason": json.dumps(seen, sort_keys=True),
                                  "machine": None}}
        if incremental and "supports" in req:
            answer["incremental"] = True
        print(json.dumps(answer), flush=True)
"""


def _echo(tmp_path: Path, mode: str = "full") -> tuple[list[str], Path]:
    script, log = tmp_path / "echo.py", tmp_path / f"requests-{mode}.jsonl"
    script.write_text(textwrap.dedent(ECHO))
    return [sys.executable, str(script), str(log), mode], log


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def _look(at_ms: int, pre_deploy: dict[str, str] | None) -> Look:
    events = (Event("update", "replaced", T0), Event("start", "started", T0 - 30_000))
    return Look(at_ms, (MachineSnapshot("m1", "started", "app:release", events, at_ms),), pre_deploy)


# --- the encoding -------------------------------------------------------------------------


def test_a_look_without_a_pre_deploy_state_is_encoded_as_before_the_field() -> None:
    """Unknown (None) or empty: the look has only at_ms and machines, as every old check expects."""
    for declared in (None, {}):
        assert sorted(look_to_api(_look(T0, declared))) == ["at_ms", "machines"]


def test_a_known_pre_deploy_state_is_only_added_to_the_look() -> None:
    """The field is additive: drop it and the encoding is the undeclared look's, byte for byte."""
    known = look_to_api(_look(T0, {"m1": "stopped"}))
    assert known["pre_deploy"] == {"m1": "stopped"}
    del known["pre_deploy"]
    assert json.dumps(known) == json.dumps(look_to_api(_look(T0, None)))


def test_the_wire_spells_pre_deploy_as_a_recording_line_does() -> None:
    """A request's look and a recording line of the same look carry the same pre_deploy object."""
    look = _look(T0, {"m1": "started", "m2": "stopped"})
    assert look_to_api(look)["pre_deploy"] == json.loads(look_to_json(look, T0))["pre_deploy"]


@given(st.none() | st.dictionaries(st.text(min_size=1, max_size=8), st.sampled_from(MACHINE_STATES),
                                   max_size=4))
def test_a_wire_look_reads_back_as_a_recording_line_with_the_same_pre_deploy(
    declared: dict[str, str] | None,
) -> None:
    """The request's look is a recording line's look: parsed back, it declares what was sent."""
    wire = look_to_api(_look(T0, declared))
    jsonschema.validate(json.loads(request_line("r", T0, [json.dumps(wire)], "{}")), schema("request"))
    parsed = parse_line(json.dumps({**wire, "publish_started_ms": T0})).look
    assert parsed.pre_deploy == (declared or None)


def test_the_request_schema_takes_pre_deploy_states_and_refuses_others() -> None:
    """The schema's states are the model's; a look's pre_deploy with another state is refused."""
    request = schema("request")
    look_schema = request["$defs"]["look"]["properties"]["pre_deploy"]
    assert tuple(look_schema["additionalProperties"]["enum"]) == MACHINE_STATES
    looks = [json.dumps(look_to_api(_look(T0, {"m1": "suspended"})))]
    valid = json.loads(request_line("run-1", T0, looks, "{}"))
    jsonschema.validate(valid, request)
    valid["looks"][0]["pre_deploy"]["m1"] = "running"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(valid, request)


# --- end to end: a check command prints back what it received ------------------------------


def _received(reason: str) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(reason)
    return seen


@needs_proc
@pytest.mark.parametrize("mode", ["full", "incremental"])
@pytest.mark.parametrize("name", ["sept25-crash-loop", "sleeping-api-flyctl", "healthy-release"])
def test_a_simulated_run_sends_the_state_each_machine_had_before_the_roll(
    tmp_path: Path, name: str, mode: str
) -> None:
    """Every look the command gets declares the scenario's pre-publish fleet, in both modes."""
    loaded = scenario.load(name)
    # The oracle, from the scenario alone: the previous release's machines, asleep or up.
    before = "stopped" if loaded.previous.asleep else "started"
    expected = {f"m{i}": before for i in range(1, loaded.release.machines + 1)}
    argv, log = _echo(tmp_path, mode)
    with CommandCheck(argv, options=loaded.check.model_dump(), timeout_s=5.0) as check:
        result = run(loaded, loaded.seed, check)
        assert check.incremental is (mode == "incremental")
    assert result.error is None
    assert result.verdict is not None
    seen = _received(result.verdict.reason)
    assert seen["pre_deploy"] == [expected] * 3
    assert seen["keys"] == [["at_ms", "machines", "pre_deploy"]] * 3
    for line in log.read_text().splitlines():
        jsonschema.validate(json.loads(line), schema("request"))
    assert _children() == []


def _recording(path: Path, declared: dict[str, str] | None) -> Path:
    """Ten looks of one run, 1 s apart; only the first line declares the pre-deploy state."""
    lines = [look_to_json(_look(T0 + 1_000 * i, declared if i == 0 else None), T0, "r")
             for i in range(10)]
    path.write_text("\n".join(lines) + "\n")
    return path


@needs_proc
def test_replay_sends_a_recordings_declaration_with_every_look(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`testbed replay --check-cmd`: the first line's pre_deploy reaches the command on every look."""
    argv, _ = _echo(tmp_path)
    recording = _recording(tmp_path / "declared.jsonl", {"m1": "stopped"})
    assert main(["replay", str(recording), "--check-cmd", shlex.join(argv),
                 "--check-cmd-timeout", "5", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["results"]
    assert _received(row["reason"])["pre_deploy"] == [{"m1": "stopped"}] * 3
    assert _children() == []


@needs_proc
def test_replay_of_an_undeclared_recording_sends_no_pre_deploy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recording that never declares it: the command's looks have no pre_deploy, as before."""
    argv, log = _echo(tmp_path)
    recording = _recording(tmp_path / "plain.jsonl", None)
    assert main(["replay", str(recording), "--check-cmd", shlex.join(argv), "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["results"]
    seen = _received(row["reason"])
    assert seen["pre_deploy"] == ["absent"] * 3
    assert seen["keys"] == [["at_ms", "machines"]] * 3
    assert all('"pre_deploy"' not in line for line in log.read_text().splitlines())
    assert _children() == []


# --- the documented exchange ----------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent



@needs_proc
@pytest.mark.skipif(shutil.which("node") is None, reason="the documented example check is JavaScript")
def test_the_worked_example_in_check_protocol_md_is_a_real_exchange(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each JSON line the protocol page shows (its pre_deploy too) is one the command it names logs."""
    relay, log = tmp_path / "relay.py", tmp_path / "log.jsonl"
    relay.write_text(textwrap.dedent(RELAY))
    command = shlex.join([sys.executable, str(relay), str(log), "node",
                          str(ROOT / "examples" / "checks" / "timestamp.js")])
    main(["compare", "sept25-crash-loop", "--set", "platform.restart_delay_s=0.3",
          "--set", "platform.boot_s=0.4", "--set", "platform.events=minimal",
          "--set", "check.look_delay_s=10", "--check-cmd", command])
    capsys.readouterr()
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    page = (ROOT / "docs" / "check-protocol.md").read_text()
    example = page.split("## A worked example", 1)[1].split("\n## ", 1)[0]
    shown = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", example, re.S)]
    assert len(shown) == 5
    assert any("pre_deploy" in look for one in shown for look in one.get("looks", []))
    assert [one in logged for one in shown] == [True] * len(shown)
    assert _children() == []
