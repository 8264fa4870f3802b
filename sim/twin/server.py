"""The HTTP front of the twin: Fly's Machines API routes onto ``ServedApp``, on 127.0.0.1 only.

One asyncio loop on its own thread serves every connection (``sim.twin.http1`` reads
them): a held ``/wait`` is a coroutine awaiting the world's answer, not a thread, so
thousands of them cost a few KiB each and a shutdown ends them all at once. Calls into
the world go to the driver's thread (``Driver.submit``), the only one that touches SimPy.
Every request needs the bearer token (401 otherwise, as Fly answers a missing or invalid
one: ``{"error":"invalid token"}``, fly-go flaps_apps_test.go).

Bounds (each a field of ``Limits``; a client past one gets a status that says which): the
request line, headers and body (414, 431, 413), connections at once (503), held waits
(429 with ``Retry-After``), a client that sends too slowly (408, or the connection closed
when it sent nothing), a call the world does not answer in time (503).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import itertools
import json
import re
import resource
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote

from platform_testbed.checks import flywait
from platform_testbed.sim.twin import http1
from platform_testbed.sim.twin.app import Answer, ApiError, Held, WaitStarted
from platform_testbed.sim.twin.clock import Driver
from platform_testbed.sim.twin.faults import CLOSED, request_kind

__all__ = ["HOST", "NONCE_HEADER", "Limits", "Request", "TwinServer", "process_limits"]

#: The only address served: the world is for the machine's own user.
HOST = "127.0.0.1"
#: fly-go flaps/flaps_machines.go ``NonceHeader``.
NONCE_HEADER = "fly-machine-lease-nonce"
#: Not public: assumed. The id Fly's edge gives each answer (flyctl prints it in errors).
REQUEST_ID_HEADER = "fly-request-id"
_ROUTE = re.compile(r"/v1/apps/([^/]+)(?:/machines(?:/([^/]+)(?:/([a-z]+)(?:/([^/]+))?)?)?)?/?")
#: Operations Fly's API has that the model has no counterpart for: 501, said so.
_NOT_MODELLED = {"suspend": "suspending a machine", "signal": "signals to a machine's app",
                 "exec": "running commands in a machine", "memory": "a machine's memory"}
_DIGITS = re.compile(r"-?[0-9]{1,12}")  # ASCII only: ``int()`` also takes ``١٢`` and ``1_0``


#: Not public: assumed (the twin's own bounds, not Fly's).
MAX_CONNECTIONS = 8_192
MAX_HELD_WAITS = 8_000


@dataclass(frozen=True, slots=True)
class Limits:
    """What the server holds at most, and how long it waits for a client (wall seconds)."""

    #: Connections open at once; the next is answered 503 and closed. Within the
    #: descriptors a process gets (``ulimit -n``), less a margin for files and the world.
    connections: int = MAX_CONNECTIONS
    #: ``/wait`` requests held at once; the next is answered 429 (``Retry-After``).
    held_waits: int = MAX_HELD_WAITS
    #: The listen backlog: 64 clients connecting at once are all queued (was 5).
    backlog: int = 1_024
    #: A connection that sends no complete request head for this long is closed.
    idle_s: float = 60.0
    #: A body not received whole within this is answered 408.
    body_s: float = 30.0
    #: An answer a client does not read within this: the connection is closed.
    write_s: float = 30.0
    #: A call the world's thread has not answered within this: 503.
    call_s: float = 30.0
    #: Requests kept for the report (the rest are counted, ``requests_not_kept``).
    requests_kept: int = 10_000
    #: At shutdown, how long answers to held waits may take to go out before every
    #: connection is cut.
    grace_s: float = 1.0


def process_limits() -> Limits:
    """``Limits`` within this process's descriptors (``ulimit -n``), a margin kept for files."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    room = MAX_CONNECTIONS if soft == resource.RLIM_INFINITY else max(16, soft - 128)
    connections = min(MAX_CONNECTIONS, room)
    return Limits(connections=connections, held_waits=min(MAX_HELD_WAITS, connections))


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
    key: str | None
    query: dict[str, list[str]]
    body: Any
    nonce: str | None


class _ShuttingDown(Exception):
    """The server is closing: a held request is answered 503 now."""


class _ClientGone(Exception):
    """The client closed or reset its connection while its request was held."""


_MAX_ERRORS = 100
#: The status logged for a request whose client went away before its answer (nginx's 499).
CLIENT_GONE = 499
#: How often the held requests' clients are looked at, all in one pass (wall s): a client
#: that went away frees its place within this.
_GONE_POLL_S = 0.5


