"""The HTTP front of the twin: Fly's Machines API routes onto ``ServedApp``, on 127.0.0.1 only.

Standard library ``ThreadingHTTPServer``: a long poll holds one thread per waiting
request, which threads do simply, and nothing here needs more than JSON in and out (no
dependency to pin). Every request needs the bearer token (401 otherwise, as Fly answers
a missing or invalid one: ``{"error":"invalid token"}``, fly-go flaps_apps_test.go).
"""

from __future__ import annotations

import hmac
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

from platform_testbed.checks import flywait
from platform_testbed.sim.twin.app import Answer, ApiError
from platform_testbed.sim.twin.clock import Driver, wait_answer

__all__ = ["HOST", "NONCE_HEADER", "Request", "TwinServer"]

#: The only address served: the world is for the machine's own user.
HOST = "127.0.0.1"
#: fly-go flaps/flaps_machines.go ``NonceHeader``.
NONCE_HEADER = "fly-machine-lease-nonce"
_ROUTE = re.compile(r"/v1/apps/([^/]+)/machines(?:/([^/]+)(?:/([a-z]+))?)?/?")
_MAX_BODY = 1 << 20


@dataclass(frozen=True, slots=True)
class Request:
    """One request the client made: method, path (with query), status, platform time."""

    method: str
    path: str
    status: int
    at_ms: int


@dataclass(frozen=True, slots=True)
class _Incoming:
    """A request taken apart: what the routes read."""

    method: str
    app: str
    machine_id: str | None
    action: str | None
    query: dict[str, list[str]]
    body: Any
    nonce: str | None


def _fail(status: int, message: str) -> Answer:
    return status, {"error": message}


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


