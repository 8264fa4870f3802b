"""The Machines API's own faults (a scenario's ``[api]`` table, ``sim.twin.faults``): each at
its share, the same from the same seed, and nothing at all at share 0."""

from __future__ import annotations

import http.client
import json
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from platform_testbed.sim.config.scenario import BadInput, Scenario, load
from platform_testbed.sim.sweep.file import load_sweep
from platform_testbed.sim.twin.faults import CLOSED, Faults, RequestKind
from platform_testbed.sim.twin.session import Session, open_session
from platform_testbed.sim.twin.step import CHECK_HTTP, ProcessStep

TOKEN = "faults-token"
N = 4_000
SHARE = 0.2


def _world(**api: Any) -> Scenario:
    return load("sept25-crash-loop", [f"api.{k}={json.dumps(v)}" for k, v in api.items()])


def _within(count: int, n: int, share: float) -> bool:
    """``count`` of ``n`` is ``share`` within four standard deviations of a binomial."""
    sd = (n * share * (1 - share)) ** 0.5
    return abs(count - n * share) <= 4 * sd


# -- the draws ----------------------------------------------------------------------------------

KINDS: list[tuple[str, RequestKind, str]] = [
    ("error_share", "other", "error"), ("throttle_share", "read", "throttle"),
    ("reset_share", "wait", "reset"), ("wait_drop_share", "wait", "wait_drop"),
    ("stale_share", "read", "stale"), ("lease_held_share", "lease", "lease_held"),
]


@pytest.mark.parametrize(("field", "kind", "fault"), KINDS)
def test_each_fault_comes_at_its_share(field: str, kind: RequestKind, fault: str) -> None:
    """Over 4,000 requests of a kind that can have it, a fault set to 0.2 comes 0.2 of the time."""
    faults = Faults(_world(**{field: SHARE}).api, seed=7)
    got = [faults.draw(kind).fault for _ in range(N)]
    assert _within(got.count(fault), N, SHARE), got.count(fault)  # type: ignore[arg-type]
    assert set(got) == {fault, None}


def test_a_kind_bound_fault_never_reaches_another_kind() -> None:
    """A stale read is a read's, a dropped wait a wait's, a held lease a lease's: never another's."""
    faults = Faults(_world(stale_share=0.5, wait_drop_share=0.5, lease_held_share=0.5).api, 3)
    assert {faults.draw("other").fault for _ in range(500)} == {None}
    assert {faults.draw("read").fault for _ in range(500)} == {"stale", None}


def test_shares_lie_end_to_end_each_at_its_own() -> None:
    """Several faults at once: each at its own share (the kinds exclude each other)."""
    faults = Faults(_world(error_share=0.1, throttle_share=0.2, reset_share=0.1,
                           stale_share=0.3).api, 11)
    got = [faults.draw("read").fault for _ in range(N)]
    for fault, share in (("error", 0.1), ("throttle", 0.2), ("reset", 0.1), ("stale", 0.3)):
        assert _within(got.count(fault), N, share), (fault, got.count(fault))  # type: ignore[arg-type]


def test_the_same_seed_draws_the_same_faults_and_another_seed_others() -> None:
    """Deterministic: the seed and the request sequence fix every fault and latency."""
    table = _world(error_share=0.3, wait_drop_share=0.2, jitter_s=1.5, latency_s=2.0).api
    kinds: list[RequestKind] = ["read", "wait", "other", "lease"] * 100

    def sequence(seed: int) -> list[Any]:
        faults = Faults(table, seed)
        return [faults.draw(k) for k in kinds]

    assert sequence(5) == sequence(5)
    assert sequence(5) != sequence(6)
    latencies = [d.latency_s for d in sequence(5)]
    assert min(latencies) >= 0.5
    assert max(latencies) <= 3.5
    assert len(set(latencies)) > 300


def test_share_zero_draws_nothing() -> None:
    """No [api] (or every share and latency 0): nothing is drawn, no request is touched."""
    for scenario in (load("sept25-crash-loop"), _world(error_share=0, latency_s=0)):
        faults = Faults(scenario.api, 1)
        assert not faults.active
        assert {faults.draw("read").fault for _ in range(100)} == {None}
        assert faults.drawn == 0


@pytest.mark.parametrize(("sets", "names"), [
    (["api.bogus=1"], "api.bogus: unknown field"),
    (["api.error_share=1.5"], "api.error_share: input should be less than or equal to 1"),
    (["api.latency_s=-1"], "api.latency_s"),
    (["api.error_status=418"], "api.error_status"),
    (["api.error_share=0.6", "api.throttle_share=0.5"], "api: a request's fault shares"),
])
def test_a_bad_api_table_is_one_line_naming_the_field(sets: list[str], names: str) -> None:
    """Unknown keys, shares out of range or adding up past 1: BadInput, one line, the field named."""
    with pytest.raises(BadInput) as raised:
        load("sept25-crash-loop", sets)
    message = str(raised.value)
    assert names in message
    assert "\n" not in message


