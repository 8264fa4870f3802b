"""The platform operations a blue-green or canary deploy needs, over the one world backend
(``sim.publish.world``: create, destroy, cordon), checked against Fly's OpenAPI; and the
shipped blue-green and canary scripts judged on the incident and on a healthy release."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from platform_testbed.sim.config.scenario import load
from platform_testbed.sim.twin.session import Session, open_session
from tests.test_twin_api import PREVIOUS, RELEASE, TOKEN, Client

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def session() -> Iterator[Session]:
    served = open_session(load("healthy-release"), 1, speed=4, token=TOKEN)
    yield served
    served.close(finish=False)


def test_create_launches_a_machine_of_the_app_on_a_known_image(session: Session) -> None:
    """``POST /machines`` (Machines_create): a new machine on the release, listed, in the world."""
    call = Client(session)
    status, made = call("POST", "/machines", {"config": {"image": RELEASE}})
    assert status == 200
    assert made["config"]["image"] == RELEASE
    assert made["id"] not in {"m1", "m2"}
    assert [e["type"] for e in made["events"]] == ["launch"]
    assert made["id"] in [m["id"] for m in call("GET", "/machines")[1]]
    assert session.app.world.machines[-1].id == made["id"]
    assert session.app.publish_started_ms is not None  # creating the release is its publish
    assert call("POST", "/machines", {"config": {"image": "docker.io/other:1"}})[0] == 400


def test_destroy_needs_a_stopped_machine_or_force(session: Session) -> None:
    """A started machine is destroyed only with ``force`` (412 without); then it leaves the list."""
    call = Client(session)
    assert call("DELETE", "/machines/m1")[0] == 412
    assert call("DELETE", "/machines/m1?force=true") == (200, None)
    assert [m["id"] for m in call("GET", "/machines")[1]] == ["m2"]
    deleted = call("GET", "/machines?include_deleted=true")[1]
    assert [m["state"] for m in deleted] == ["destroyed", "started"]
    assert call("DELETE", "/machines/m1?force=true")[0] == 404


def test_cordon_uncordon_versions_ps_and_metadata(session: Session) -> None:
    """Cordon and uncordon mark the machine; versions list each update newest first; ps while
    started; metadata set, read and deleted."""
    call = Client(session)
    assert call("POST", "/machines/m1/cordon")[0] == 200
    assert session.app.world.cordoned == {"m1"}
    assert call("POST", "/machines/m1/uncordon")[0] == 200
    assert session.app.world.cordoned == set()
    updated = call("POST", "/machines/m1", {"config": {"image": RELEASE}})[1]
    versions = call("GET", "/machines/m1/versions")[1]
    assert versions[0]["version"] == updated["instance_id"]
    assert [v["user_config"]["image"] for v in versions] == [RELEASE, PREVIOUS]
    assert call("GET", "/machines/m2/ps")[0] == 200
    assert call("POST", "/machines/m2/metadata/role", {"value": "web"})[0] == 204
    assert call("GET", "/machines/m2/metadata") == (200, {"role": "web"})
    assert call("DELETE", "/machines/m2/metadata/role")[0] == 204
    assert call("GET", "/machines/m2/metadata") == (200, {})


def test_what_the_model_has_no_counterpart_for_is_501_said_so(session: Session) -> None:
    """Suspend and signal are not modelled: 501 with the reason, never a silent 200."""
    call = Client(session)
    status, body = call("POST", "/machines/m1/signal", {"signal": "SIGTERM"})
    assert status == 501
    assert "signals" in body["error"]
    assert call("POST", "/machines/m1/suspend")[0] == 501


@pytest.mark.skipif(shutil.which("jq") is None or shutil.which("curl") is None, reason="curl and jq")
@pytest.mark.parametrize(("scenario", "outcome"), [("sept25-crash-loop", "caught"),
                                                   ("healthy-release", "passed")])
def test_the_blue_green_and_canary_scripts_are_judged(scenario: str, outcome: str) -> None:
    """examples/deploy's blue-green and canary, two ``--deploy-cmd`` rows of one compare: caught
    on the incident, passed on a healthy release (speed 100: LOOK_DELAY_S=0.1 is their 10 s)."""
    rows = []
    for script in ("bluegreen.sh", "canary.sh"):
        rows += ["--deploy-cmd", str(ROOT / "examples" / "deploy" / script)]
    done = subprocess.run(
        [sys.executable, "-m", "platform_testbed.sim", "compare", scenario, *rows,
         "--speed", "100", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "LOOK_DELAY_S": "0.1"})
    assert done.returncode == 0, done.stderr
    judged = {r["check"]: (r["outcome"], r["reason"])
              for run in json.loads(done.stdout)["runs"] for r in run["results"]}
    assert {check: seen for check, (seen, _) in judged.items()} == {
        "deploy-bluegreen": outcome, "deploy-canary": outcome}, judged


def test_a_wait_for_a_version_ignores_another_version(session: Session) -> None:
    """``/wait?version=V`` counts only V: after an update, a wait for the old version's
    start is held to its 408, though the new version has started (kills the mutant that
    ignores ``version``/``instance_id``)."""
    call = Client(session)
    old = call("GET", "/machines/m1")[1]["instance_id"]
    new = call("POST", "/machines/m1", {"config": {"image": RELEASE}})[1]["instance_id"]
    assert call("GET", f"/machines/m1/wait?state=started&timeout=10&version={new}")[0] == 200
    assert call("GET", f"/machines/m1/wait?state=started&timeout=1&version={old}")[0] == 408
    assert call("GET", f"/machines/m1/wait?state=started&timeout=1&instance_id={old}")[0] == 408


def test_skip_launch_leaves_a_stopped_machine_stopped(session: Session) -> None:
    """An update with ``skip_launch`` of a stopped machine gives it the image and leaves it
    stopped; without it the machine starts (kills the mutant that ignores ``skip_launch``)."""
    call = Client(session)
    # superfly/docs' {"ok": true}, where the OpenAPI declares stop's 200 without content.
    assert call("POST", "/machines/m1/stop", validate=False)[0] == 200
    skipped = call("POST", "/machines/m1", {"config": {"image": RELEASE}, "skip_launch": True})[1]
    assert (skipped["state"], skipped["config"]["image"]) == ("stopped", RELEASE)
    assert call("POST", "/machines/m1", {"config": {"image": PREVIOUS}})[1]["state"] != "stopped"