def _fail(status: int, message: str) -> Answer:
    # ErrorResponse (tests/data/fly/openapi): ``error`` and ``status`` (main.statusCode,
    # ``unknown`` for everything but a capacity error).
    return status, {"error": message, "status": "unknown"}


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


def _integer(query: dict[str, list[str]], name: str) -> int | None:
    text = _one(query, name)
    if text is None or text == "":
        return None
    if not _DIGITS.fullmatch(text):
        raise ApiError(400, f"invalid {name}: {text[:40]!r} is not an integer (ASCII digits, at most 12)")
    return int(text)


def _flag(query: dict[str, list[str]], name: str) -> bool:
    return (_one(query, name) or "").lower() in ("true", "1")


def _boolean(body: Any, name: str) -> None:
    if isinstance(body, dict) and name in body and not isinstance(body[name], bool):
        raise ApiError(400, f"invalid request: {name} must be a boolean")


def _json(raw: bytes) -> Any:
    """The body as JSON: UTF-8 only (RFC 8259 8.1; ``json.loads`` would guess UTF-16)."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ApiError(400, "invalid request: the body is not UTF-8") from None
    except RecursionError:
        raise ApiError(400, "invalid request: the body's JSON is nested too deep") from None
    except ValueError:
        raise ApiError(400, "invalid request: the body is not JSON") from None


def _listening(port: int, backlog: int) -> socket.socket:
    """A socket listening on 127.0.0.1:``port`` (its ``OSError`` as the system said it)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return sock