# -- over HTTP ----------------------------------------------------------------------------------


@contextmanager
def _serving(scenario: Scenario, seed: int = 1, speed: float = 50.0) -> Iterator[Session]:
    session = open_session(scenario, seed, speed=speed, token=TOKEN)
    try:
        yield session
    finally:
        session.close(finish=False)


def _ask(session: Session, method: str, path: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
    """One request on its own connection: status (``CLOSED`` if cut unanswered), headers, body."""
    host, port = session.server.address
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        data = None if body is None else json.dumps(body)
        conn.request(method, f"/v1/apps/{session.app.app}{path}", body=data,
                     headers={"Authorization": f"Bearer {TOKEN}"})
        response = conn.getresponse()
        raw = response.read()
    except (http.client.RemoteDisconnected, ConnectionResetError):
        return CLOSED, {}, None
    finally:
        conn.close()
    return response.status, dict(response.getheaders()), json.loads(raw) if raw else None


def _statuses(scenario: Scenario, n: int, path: str = "/machines", seed: int = 1) -> list[int]:
    with _serving(scenario, seed) as session:
        return [_ask(session, "GET", path)[0] for _ in range(n)]


def test_a_5xx_share_answers_fly_s_error_body_and_the_same_seed_the_same_requests() -> None:
    """error_share 0.3 over 200 reads: about 60 are 503 with Fly's body; the same seed, the same ones."""
    world = _world(error_share=0.3)
    with _serving(world) as session:
        answers = [_ask(session, "GET", "/machines") for _ in range(200)]
    statuses = [a[0] for a in answers]
    assert set(statuses) == {200, 503}
    assert _within(statuses.count(503), 200, 0.3)
    assert {json.dumps(a[2]) for a in answers if a[0] == 503} == {
        '{"error": "service unavailable", "status": "unknown"}'}
    assert _statuses(world, 200) == statuses
    assert _statuses(world, 200, seed=2) != statuses


def test_a_throttle_answers_429_with_its_retry_after() -> None:
    """throttle_share: 429 with ``Retry-After`` as the table says (7 s)."""
    with _serving(_world(throttle_share=0.5, retry_after_s=7)) as session:
        answers = [_ask(session, "GET", "/machines/m1") for _ in range(100)]
    throttled = [a for a in answers if a[0] == 429]
    assert _within(len(throttled), 100, 0.5)
    assert {a[1].get("Retry-After") for a in throttled} == {"7"}


def test_a_reset_cuts_the_connection_unanswered_and_applies_nothing() -> None:
    """reset_share 1: every stop is cut with no answer (logged 444) and the machine stays started."""
    with _serving(_world(reset_share=1.0)) as session:
        assert _ask(session, "POST", "/machines/m1/stop")[0] == CLOSED
        assert session.server.requests[-1].status == CLOSED
        assert session.driver.call(lambda: session.app.machines["m1"].state) != "stopped"


def test_a_dropped_wait_ends_at_its_drawn_point_before_its_deadline() -> None:
    """wait_drop_share 1: a wait that would be held 20 s is cut (close) or 408 (timeout) at the
    point of its timeout the seed draws (seed 4: 0.16 of it, 3.2 s), not at 20 s."""
    path = "/machines/m1/wait?state=destroyed&timeout=20"
    for how, status in (("close", CLOSED), ("timeout", 408)):
        world = _world(wait_drop_share=1.0, wait_drop=how)
        drop_s = Faults(world.api, 4).draw("wait").drop_at * 20
        assert 1.0 < drop_s < 10.0
        with _serving(world, seed=4, speed=100.0) as session:
            got = _ask(session, "GET", path)
            answered = session.driver.platform_ms()
            asked = session.server.requests[-1].at_ms
        assert got[0] == status
        assert drop_s * 1000 <= answered - asked < drop_s * 1000 + 3_000


def test_a_stale_read_answers_what_the_last_same_read_got() -> None:
    """stale_share 1: after a stop, a read of the machine still answers it as it was read before."""
    with _serving(_world(stale_share=1.0)) as session:
        first = _ask(session, "GET", "/machines/m1")
        assert first[0] == 200
        assert _ask(session, "POST", "/machines/m1/stop")[0] == 200
        assert _ask(session, "GET", "/machines/m1")[2] == first[2]
        fresh = session.driver.call(lambda: session.app.get(session.app.app, "m1"))
    assert fresh[1] != first[2]


def test_a_held_lease_answers_409_as_fly_words_it() -> None:
    """lease_held_share 1: taking the lease is 409, held by someone else, in Fly's words."""
    with _serving(_world(lease_held_share=1.0)) as session:
        status, _headers, body = _ask(session, "POST", "/machines/m1/lease", {"ttl": 30})
        lease = _ask(session, "GET", "/machines/m1/lease")[0]
    assert status == 409
    assert lease == 404
    assert body["error"].startswith("aborted: machine ID m1 lease currently held by someone-else@")


def test_latency_holds_the_answer_in_world_time() -> None:
    """latency_s 3: the answer goes out when the world's clock is 3 s past the request."""
    with _serving(_world(latency_s=3.0), speed=100.0) as session:
        asked = session.driver.platform_ms()
        assert _ask(session, "GET", "/machines")[0] == 200
        answered = session.driver.platform_ms()
        at = session.server.requests[-1].at_ms
    assert answered - at >= 3_000
    assert at - asked < 1_000


def _sequence(session: Session) -> list[Any]:
    got = []
    for method, path in (("GET", "/machines"), ("GET", "/machines/m1"), ("POST", "/machines/m1/lease"),
                         ("GET", "/machines/m1/events"), ("GET", "/machines/m1/wait?state=started"),
                         ("GET", "/machines/nope"), ("POST", "/machines/m1/stop")):
        status, headers, body = _ask(session, method, path)
        headers.pop("fly-request-id")
        got.append((status, headers, body))
    return got


def test_share_zero_answers_byte_identical_to_no_api_table() -> None:
    """An [api] table of zeros: every answer and the report as without one, and nothing drawn."""
    zero = _world(error_share=0, throttle_share=0, reset_share=0, wait_drop_share=0,
                  stale_share=0, lease_held_share=0, latency_s=0, jitter_s=0)
    sessions = [open_session(s, 1, speed=1.0, token=TOKEN, clock=lambda: 0.0)
                for s in (load("sept25-crash-loop"), zero)]
    try:
        answers = [_sequence(s) for s in sessions]
        assert [s.app.faults.drawn for s in sessions] == [0, 0]
    finally:
        for s in sessions:
            s.close(finish=False)
    assert answers[0] == answers[1]
    reports = [json.dumps(s.report(), sort_keys=True) for s in sessions]
    assert reports[0] == reports[1]


# -- on virtual time ----------------------------------------------------------------------------

needs_vtime = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("cc") is None or shutil.which("curl") is None,
    reason="virtual time: Linux, cc and curl")


