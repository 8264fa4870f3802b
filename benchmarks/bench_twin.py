"""The twin's HTTP door: keep-alive latency, 64 clients at once, memory per read, shutdown.

``python benchmarks/bench_twin.py [keepalive|burst|memory|shutdown|all]``. Each figure is
printed with the load average beside it (``os.getloadavg``): these machines are shared.
Clients are on loopback only, bounded in count and time.

- keepalive: the median and p99 of 500 GETs on one reused connection (``http.client``),
  the old thread-per-connection server measured 44-48 ms (Nagle, headers and body written
  separately); the goal is at most 2 ms.
- burst: 64 clients connect at once and each makes 20 requests; every request answered,
  the p99 (the old backlog of 5 gave about 1 s).
- memory: RSS growth after 20,000 single-machine GETs of a 100-machine app (the old server
  kept every read as the whole fleet rendered twice: 2,000 GETs added 348 MB).
- shutdown: N held ``/wait`` requests (default 2,000), then ``Session.close``: its wall time.
"""

from __future__ import annotations

import http.client
import os
import resource
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable

from platform_testbed.sim.config.scenario import load
from platform_testbed.sim.twin.session import Session, open_session

TOKEN = "bench-token"


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _session(scenario: str = "healthy-release", **sets: str) -> Session:
    pairs = [f"{k}={v}" for k, v in sets.items()]
    return open_session(load(scenario, pairs), 1, speed=1, token=TOKEN)


def _get(conn: http.client.HTTPConnection, path: str) -> int:
    conn.request("GET", path, headers={"Authorization": f"Bearer {TOKEN}"})
    response = conn.getresponse()
    response.read()
    return response.status


def keepalive(n: int = 500) -> None:
    """Median and p99 of ``n`` GETs on one keep-alive connection."""
    session = _session()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", session.server.port, timeout=10)
        path = f"/v1/apps/{session.app.app}/machines"
        _get(conn, path)
        times = []
        for _ in range(n):
            began = time.perf_counter()
            assert _get(conn, path) == 200
            times.append((time.perf_counter() - began) * 1000)
        conn.close()
    finally:
        session.close(finish=False)
    times.sort()
    print(f"keepalive: {n} GETs on one connection: median {statistics.median(times):.2f} ms, "
          f"p99 {times[int(0.99 * n) - 1]:.2f} ms (goal: median <= 2 ms; was 44-48 ms)  [{_load()}]")


def burst(clients: int = 64, each: int = 20) -> None:
    """``clients`` connecting at once, ``each`` requests apiece: all answered, and the p99."""
    session = _session()
    times: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients)

    def client() -> None:
        start.wait()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", session.server.port, timeout=20)
            path = f"/v1/apps/{session.app.app}/machines"
            for _ in range(each):
                began = time.perf_counter()
                status = _get(conn, path)
                with lock:
                    times.append((time.perf_counter() - began) * 1000)
                    if status != 200:
                        failures.append(str(status))
            conn.close()
        except OSError as error:
            with lock:
                failures.append(repr(error))

    threads = [threading.Thread(target=client) for _ in range(clients)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        session.close(finish=False)
    times.sort()
    print(f"burst: {clients} clients x {each}: {len(times)} answered, {len(failures)} failed, "
          f"p50 {statistics.median(times):.2f} ms, p99 {times[int(0.99 * len(times)) - 1]:.2f} ms  "
          f"[{_load()}]")


def memory(reads: int = 20_000, machines: int = 100) -> None:
    """RSS growth over ``reads`` single-machine GETs of a ``machines``-machine app."""
    session = _session("healthy-release", **{"release.machines": str(machines)})
    try:
        conn = http.client.HTTPConnection("127.0.0.1", session.server.port, timeout=10)
        path = f"/v1/apps/{session.app.app}/machines/m001"
        for _ in range(200):
            _get(conn, path)
        before = _rss_mb()
        began = time.perf_counter()
        for _ in range(reads):
            _get(conn, path)
        wall = time.perf_counter() - began
        after = _rss_mb()
        conn.close()
        kept, dropped = len(session.app.recorded), session.app.looks_not_kept
    finally:
        session.close(finish=False)
    print(f"memory: {reads} GETs of one machine of {machines}: RSS {before:.0f} -> {after:.0f} MB "
          f"(+{after - before:.1f} MB), looks kept {kept}, counted {dropped}; {reads / wall:.0f} req/s  "
          f"[{_load()}]")


def shutdown(waits: int = 2_000) -> None:
    """Wall time of ``Session.close`` with ``waits`` held ``/wait`` requests."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2 * waits + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 2 * waits + 256), hard))
    session = _session("sept25-crash-loop")
    socks = []
    request = (f"GET /v1/apps/{session.app.app}/machines/m1/wait?state=destroyed&timeout=300 HTTP/1.1\r\n"
               f"Host: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").encode()
    try:
        for _ in range(waits):
            sock = socket.create_connection(("127.0.0.1", session.server.port), timeout=10)
            sock.sendall(request)
            socks.append(sock)
        deadline = time.monotonic() + 30
        while session.server.held < waits and time.monotonic() < deadline:
            time.sleep(0.05)
        held = session.server.held
        began = time.perf_counter()
        session.close(finish=True)
        wall = time.perf_counter() - began
    finally:
        for sock in socks:
            sock.close()
    print(f"shutdown: {held} held waits, Session.close in {wall:.2f} s (goal <= 5 s)  [{_load()}]")


BENCHES: dict[str, Callable[[], None]] = {
    "keepalive": keepalive, "burst": burst, "memory": memory, "shutdown": shutdown,
}

if __name__ == "__main__":
    chosen = sys.argv[1:] or ["all"]
    for name in BENCHES if chosen == ["all"] else chosen:
        BENCHES[name]()
