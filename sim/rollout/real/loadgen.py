"""An open-loop load generator on loopback: Poisson arrivals at a fixed rate, bounded.

Each request is sent at its drawn time whatever the earlier ones are doing (open loop: a
slow or failing balancer does not slow the arrivals), on its own connection to
127.0.0.1, ``GET /`` with ``Connection: close``. It stops by itself at ``max_requests`` or
``max_duration_s``, whichever comes first, or earlier when ``stop()`` is called.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

HOST = "127.0.0.1"


@dataclass
class LoadResult:
    """What the client saw: HTTP status (or ``error``) per request."""

    sent: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    #: Per request: when it was due and when it was sent (epoch seconds), and what it got.
    log: list[tuple[float, float, str]] = field(default_factory=list)


class LoadGenerator:
    """Runs in its own thread with its own asyncio loop; ``start()``, then ``stop()``."""

    def __init__(
        self,
        port: int,
        rps: float,
        *,
        seed: int | str,
        max_requests: int,
        max_duration_s: float,
        request_timeout_s: float = 5.0,
    ) -> None:
        if port <= 0 or rps <= 0:
            raise ValueError("port and rps must be positive")
        self.port = port
        self.rps = rps
        self.rng = random.Random(seed)
        self.max_requests = max_requests
        self.max_duration_s = max_duration_s
        self.request_timeout_s = request_timeout_s
        self.result = LoadResult()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="loadgen")

    def start(self) -> None:
        """Begin sending."""
        self._thread.start()

    def stop(self, wait_s: float | None = None) -> LoadResult:
        """Stop sending, wait for requests in flight (at most their timeout), return the result."""
        self._stop.set()
        self._thread.join(self.request_timeout_s + 1.0 if wait_s is None else wait_s)
        return self.result

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        start = time.monotonic()
        due = 0.0
        tasks: set[asyncio.Task[None]] = set()
        while self.result.sent < self.max_requests and not self._stop.is_set():
            due += self.rng.expovariate(self.rps)
            if due > self.max_duration_s:
                break
            delay = start + due - time.monotonic()
            # Sleep in short slices so stop() is seen promptly.
            while delay > 0 and not self._stop.is_set():
                await asyncio.sleep(min(delay, 0.05))
                delay = start + due - time.monotonic()
            if self._stop.is_set():
                break
            self.result.sent += 1
            task = asyncio.create_task(self._one(time.time() - (time.monotonic() - start - due)))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.wait(tasks, timeout=self.request_timeout_s)

    async def _one(self, due_at: float) -> None:
        sent_at = time.time()
        try:
            status = await asyncio.wait_for(self._get(), self.request_timeout_s)
        except (TimeoutError, OSError, ValueError):
            status = "error"
        self.result.statuses[status] += 1
        self.result.log.append((due_at, sent_at, status))

    async def _get(self) -> str:
        reader, writer = await asyncio.open_connection(HOST, self.port)
        try:
            writer.write(b"GET / HTTP/1.1\r\nHost: lb\r\nConnection: close\r\n\r\n")
            await writer.drain()
            line = await reader.readline()
            await reader.read()
            parts = line.split()
            return parts[1].decode() if len(parts) >= 2 else "error"
        finally:
            writer.close()