def _integer(query: dict[str, list[str]], name: str) -> int | None:
    text = _one(query, name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise ApiError(400, f"invalid {name}: {text!r} is not an integer") from None


def _boolean(body: Any, name: str) -> None:
    if isinstance(body, dict) and name in body and not isinstance(body[name], bool):
        raise ApiError(400, f"invalid request: {name} must be a boolean")


class TwinServer:
    """Serve ``driver``'s app on 127.0.0.1:``port`` (0: any free port) to holders of ``token``."""

    def __init__(self, driver: Driver, token: str, port: int = 0) -> None:
        self.driver = driver
        self.token = token
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        twin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: Node's fetch and Go reuse connections

            def __getattr__(self, name: str) -> Any:
                # Every method reaches the routes (405 for those Fly's API has not), where
                # the stdlib would answer an unknown one with 501, a server error.
                if name.startswith("do_"):
                    return lambda: twin._handle(self, name.removeprefix("do_"))
                raise AttributeError(name)

            def log_message(self, format: str, *args: Any) -> None:
                return  # the report lists every request; stderr stays quiet

        self.httpd = ThreadingHTTPServer((HOST, port), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="twin-http", daemon=True)

    @property
    def port(self) -> int:
        """The port bound."""
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL (Fly's API lives under ``/v1``)."""
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        """Answer requests from now on."""
        self._thread.start()

    def close(self) -> None:
        """Stop answering and release the port."""
        if self._thread.is_alive():
            self.httpd.shutdown()
            self._thread.join()
        self.httpd.server_close()

    # -- one request ---------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        at_ms = self.driver.platform_ms()
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(min(length, _MAX_BODY)) if length > 0 else b""
        try:
            status, body = self._answer(handler, method, raw)
        except ApiError as error:
            status, body = _fail(error.status, error.message)
        except RuntimeError:
            status, body = _fail(503, "the simulated world has ended (its horizon was reached)")
        data = json.dumps(body, separators=(",", ":")).encode()
        # Logged before the answer goes out: a client that has its answer finds its request
        # in the log (after the write, a reader could miss the last one).
        with self._lock:
            self.requests.append(Request(method, handler.path, status, at_ms))
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json; charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if method != "HEAD":
            handler.wfile.write(data)

    def _authorized(self, handler: BaseHTTPRequestHandler) -> bool:
        # "Bearer <token>"; fly-go may also send "FlyV1 <macaroon>": any scheme, this token.
        _scheme, _, given = (handler.headers.get("Authorization") or "").strip().partition(" ")
        return bool(given) and hmac.compare_digest(given.strip().encode(), self.token.encode())

    def _answer(self, handler: BaseHTTPRequestHandler, method: str, raw: bytes) -> Answer:
        if not self._authorized(handler):
            return _fail(401, "invalid token")
        path, _, query_text = handler.path.partition("?")
        route = _ROUTE.fullmatch(path)
        if route is None:
            return _fail(404, "not found")
        app, machine_id, action = (unquote(g) if g else None for g in route.groups())
        assert app is not None
        query = parse_qs(query_text, keep_blank_values=True)
        nonce = handler.headers.get(NONCE_HEADER) or None
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                raise ApiError(400, "invalid request: the body is not JSON") from None
        call = self._route(_Incoming(method, app, machine_id, action, query, body, nonce))
        if call is None:
            return _fail(405, f"{method} {path} is not served by the testbed's Machines API")
        if action == "wait":
            timeout_s = self._wait_timeout(query)
            return wait_answer(self.driver.call(call), self.driver, timeout_s)
        result = self.driver.call(call)
        assert isinstance(result, tuple)
        return result

    @staticmethod
    def _wait_timeout(query: dict[str, list[str]]) -> int:
        # The server's clamp, as fly-go's (checks.flywait.clamp_timeout_s); default 60.
        return flywait.clamp_timeout_s(_integer(query, "timeout"))

    def _route(self, req: _Incoming) -> Callable[[], Any] | None:
        served, method, app, machine_id, query = (
            self.driver.app, req.method, req.app, req.machine_id, req.query)
        if machine_id is None:
            if method != "GET":
                return None
            states = [s for v in query.get("state", []) for s in v.split(",") if s]
            return lambda: served.list(app, states)
        if req.action is None:
            if method == "GET":
                return lambda: served.get(app, machine_id)
            if method == "POST":
                _boolean(req.body, "skip_launch")
                return lambda: served.update(app, machine_id, req.body, req.nonce)
            return None
        if req.action == "wait" and method == "GET":
            # No state: flywait.wanted_states waits for started; refusal checks each one.
            states = [s for v in query.get("state", []) for s in v.split(",") if s]
            timeout = self._wait_timeout(query)
            version = _one(query, "version") or _one(query, "instance_id") or None  # "": none
            return lambda: served.wait(app, machine_id, states, timeout, version)
        if method == "POST" and req.action in ("start", "stop", "restart"):
            operation = getattr(served, req.action)
            return lambda: operation(app, machine_id, req.nonce)
        if req.action == "lease":
            return self._lease_route(req, machine_id)
        return None

    def _lease_route(self, req: _Incoming, machine_id: str) -> Callable[[], Any] | None:
        served, app = self.driver.app, req.app
        if req.method == "GET":
            return lambda: served.show_lease(app, machine_id)
        if req.method == "DELETE":
            return lambda: served.release_lease(app, machine_id, req.nonce)
        if req.method != "POST":
            return None
        # fly-go sends ?ttl=N and no body; superfly/docs' curl sends {"ttl": N, "description"}.
        ttl = _integer(req.query, "ttl")
        description = ""
        body = req.body
        if isinstance(body, dict):
            if ttl is None and body.get("ttl") is not None:
                if isinstance(body["ttl"], bool) or not isinstance(body["ttl"], int):
                    raise ApiError(400, "invalid request: ttl must be an integer")
                ttl = body["ttl"]
            if isinstance(body.get("description"), str):
                description = body["description"]
        return lambda: served.acquire_lease(app, machine_id, ttl, description, req.nonce)