@needs_vtime
@pytest.mark.serial
def test_latency_on_virtual_time_moves_the_world_not_the_wall(tmp_path: Path) -> None:
    """Two reads with latency 7 s: the second is 7 world seconds after the first, in well under 7 wall s."""
    script = tmp_path / "step.sh"
    script.write_text('#!/bin/sh\nset -e\nfor i in 1 2; do curl -sS -H "Authorization: Bearer '
                      '$FLY_API_TOKEN" "$FLY_API_HOSTNAME/v1/apps/$FLY_APP_NAME/machines" '
                      '>/dev/null; done\n')
    script.chmod(0o755)
    world = load("healthy-release", ["api.latency_s=7"])
    wall = time.monotonic()
    result = ProcessStep(CHECK_HTTP, (str(script),), "http-step", 60.0, 1.0, "virtual")(world, 1)
    wall = time.monotonic() - wall
    assert result.error is None, result.error
    at = [r.look.at_ms for r in result.looks]
    assert at[1] - at[0] == 7_000
    assert wall < 5.0


def test_the_faults_are_sweep_axes_checked_before_any_world_runs(tmp_path: Path) -> None:
    """The shipped fault sweep sets ``api.*`` per point; an axis value out of range is BadInput."""
    sweep = load_sweep("api-faults-timestamp")
    assert sweep.keys == ("release.behavior", "api.error_share", "api.latency_s")
    world = sweep.scenario(("healthy", 0.3, 5.0))
    assert (world.api.error_share, world.api.latency_s, world.release.behavior) == (0.3, 5.0, "healthy")
    bad = tmp_path / "bad.toml"
    bad.write_text('scenario = "sept25-crash-loop"\nchecks = ["timestamp"]\n'
                   '[axes]\n"api.error_share" = [0.1, 1.5]\n')
    with pytest.raises(BadInput, match=r"api\.error_share"):
        load_sweep(str(bad))


DEPLOY = Path(__file__).parent.parent / "examples" / "deploy"


@needs_vtime
def test_a_step_that_reads_a_503_as_healthy_shows_as_a_miss() -> None:
    """Half the answers 503 (seed 2: a look meets one): the lax step misses the crash loop, the
    retrying one catches it; the ground truth stays the platform's (bad)."""
    world = load("sept25-crash-loop", ["api.error_share=0.5"])
    rows = {}
    for script in ("timestamp-lax.sh", "timestamp-retry.sh"):
        step = ProcessStep(CHECK_HTTP, (str(DEPLOY / script),), script, 60.0, 1.0, "virtual")
        rows[script] = step(world, 2)
    assert {r.bad for r in rows.values()} == {True}
    assert rows["timestamp-lax.sh"].outcome == "missed"
    assert rows["timestamp-retry.sh"].outcome == "caught"
