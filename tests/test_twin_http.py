"""The twin's HTTP door under hostile clients: framing, bodies, leases and long polls.

Each test speaks raw HTTP/1.1 on a loopback socket (bounded in count and time), so what
reaches the server is exactly the bytes named; each asserts the status HTTP gives, that
nothing half-received is applied, and that the server goes on answering.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from platform_testbed.sim.config.scenario import load
from platform_testbed.sim.twin import app as app_module
from platform_testbed.sim.twin import http1
from platform_testbed.sim.twin.server import Limits, TwinServer
from platform_testbed.sim.twin.session import Session, open_session

TOKEN = "test-token"
RELEASE = "registry.fly.io/app:release"


@pytest.fixture
def session() -> Iterator[Session]:
    served = open_session(load("sept25-crash-loop"), 1, speed=4, token=TOKEN)
    yield served
    served.close(finish=False)


def _connect(session: Session) -> socket.socket:
    return socket.create_connection(("127.0.0.1", session.server.port), timeout=10)


def _read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One answer off ``sock``: status, headers (lower-cased), body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, headers, rest[:length]


def _exchange(session: Session, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    with _connect(session) as sock:
        sock.sendall(raw)
        return _read_answer(sock)


def _request(method: str, path: str, body: bytes = b"", extra: str = "") -> bytes:
    head = (f"{method} /v1/apps/sept25-crash-loop{path} HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {TOKEN}\r\n{extra}")
    if body and "Content-Length" not in extra and "Transfer-Encoding" not in extra:
        head += f"Content-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def _instance(session: Session) -> str:
    status, _, body = _exchange(session, _request("GET", "/machines/m1"))
    assert status == 200
    return str(json.loads(body)["instance_id"])


def _update_body() -> bytes:
    return json.dumps({"config": {"image": RELEASE}}).encode()


@pytest.mark.parametrize("length", ["abc", "1.5", "1, 2", "-1", "\u0661\u0662", "1_0"])
def test_a_content_length_that_is_not_one_number_is_400(session: Session, length: str) -> None:
    """``Content-Length`` of ``abc``, ``1.5``, two values, ``-1``, Arabic-Indic digits: 400, closed."""
    body = _update_body()
    raw = _request("POST", "/machines/m1", body, extra=f"Content-Length: {length}\r\n")
    status, headers, answer = _exchange(session, raw.replace(b"\xd9", b"\xd9"))
    assert status == 400
    assert headers["connection"] == "close"
    assert "Content-Length" in json.loads(answer)["error"]
    assert session.app.publish_started_ms is None  # nothing applied


def test_a_body_over_the_cap_is_413_unread(session: Session) -> None:
    """A declared body over 1 MiB is refused with 413 before a byte of it is read."""
    raw = _request("POST", "/machines/m1", extra=f"Content-Length: {http1.MAX_BODY + 1}\r\n")
    status, _, _ = _exchange(session, raw)
    assert status == 413


def test_a_header_block_too_large_is_431(session: Session) -> None:
    """More than 64 KiB of headers, or more than 100 lines: 431."""
    big = "".join(f"X-Pad-{i}: {'a' * 1000}\r\n" for i in range(70))
    assert _exchange(session, _request("GET", "/machines", extra=big))[0] == 431
    many = "".join(f"X-N-{i}: 1\r\n" for i in range(120))
    assert _exchange(session, _request("GET", "/machines", extra=many))[0] == 431


def test_a_body_cut_short_is_not_applied(session: Session) -> None:
    """50 of 500 declared bytes, then EOF: 400, and the machine keeps its version."""
    before = _instance(session)
    body = _update_body()
    raw = _request("POST", "/machines/m1", body, extra="Content-Length: 500\r\n")
    with _connect(session) as sock:
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)
        status, _, _ = _read_answer(sock)
    assert status == 400
    assert _instance(session) == before
    assert session.app.publish_started_ms is None


def test_a_chunked_body_is_read_whole_and_not_as_a_stray_request(session: Session) -> None:
    """A chunked update is applied; the next request on the connection is answered as itself."""
    body = _update_body()
    chunked = (f"{len(body[:10]):x}\r\n".encode() + body[:10] + b"\r\n"
               + f"{len(body[10:]):x}\r\n".encode() + body[10:] + b"\r\n0\r\n\r\n")
    with _connect(session) as sock:
        sock.sendall(_request("POST", "/machines/m1", chunked, extra="Transfer-Encoding: chunked\r\n"))
        status, _, answer = _read_answer(sock)
        assert status == 200
        assert json.loads(answer)["config"]["image"] == RELEASE
        sock.sendall(_request("GET", "/machines/m1"))
        assert _read_answer(sock)[0] == 200
    assert [r.status for r in session.server.requests] == [200, 200]


def test_an_unknown_transfer_coding_is_501_and_both_framings_400(session: Session) -> None:
    """``Transfer-Encoding: gzip`` is 501; chunked with a Content-Length (smuggling) is 400."""
    assert _exchange(session, _request("POST", "/machines/m1", b"x",
                                       extra="Transfer-Encoding: gzip\r\n"))[0] == 501
    assert _exchange(session, _request("POST", "/machines/m1", b"0\r\n\r\n",
                                       extra="Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"))[0] == 400


def test_a_utf16_body_is_refused(session: Session) -> None:
    """JSON in UTF-16 (which ``json.loads`` of bytes would guess and apply) is 400."""
    body = json.dumps({"config": {"image": RELEASE}}).encode("utf-16")
    status, _, answer = _exchange(session, _request("POST", "/machines/m1", body))
    assert status == 400
    assert "UTF-8" in json.loads(answer)["error"]
    assert session.app.publish_started_ms is None


def test_json_nested_too_deep_is_400_not_the_world_ended(session: Session) -> None:
    """100,000 nested arrays: a 400 naming the nesting (a RecursionError was a 503)."""
    status, _, answer = _exchange(session, _request("POST", "/machines/m1", b"[" * 100_000))
    assert status == 400
    assert "nested" in json.loads(answer)["error"]
    assert _exchange(session, _request("GET", "/machines"))[0] == 200


@pytest.mark.parametrize("query", ["ttl=1000000000000", "ttl=9223372036854775808",
                                   "ttl=%D9%A1%D9%A2", "ttl=1_0", "ttl=86401"])
def test_a_lease_ttl_out_of_bounds_is_400_and_leaves_the_machine_writable(
    session: Session, query: str
) -> None:
    """TTLs of 1e12, 2**63, Arabic-Indic digits, underscores, over a day: 400; writes still pass."""
    status, _, answer = _exchange(session, _request("POST", f"/machines/m1/lease?{query}"))
    assert status == 400, answer
    status, _, _ = _exchange(session, _request("POST", "/machines/m1", _update_body()))
    assert status == 200


def test_a_lease_ttl_of_2_63_in_the_body_is_400(session: Session) -> None:
    """The docs' body form with ``ttl`` 2**63: 400 with the bound, not a lease for ever."""
    body = json.dumps({"ttl": 2**63}).encode()
    status, _, answer = _exchange(session, _request("POST", "/machines/m1/lease", body))
    assert status == 400
    assert "86400" in json.loads(answer)["error"]


