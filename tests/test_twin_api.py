"""The Machines API twin: statuses, bodies, the long poll and determinism, each response
validated against Fly's OpenAPI description (tests/data/fly/openapi)."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openapi_core import OpenAPI
from openapi_core.testing import MockRequest, MockResponse

from platform_testbed.checks.flyjson import read_recordings
from platform_testbed.sim.config.scenario import load
from platform_testbed.sim.twin.session import Session, open_session

SPEC = Path(__file__).parent / "data" / "fly" / "openapi" / "openapi3.machines.twin.json"
API = OpenAPI.from_file_path(str(SPEC))
TOKEN = "test-token"
RELEASE, PREVIOUS = "registry.fly.io/app:release", "registry.fly.io/app:previous"


class Client:
    """Calls the twin and validates every response against the OpenAPI description."""

    def __init__(self, session: Session, token: str | None = TOKEN) -> None:
        self.base = session.server.url
        self.app = session.app.app
        self.token = token

    def __call__(self, method: str, path: str, body: Any = None,
                 headers: dict[str, str] | None = None, *, validate: bool = True) -> tuple[int, Any]:
        url = f"{self.base}/v1/apps/{self.app}{path}"
        sent = {"Content-Type": "application/json", **(headers or {})}
        if self.token is not None:
            sent["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        if raw and validate:
            conform(method, f"/v1/apps/{self.app}{path}", body, status, raw, headers=sent)
        return status, json.loads(raw) if raw else None


    def get_app(self) -> tuple[int, Any]:
        """``GET /v1/apps/{app}``, validated as every other call."""
        return self("GET", "", None)


def conform(method: str, path: str, body: Any, status: int, raw: bytes, *,
            headers: dict[str, str]) -> None:
    """Raise unless the response is one Fly's description allows for this request."""
    route, _, query = path.partition("?")
    args = dict(part.split("=", 1) for part in query.split("&")) if query else {}
    request = MockRequest("https://api.machines.dev", method.lower(), route, args=args,
                          headers=headers, content_type="application/json",
                          data=None if body is None else json.dumps(body).encode())
    API.validate_response(request, MockResponse(raw, status_code=status,
                                                content_type="application/json"))


@pytest.fixture
def session() -> Iterator[Session]:
    served = open_session(load("sept25-crash-loop"), 1, speed=4, token=TOKEN)
    yield served
    served.close(finish=False)


def test_no_token_or_a_wrong_one_gets_401(session: Session) -> None:
    """Without the bearer token, or with another, every request is refused with 401."""
    refused = (401, {"error": "invalid token", "status": "unknown"})
    assert Client(session, token=None)("GET", "/machines") == refused
    assert Client(session, token="nope")("GET", "/machines/m1")[0] == 401
    assert Client(session)("GET", "/machines")[0] == 200


def test_binds_loopback_only(session: Session) -> None:
    """The server listens on 127.0.0.1 and on no other address of the machine."""
    assert session.server.address[0] == "127.0.0.1"
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet sent: only picks the outward address
        outward = probe.getsockname()[0]
    except OSError:
        outward = "127.0.0.1"
    finally:
        probe.close()
    if outward.startswith("127."):
        pytest.skip("this machine has no address but loopback")
    with pytest.raises(ConnectionRefusedError), socket.create_connection((outward, session.server.port), 1):
        pass


def test_machine_json_has_fly_fields_and_no_nulls(session: Session) -> None:
    """A machine carries config.image, image_ref, instance_id, region, RFC3339 times, host_status."""
    status, machines = Client(session)("GET", "/machines")
    assert status == 200
    machine = machines[0]
    assert machine["config"]["image"] == PREVIOUS
    assert machine["image_ref"]["tag"] == "previous"
    assert len(machine["instance_id"]) == 26
    assert machine["host_status"] == "ok"
    assert machine["region"]
    assert machine["created_at"].endswith("Z")
    assert "null" not in json.dumps(machines)


def test_update_runs_the_release_and_refuses_other_images(session: Session) -> None:
    """The release's image is taken (a new instance_id), an unknown image gets 400, 404 for strangers."""
    call = Client(session)
    before = call("GET", "/machines/m1")[1]["instance_id"]
    status, updated = call("POST", "/machines/m1", {"config": {"image": RELEASE}})
    assert status == 200
    assert updated["config"]["image"] == RELEASE
    assert updated["instance_id"] != before
    status, body = call("POST", "/machines/m1", {"config": {"image": "docker.io/other:1"}})
    assert status == 400
    assert "could not find image" in body["error"]
    assert call("POST", "/machines/m1", {"config": {}}) == (
        400, {"error": "config.image required", "status": "unknown"})
    assert call("GET", "/machines/nope")[0] == 404
    assert Client(session)("GET", "/machines/m1/lease")[0] == 404


