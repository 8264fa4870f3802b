"""A real deploy step against the twin: where each machine's pre-deploy state shows, and where not.

Fly's Machines API has no pre-deploy field, so the twin serves none: a deploy step learns
a machine's state before the publish from its own ``List`` before it updates (as flyctl's
``originalMachine``). What the testbed knows goes into the row's looks and so into
``compare --record``'s recording (``pre_deploy``), which a replay hands to any check.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from platform_testbed.checks.flyjson import read_recording
from platform_testbed.sim.config.scenario import load
from platform_testbed.sim.publish.recording import Recorder
from platform_testbed.sim.twin.step import CHECK_HTTP, DEPLOY_CMD, ProcessStep

ROOT = Path(__file__).parent.parent
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

#: Reads the fleet twice as a check-http step would (list, then one machine) and keeps the
#: bodies it was served; exits 0 (live).
READS = """#!/bin/sh
base="$FLY_API_HOSTNAME/v1/apps/$FLY_APP_NAME/machines"
curl -sS -H "Authorization: Bearer $FLY_API_TOKEN" "$base" > "{out}/list.json"
sleep 0.2
curl -sS -H "Authorization: Bearer $FLY_API_TOKEN" "$base/m1" > "{out}/get.json"
"""


def _keys(value: Any) -> set[str]:
    """Every object key anywhere in a JSON value."""
    if isinstance(value, dict):
        return set(value).union(*(_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value))
    return set()


def test_check_http_serves_no_pre_deploy_field_and_records_the_state_before_the_roll(
    tmp_path: Path,
) -> None:
    """The process's API bodies have no pre_deploy; the row's looks and its recording do."""
    script = tmp_path / "reads.sh"
    script.write_text(READS.format(out=tmp_path))
    script.chmod(0o755)
    scenario = load("sept25-crash-loop")
    result = ProcessStep(CHECK_HTTP, (str(script),), "http-reads", 10.0, 20.0)(scenario, 1)
    assert result.error is None
    served = [json.loads((tmp_path / name).read_text()) for name in ("list.json", "get.json")]
    assert served[0][0]["id"] == "m1"
    assert "pre_deploy" not in _keys(served)
    # The previous release ran on m1 when the publish began (the scenario's [previous]).
    assert scenario.previous.asleep is False
    assert len(result.looks) == 2
    assert [r.look.pre_deploy for r in result.looks] == [{"m1": "started"}] * 2
    recorder = Recorder(scenario.publish_started_ms, {})
    recorder(result)
    assert {json.dumps(json.loads(line)["pre_deploy"]) for line in recorder.lines} == {
        '{"m1": "started"}'}
    replayed = read_recording(recorder.lines)
    assert [look.pre_deploy for look in replayed.looks] == [{"m1": "started"}] * 2


def test_deploy_cmd_records_the_state_its_own_list_showed_before_its_update(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deploy step lists, then updates: looks after the update declare what that list showed."""
    monkeypatch.setenv("LOOK_DELAY_S", "0.5")  # 10 s of the platform at speed 20
    for name in ("FLY_IMAGE_REF", "FLY_PREVIOUS_IMAGE_REF"):
        monkeypatch.delenv(name, raising=False)
    step = ProcessStep(DEPLOY_CMD, (str(ROOT / "examples" / "deploy" / "timestamp.sh"),),
                       "deploy-timestamp", 60.0, 20.0)
    result = step(load("sept25-crash-loop"), 1)
    assert result.error is None
    first, *after = result.looks
    # Its List before the first update: nothing declared yet; m1 reads as it is.
    assert first.look.pre_deploy is None
    assert first.look.machines[0].state == "started"
    assert after
    assert [r.look.pre_deploy for r in after] == [{"m1": "started"}] * len(after)