class TwinServer:
    """Serve ``driver``'s app on 127.0.0.1:``port`` (0: any free port) to holders of ``token``."""

    def __init__(self, driver: Driver, token: str, port: int = 0, limits: Limits | None = None) -> None:
        self.driver = driver
        self.token = token
        self.limits = limits or process_limits()
        #: The first ``limits.requests_kept`` requests; ``requests_seen`` counts them all.
        self.requests: list[Request] = []
        self.requests_seen = 0
        self._lock = threading.Lock()
        # Bound here, not in the thread: a port in use is an OSError for the caller.
        self._sock = _listening(port, self.limits.backlog)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="twin-http", daemon=True)
        self._ready = threading.Event()
        self._ids = itertools.count(1)
        #: Open connections, and whether each is between requests (idle: cut at once at
        #: shutdown) or in one (answered first).
        self._connections: dict[asyncio.Task[None], bool] = {}
        self.held = 0
        #: Each held request's "client gone" future and the test that sets it (``_sweep``).
        self._held: dict[asyncio.Future[None], Callable[[], bool]] = {}
        self._stop: asyncio.Event | None = None
        #: What went wrong in the loop itself (an accept the system refused, a bug of the
        #: door's), one line each, at most ``_MAX_ERRORS``: never printed as a traceback.
        self.errors: list[str] = []
        self._shutdown: asyncio.Future[None] | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The address bound (host, port)."""
        host, port = self._sock.getsockname()[:2]
        return str(host), int(port)

    @property
    def port(self) -> int:
        """The port bound."""
        return self.address[1]

    @property
    def url(self) -> str:
        """The base URL (Fly's API lives under ``/v1``)."""
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        """Answer requests from now on."""
        self._thread.start()
        self._ready.wait()

    def close(self) -> None:
        """Stop answering (held requests get a 503) and release the port; bounded in time."""
        if self._thread.is_alive() and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already ended
                self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(self.limits.grace_s + 3.0)
        elif not self._thread.is_alive():
            self._sock.close()

    # -- the loop ---------------------------------------------------------------------------

    def _run(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve())
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            self._sock.close()

    def _loop_error(self, _loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # asyncio reports an accept() out of descriptors here (and pauses accepting for a
        # second), through the logging module's last resort: a traceback on stderr.
        if len(self.errors) < _MAX_ERRORS:
            error = context.get("exception")
            self.errors.append(str(context.get("message", "")) + (f" ({error})" if error else ""))

    async def _serve(self) -> None:
        self._loop.set_exception_handler(self._loop_error)
        self._stop = asyncio.Event()
        self._shutdown = self._loop.create_future()
        # asyncio sets TCP_NODELAY on every TCP connection: with one write per answer,
        # nothing waits for the client's delayed ACK (the 40 ms a request it cost).
        server = await asyncio.start_server(self._connection, sock=self._sock,
                                            limit=http1.MAX_HEAD_BYTES)
        self._ready.set()
        sweeper = asyncio.create_task(self._sweep())
        await self._stop.wait()
        sweeper.cancel()
        server.close()
        self._shutdown.set_result(None)
        for task, idle in list(self._connections.items()):
            if idle:
                task.cancel()
        busy = list(self._connections)
        if busy:
            _done, left = await asyncio.wait(busy, timeout=self.limits.grace_s)
            for task in left:
                task.cancel()
            if left:
                await asyncio.wait(left, timeout=1.0)

    async def _sweep(self) -> None:
        """Find the held requests whose clients have gone, in one pass every ``_GONE_POLL_S``.

        One timer for them all: a poll per held request was 10,000 wake-ups a second at
        5,000 held waits. A reset shows as a closing transport, a close as the end of input.
        """
        while True:
            await asyncio.sleep(_GONE_POLL_S)
            for gone_future, gone in list(self._held.items()):
                if not gone_future.done() and gone():
                    gone_future.set_result(None)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        closing = self._shutdown is None or self._shutdown.done()
        if closing or len(self._connections) >= self.limits.connections:
            status, body = _fail(503, f"too many connections at once (at most {self.limits.connections})")
            writer.write(self._encode(status, body, "GET", close=True))
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.drain(), 1.0)
            writer.transport.abort()
            return
        self._connections[task] = True
        try:
            await self._converse(reader, writer, task)
        except (asyncio.CancelledError, ConnectionError, OSError, TimeoutError, _ClientGone):
            pass  # the client went away, was too slow, or the server is closing: nothing to say
        except Exception as error:  # a bug of the door's: kept as a line, never a traceback
            if len(self.errors) < _MAX_ERRORS:
                self.errors.append(f"{type(error).__name__}: {error}"[:300])
        finally:
            del self._connections[task]
            writer.transport.abort()

    async def _converse(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, task: asyncio.Task[None]
    ) -> None:
        limits = self.limits
        while True:
            self._connections[task] = True
            try:
                async with asyncio.timeout(limits.idle_s):
                    head = await http1.read_head(reader)
                if head is None:
                    return
                self._connections[task] = False
                try:
                    async with asyncio.timeout(limits.body_s):
                        raw = await http1.read_body(reader, writer, head)
                except TimeoutError:
                    raise http1.Refused(408, f"the body did not arrive within {limits.body_s:g} s") from None
            except http1.Refused as refused:
                status, body = _fail(refused.status, refused.message)
                await self._send(writer, self._encode(status, body, "GET", close=True))
                return
            def gone() -> bool:
                return reader.at_eof() or writer.transport.is_closing()

            status, body = await self._respond(head, raw, gone)
            if status == CLOSED:  # the API's own fault ([api]): cut, unanswered
                return
            close = not head.keep_alive or (self._shutdown is not None and self._shutdown.done())
            await self._send(writer, self._encode(status, body, head.method, close=close))
            if close:
                return

    async def _send(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        async with asyncio.timeout(self.limits.write_s):
            await writer.drain()

    def _encode(self, status: int, body: Any, method: str, *, close: bool) -> bytes:
        # No body: 204, and the 200s Fly's OpenAPI declares without content (delete, cordon).
        data = b"" if status == 204 or body is None else json.dumps(body, separators=(",", ":")).encode()
        headers = [("Content-Type", "application/json; charset=utf-8"),
                   (REQUEST_ID_HEADER, f"testbed-{next(self._ids):08d}")]
        if status == 429:  # 1 unless the scenario's [api] says otherwise
            headers.append(("Retry-After", str(self.driver.app.faults.table.retry_after_s)))
        if close:
            headers.append(("Connection", "close"))
        return http1.response(status, data, headers, head_only=method == "HEAD")

    # -- one request: the one place a request is answered ------------------------------------

    async def _respond(self, head: http1.Head, raw: bytes, gone: Callable[[], bool]) -> Answer:
        """The answer to one request (status, JSON body), logged before it goes out.

        ``gone`` says whether the client has closed its connection (a held wait lets it go).
        """
        at_ms = self.driver.platform_ms()
        try:
            status, body = await self._answer(head, raw, gone)
        except ApiError as error:
            status, body = _fail(error.status, error.message)
        except _ShuttingDown:
            status, body = _fail(503, "the testbed is shutting down")
        except _ClientGone:
            self._log(Request(head.method, head.target, CLIENT_GONE, at_ms))
            raise
        # Logged before the answer goes out: a client that has its answer finds its request
        # in the log (after the write, a reader could miss the last one).
        self._log(Request(head.method, head.target, status, at_ms))
        return status, body

    def _log(self, request: Request) -> None:
        with self._lock:
            self.requests_seen += 1
            if len(self.requests) < self.limits.requests_kept:
                self.requests.append(request)

    def _authorized(self, head: http1.Head) -> bool:
        # "Bearer <token>"; fly-go may also send "FlyV1 <macaroon>": any scheme, this token.
        _scheme, _, given = (head.header("authorization") or "").strip().partition(" ")
        return bool(given) and hmac.compare_digest(given.strip().encode("latin-1"), self.token.encode())

    async def _answer(self, head: http1.Head, raw: bytes, gone: Callable[[], bool]) -> Answer:
        if not self._authorized(head):
            return _fail(401, "invalid token")
        path, _, query_text = head.target.partition("?")
        route = _ROUTE.fullmatch(path)
        if route is None:
            return _fail(404, "not found")
        app, machine_id, action, key = (unquote(g) if g else None for g in route.groups())
        assert app is not None
        query = parse_qs(query_text, keep_blank_values=True)
        nonce = head.header(NONCE_HEADER) or None
        body = _json(raw) if raw else None
        call = self._route(_Incoming(head.method, app, machine_id, action, key, query, body, nonce),
                           machines="/machines" in path)
        if call is None:
            return _fail(405, f"{head.method} {path} is not served by the testbed's Machines API")
        served = self.driver.app
        latency_s = 0.0
        if served.faults.active:
            inner, kind = call, request_kind(head.method, machine_id, action)
            timeout = self._wait_timeout(query) if kind == "wait" else 0
            latency_s = served.faults.table.latency_s + served.faults.table.jitter_s

            def call() -> Any:
                return served.faulted(inner, kind, head.target, machine_id, timeout)
        if action != "wait":
            result = await self._call(call)
            if isinstance(result, Held):
                return await self._held_answer(result, latency_s, gone)
            assert isinstance(result, tuple)
            return result
        if self.held >= self.limits.held_waits:
            raise ApiError(429, f"too many held waits (at most {self.limits.held_waits}): retry later")
        self.held += 1
        try:
            result = await self._call(call)
            if isinstance(result, Held):
                return await self._held_answer(result, self._wait_timeout(query) + latency_s, gone)
            if not isinstance(result, WaitStarted):
                assert isinstance(result, tuple)
                return result
            # The platform's timeout in wall seconds, and a margin for the loop: the world
            # answers first (408), this bound only guards against a loop that has died
            # (``Driver.wall_bound``: on virtual time wall seconds say nothing of it; at most
            # a day, as ``--speed 1e-12`` would make it 6e13 s).
            timeout_s = min(self.driver.wall_bound(self._wait_timeout(query)), 86_400.0)
            try:
                answer: Answer = await self._settled(result.future, timeout_s, gone)
            except TimeoutError:
                wanted = ", ".join(result.wanted)
                return _fail(408, f"machine failed to reach desired state, {wanted}")
            return answer
        finally:
            self.held -= 1

    async def _held_answer(self, held: Held, platform_s: float, gone: Callable[[], bool]) -> Answer:
        """A held answer (``[api]`` latency), once the world's clock reaches it (at most
        ``platform_s`` on: ``Driver.wall_bound``, which only guards against a loop that died)."""
        timeout_s = min(self.driver.wall_bound(platform_s), 86_400.0)
        try:
            answer: Answer = await self._settled(held.future, timeout_s, gone)
        except TimeoutError:
            return _fail(503, "the simulated world did not answer in time")
        return answer

    async def _call(self, fn: Callable[[], Any]) -> Any:
        """``fn``'s result, run on the world's thread; 503 if the world cannot answer."""
        try:
            return await self._settled(self.driver.submit(fn), self.limits.call_s)
        except TimeoutError:
            raise ApiError(503, "the simulated world did not answer within "
                                f"{self.limits.call_s:g} s") from None

    async def _settled(
        self, future: Future[Any], timeout_s: float, gone: Callable[[], bool] | None = None
    ) -> Any:
        """``future``'s result, awaited here without cancelling it (the world's thread owns it).

        ``_ShuttingDown`` when the server closes first, ``TimeoutError`` after ``timeout_s``,
        ``_ClientGone`` when ``gone`` says the client has left.
        """
        loop = self._loop
        mine: asyncio.Future[Any] = loop.create_future()

        def settle(_done: Future[Any]) -> None:
            if not mine.done():
                mine.set_result(None)

        def hand_over(done: Future[Any]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                loop.call_soon_threadsafe(settle, done)

        future.add_done_callback(hand_over)
        assert self._shutdown is not None
        waits: list[asyncio.Future[Any]] = [mine, self._shutdown]
        gone_future: asyncio.Future[None] | None = None
        if gone is not None:
            gone_future = loop.create_future()
            self._held[gone_future] = gone
            waits.append(gone_future)
        try:
            await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if gone_future is not None:
                del self._held[gone_future]
        if gone_future is not None and gone_future.done() and not future.done():
            raise _ClientGone
        if not future.done():
            if self._shutdown.done():
                raise _ShuttingDown
            raise TimeoutError
        error = future.exception()
        if error is None:
            return future.result()
        if isinstance(error, ApiError):
            raise error
        if isinstance(error, RuntimeError) and self.driver.ended.is_set():
            raise ApiError(503, "the simulated world has ended (its horizon was reached)")
        # A bug of the testbed's, not the client's: said as one, not hidden as the world's end.
        raise ApiError(500, f"internal error in the testbed: {type(error).__name__}: {error}"[:300])

    @staticmethod
    def _wait_timeout(query: dict[str, list[str]]) -> int:
        # The server's clamp, as fly-go's (checks.flywait.clamp_timeout_s); default 60.
        return flywait.clamp_timeout_s(_integer(query, "timeout"))

    def _route(self, req: _Incoming, machines: bool = True) -> Callable[[], Any] | None:
        served, method, app, machine_id, query = (
            self.driver.app, req.method, req.app, req.machine_id, req.query)
        if not machines:
            return (lambda: served.show_app(app)) if method == "GET" else None
        if machine_id is None:
            if method == "POST":
                _boolean(req.body, "skip_launch")
                return lambda: served.create(app, req.body)
            if method != "GET":
                return None
            states = [s for v in query.get("state", []) for s in v.split(",") if s]
            region = _one(query, "region") or None
            summary, deleted = _flag(query, "summary"), _flag(query, "include_deleted")
            return lambda: served.list(app, states, region=region, summary=summary,
                                       include_deleted=deleted)
        if req.action is None:
            if method == "GET":
                return lambda: served.get(app, machine_id)
            if method == "POST":
                _boolean(req.body, "skip_launch")
                return lambda: served.update(app, machine_id, req.body, req.nonce)
            if method == "DELETE":
                # OpenAPI: ``force``; fly-go's Destroy sends ``kill``.
                force = _flag(query, "force") or _flag(query, "kill")
                return lambda: served.destroy(app, machine_id, force, req.nonce)
            return None
        if req.key is not None and req.action != "metadata":
            return None
        if req.action in _NOT_MODELLED:
            raise ApiError(501, f"the testbed does not model {_NOT_MODELLED[req.action]}")
        if req.action == "wait" and method == "GET":
            # No state: flywait.wanted_states waits for started; refusal checks each one.
            states = [s for v in query.get("state", []) for s in v.split(",") if s]
            timeout = self._wait_timeout(query)
            version = _one(query, "version") or _one(query, "instance_id") or None  # "": none
            after = _one(query, "from_event_id") or None
            return lambda: served.wait(app, machine_id, states, timeout, version, from_event_id=after)
        if method == "POST" and req.action in ("start", "stop", "restart"):
            operation = getattr(served, req.action)
            return lambda: operation(app, machine_id, req.nonce)
        if req.action == "lease":
            return self._lease_route(req, machine_id)
        if req.action == "events" and method == "GET":
            limit = _integer(query, "limit")
            return lambda: served.events(app, machine_id, limit)
        return self._other_route(req, machine_id)

    def _other_route(self, req: _Incoming, machine_id: str) -> Callable[[], Any] | None:
        served, app, method, action, key = self.driver.app, req.app, req.method, req.action, req.key
        if method == "POST" and action in ("cordon", "uncordon") and key is None:
            on = action == "cordon"
            return lambda: served.cordon(app, machine_id, req.nonce, on=on)
        if method == "GET" and action == "versions" and key is None:
            return lambda: served.versions_of(app, machine_id)
        if method == "GET" and action == "ps" and key is None:
            return lambda: served.processes(app, machine_id)
        if action != "metadata":
            return None
        if method == "GET" and key is None:
            return lambda: served.metadata(app, machine_id)
        if method == "POST" and key is not None:
            value = req.body.get("value") if isinstance(req.body, dict) else None
            return lambda: served.set_metadata(app, machine_id, key, value)
        if method == "DELETE" and key is not None:
            return lambda: served.delete_metadata(app, machine_id, key)
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