def test_a_lease_holds_writes_to_its_nonce(session: Session) -> None:
    """A lease taken (201) makes writes without its nonce 409; with it they pass; released, 404."""
    call = Client(session)
    status, lease = call("POST", "/machines/m1/lease?ttl=30")
    assert status == 201
    assert lease["status"] == "success"
    nonce = lease["data"]["nonce"]
    status, body = call("POST", "/machines/m1", {"config": {"image": RELEASE}})
    assert status == 409
    assert "lease currently held" in body["error"]
    header = {"fly-machine-lease-nonce": nonce}
    assert call("POST", "/machines/m1", {"config": {"image": RELEASE}}, header)[0] == 200
    assert call("POST", "/machines/m1/lease?ttl=30", None, header)[0] == 200  # refresh
    assert call("DELETE", "/machines/m1/lease", None, {"fly-machine-lease-nonce": "x"})[0] == 409
    assert call("DELETE", "/machines/m1/lease", None, header)[0] == 200
    assert call("GET", "/machines/m1/lease")[0] == 404


def test_wait_answers_at_the_state_change_not_at_a_poll() -> None:
    """/wait returns when the boot ends (2 s simulated at speed 2: ~1 s wall), not at its timeout."""
    scenario = load("healthy-release", ["platform.boot_s=2", "platform.jitter=0"])
    served = open_session(scenario, 1, speed=2, token=TOKEN)
    try:
        call = Client(served)
        _, updated = call("POST", "/machines/m1", {"config": {"image": scenario.release.image}})
        started = time.monotonic()
        status, body = call("GET", f"/machines/m1/wait?state=started&timeout=60"
                                   f"&instance_id={updated['instance_id']}")
        waited = time.monotonic() - started
        assert (status, body["state"]) == (200, "started")
        assert 0.85 < waited < 1.4, waited
        _, machine = call("GET", "/machines/m1")
        start_event = next(e for e in machine["events"] if e["type"] == "start")
        update_ms = max(e["timestamp"] for e in updated["events"])
        assert start_event["timestamp"] - update_ms == 2000  # the boot, on the platform clock
    finally:
        served.close(finish=False)


def test_wait_times_out_with_408_at_the_clamped_timeout() -> None:
    """timeout=0 is held 1 s and timeout=600 is held 60 s (fly-go's clamp), then 408, Fly's text."""
    served = open_session(load("healthy-release"), 1, speed=100, token=TOKEN, horizon_s=10_000)
    try:
        call = Client(served)
        version = call("GET", "/machines/m1")[1]["instance_id"]
        for timeout, held_s in ((0, 1), (600, 60)):
            started = time.monotonic()
            status, body = call("GET", f"/machines/m1/wait?state=stopped&timeout={timeout}"
                                       f"&instance_id={version}")
            waited = time.monotonic() - started
            assert status == 408
            assert body["error"] == "machine failed to reach desired state, stopped, currently started"
            assert held_s / 100 * 0.9 < waited < held_s / 100 + 0.5, (timeout, waited)
    finally:
        served.close(finish=False)


def test_stopped_wait_without_an_instance_id_waits_for_any_version(session: Session) -> None:
    """A wait for stopped without instance_id is held, as flyctl needs (checks.flywait), not a 400."""
    status, body = Client(session)("GET", "/machines/m1/wait?state=stopped&timeout=1")
    assert status in (200, 408), (status, body)
    assert Client(session)("GET", "/machines/m1/wait?state=asleep")[0] == 400  # not a state


class ManualClock:
    """A clock that moves only when the test says: requests land at chosen instants."""

    def __init__(self) -> None:
        self.now = 0.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return self.now

    def to(self, seconds: float, session: Session) -> None:
        with self.lock:
            self.now = seconds
        while session.app.env.now < session.driver.t0 + seconds:  # the driver has caught up
            time.sleep(0.005)


def _scripted(seed: int) -> tuple[list[str], list[tuple[str, str, int]]]:
    clock = ManualClock()
    served = open_session(load("sept25-crash-loop"), seed, token=TOKEN, clock=clock)
    try:
        call = Client(served)
        call("GET", "/machines")
        call("POST", "/machines/m1", {"config": {"image": RELEASE}})
        for at in (1.0, 11.0, 21.0):
            clock.to(at, served)
            call("GET", "/machines")
        clock.to(22.0, served)
        call("POST", "/machines/m1", {"config": {"image": PREVIOUS}})
        return served.recording_lines(), [(r.method, r.path, r.status) for r in served.server.requests]
    finally:
        served.close()


def test_same_seed_and_request_script_give_the_same_recording() -> None:
    """Two worlds of one seed, sent the same requests at the same instants, record the same bytes."""
    first, requests = _scripted(7)
    again, requests_again = _scripted(7)
    assert first == again
    assert requests == requests_again
    assert len(first) == 4  # the four reads of the machines; updates are no look
    (recording,) = read_recordings(first)
    assert [m.image for m in recording.looks[-1].machines] == [RELEASE]
    assert any(e.type == "exit" and not e.requested_stop for e in recording.looks[-1].machines[0].events)
    # The state before the client's first update to the release, on every look of the run.
    assert {json.dumps(json.loads(line)["pre_deploy"]) for line in first} == {'{"m1": "started"}'}
    assert recording.looks[0].pre_deploy == {"m1": "started"}
    other, _ = _scripted(8)
    assert other != first  # the seed matters: the recording is not a constant