def test_a_request_target_with_control_characters_is_400(session: Session) -> None:
    """An ESC or a non-ASCII byte in the path never reaches the log (or the operator's terminal)."""
    for target in (b"/v1/apps/\x1b[2J/machines", b"/v1/apps/\xc2\x9b31m/machines"):
        raw = b"GET " + target + b" HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n"
        assert _exchange(session, raw)[0] == 400
    assert session.server.requests == []


def test_every_answer_has_a_request_id_and_errors_a_status(session: Session) -> None:
    """``fly-request-id`` on each answer; an error body carries ``status`` (OpenAPI ErrorResponse)."""
    status, headers, answer = _exchange(session, _request("GET", "/machines/nope"))
    assert status == 404
    assert headers["fly-request-id"]
    assert json.loads(answer)["status"] == "unknown"


def test_a_client_that_resets_mid_wait_leaves_no_traceback(
    session: Session, capfd: pytest.CaptureFixture[str]
) -> None:
    """A client that resets a held wait (RST) and one that half-sends: the server answers the next."""
    with _connect(session) as sock:
        sock.sendall(_request("GET", "/machines/m1/wait?state=destroyed&timeout=60"))
        time.sleep(0.1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with _connect(session) as sock:
        sock.sendall(b"GET /v1/apps/sept25-crash-loop/mach")
    assert _exchange(session, _request("GET", "/machines"))[0] == 200
    deadline = time.monotonic() + 5
    while session.server.held and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session.server.held == 0  # the reset client's wait is let go, not held to its end
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out


def test_a_held_wait_is_answered_at_its_deadline_not_at_the_first_change() -> None:
    """In a crash loop a wait for a state never reached answers 408 after its timeout.

    SimPy triggers a Timeout when it is made: a test of ``triggered`` answered at the first
    change that was not the wanted state (0.96 s of a 60 s wait).
    """
    served = open_session(load("sept25-crash-loop"), 1, speed=40, token=TOKEN)
    try:
        # Into the crash loop: the release on every machine.
        assert _exchange(served, _request("POST", "/machines/m1", _update_body()))[0] == 200
        before = served.driver.platform_ms()
        status, _, answer = _exchange(served, _request("GET", "/machines/m1/wait?state=destroyed&timeout=8"))
        waited_ms = served.driver.platform_ms() - before
    finally:
        served.close(finish=False)
    assert status == 408, answer
    assert waited_ms >= 8_000


def test_closing_with_a_held_wait_answers_it_once() -> None:
    """The driver's close answers a held wait; ``finish`` then resumes it without an InvalidStateError."""
    served = open_session(load("sept25-crash-loop"), 1, speed=4, token=TOKEN)
    app = served.app
    assert _exchange(served, _request("POST", "/machines/m1", _update_body()))[0] == 200
    pending = served.driver.call(lambda: app.wait(app.app, "m1", ["destroyed"], 60, None))
    answers: list[int] = []

    def client() -> None:
        answers.append(_exchange(served, _request("GET", "/machines/m1/wait?state=destroyed&timeout=60"))[0])

    thread = threading.Thread(target=client)
    thread.start()
    time.sleep(0.2)
    served.close(finish=True)  # raised InvalidStateError from finish()'s run
    thread.join(10)
    assert not isinstance(pending, tuple)
    assert pending.future.result()[0] == 408
    assert answers == [503]  # the server's own answer at its close


def test_closing_with_many_held_waits_is_quick() -> None:
    """200 held waits: the server closes, answering each, within a few seconds."""
    served = open_session(load("sept25-crash-loop"), 1, speed=1, token=TOKEN)
    socks = []
    try:
        for _ in range(200):
            sock = _connect(served)
            sock.sendall(_request("GET", "/machines/m1/wait?state=destroyed&timeout=60"))
            socks.append(sock)
        deadline = time.monotonic() + 10
        while served.server.held < 200 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert served.server.held == 200
        began = time.monotonic()
        served.close(finish=False)
        assert time.monotonic() - began < 4.0
        assert _read_answer(socks[0])[0] == 503
    finally:
        for sock in socks:
            sock.close()


@pytest.fixture
def tight(session: Session) -> Iterator[TwinServer]:
    """A second front on the same world with small caps: 3 connections, 1 held wait, 0.5 s idle."""
    server = TwinServer(session.driver, TOKEN, limits=Limits(connections=3, held_waits=1, idle_s=0.5))
    server.start()
    yield server
    server.close()


def _on(server: TwinServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def test_past_the_held_wait_cap_a_wait_is_429_with_retry_after(tight: TwinServer) -> None:
    """With one wait held, the next is answered 429 with Retry-After, not held."""
    wait = _request("GET", "/machines/m1/wait?state=destroyed&timeout=60")
    with _on(tight) as first, _on(tight) as second:
        first.sendall(wait)
        deadline = time.monotonic() + 5
        while tight.held < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        second.sendall(wait)
        status, headers, _ = _read_answer(second)
    assert status == 429
    assert headers["retry-after"] == "1"


def test_past_the_connection_cap_a_client_is_503(tight: TwinServer) -> None:
    """Three connections open: the fourth is answered 503 and closed; after they go, served again."""
    held = [_on(tight) for _ in range(3)]
    try:
        time.sleep(0.1)
        with _on(tight) as extra:
            extra.sendall(_request("GET", "/machines"))
            status, _, body = _read_answer(extra)
        assert status == 503
        assert "too many connections" in json.loads(body)["error"]
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.2)
    with _on(tight) as again:
        again.sendall(_request("GET", "/machines"))
        assert _read_answer(again)[0] == 200


def test_an_idle_or_slow_client_is_closed(tight: TwinServer) -> None:
    """A connection that sends half a request head and stops is closed after the idle limit."""
    with _on(tight) as slow:
        slow.sendall(b"GET /v1/apps/sept25-crash-loop/machines HTTP/1.1\r\nHost:")
        slow.settimeout(5)
        began = time.monotonic()
        assert slow.recv(100) == b""
        assert time.monotonic() - began < 3


def test_looks_past_the_cap_are_counted_not_kept(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads past the look cap are counted (``looks_not_kept``): memory bounded however many."""
    monkeypatch.setattr(app_module, "MAX_LOOK_MACHINES", 5)
    for _ in range(8):
        assert _exchange(session, _request("GET", "/machines/m1"))[0] == 200
    assert len(session.app.recorded) == len(session.app.looks) == 5
    assert session.app.looks_not_kept == 3


def test_answered_waits_on_a_machine_that_never_changes_leave_nothing_behind() -> None:
    """40 waits answered at their deadline on an idle machine: no callback of theirs is kept.

    A wait left its callback on the machine's next change, which an idle machine never
    makes: 5,000 held waits re-asked every 20 s grew the serve by 19 MB a round.
    """
    served = open_session(load("sept25-crash-loop"), 1, speed=50, token=TOKEN)
    try:
        with _connect(served) as sock:
            for _ in range(40):
                sock.sendall(_request("GET", "/machines/m1/wait?state=destroyed&timeout=1"))
                assert _read_answer(sock)[0] == 408
        app = served.app
        machine = app.machines["m1"]
        callbacks = served.driver.call(lambda: len(machine.next_change().callbacks or ()))
        assert callbacks <= 1
        assert app.waits == ()
    finally:
        served.close(finish=False)


def test_a_bug_in_the_door_is_a_line_not_a_traceback(
    session: Session, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """An exception the door did not expect closes that connection, is kept as one line
    (``TwinServer.errors``), prints nothing, and the next connection is served."""
    real = http1.read_body
    calls = {"n": 0}

    async def broken(*args: object) -> bytes:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ValueError("a bug")
        return await real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(http1, "read_body", broken)
    with _connect(session) as sock:
        sock.sendall(_request("GET", "/machines"))
        assert sock.recv(100) == b""
    assert _exchange(session, _request("GET", "/machines"))[0] == 200
    assert session.server.errors == ["ValueError: a bug"]
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out
