"""Soak ``testbed serve``: 30 keep-alive clients and 5,000 held waits for a minute, then SIGTERM.

``python benchmarks/soak_twin.py [--seconds 60] [--clients 30] [--waits 5000]`` (``make soak``).
The server is the real command line in its own process (``testbed serve sept25-crash-loop``,
a crash-looping world); the clients are one asyncio loop here, on loopback. Every held
wait asks for a state the machine never reaches with a 20 s timeout, so each is answered
408 at its deadline and asked again. Prints the server's RSS every 10 s, how many
requests were sent and answered (by status), and how long SIGTERM took to end the serve,
its exit status and whether stderr held a traceback. Exit 1 if a request went unanswered,
RSS grew by more than 20 MB after the first 10 s, shutdown took over 5 s, or the serve did
not exit 0 cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

TOKEN = "soak-token"
ROOT = Path(__file__).resolve().parents[1]


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def _read_answer(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next((int(line.split(":", 1)[1]) for line in lines
                   if line.lower().startswith("content-length:")), 0)
    await reader.readexactly(length)
    return int(lines[0].split(" ")[1])


class Tally:
    """Requests sent and answered, by status."""

    def __init__(self) -> None:
        self.sent = 0
        self.answered: collections.Counter[int] = collections.Counter()
        self.errors: collections.Counter[str] = collections.Counter()


async def _client(port: int, request: bytes, tally: Tally, stop: asyncio.Event) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as error:
        tally.errors[type(error).__name__] += 1
        return
    try:
        while not stop.is_set():
            writer.write(request)
            tally.sent += 1
            status = await _read_answer(reader)
            tally.answered[status] += 1
    except (OSError, asyncio.IncompleteReadError) as error:
        if not stop.is_set():
            tally.errors[type(error).__name__] += 1
    finally:
        writer.close()


async def _soak(
    port: int, pid: int, seconds: float, clients: int, waits: int
) -> tuple[Tally, Tally, list[float]]:
    app = "sept25-crash-loop"
    get = (f"GET /v1/apps/{app}/machines HTTP/1.1\r\nHost: x\r\n"
           f"Authorization: Bearer {TOKEN}\r\n\r\n").encode()
    wait = (f"GET /v1/apps/{app}/machines/m1/wait?state=destroyed&timeout=20 HTTP/1.1\r\n"
            f"Host: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").encode()
    reads, held = Tally(), Tally()
    stop = asyncio.Event()
    tasks = [asyncio.create_task(_client(port, wait, held, stop)) for _ in range(waits)]
    tasks += [asyncio.create_task(_client(port, get, reads, stop)) for _ in range(clients)]
    rss = []
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        await asyncio.sleep(min(10.0, seconds - (time.monotonic() - began)))
        rss.append(_rss_mb(pid))
        print(f"  {time.monotonic() - began:5.1f} s: server RSS {rss[-1]:.1f} MB, reads answered "
              f"{sum(reads.answered.values())}, waits answered {sum(held.answered.values())}", flush=True)
    stop.set()
    # Let the last answers in flight arrive (a read takes a few ms; a held wait stays held).
    await asyncio.sleep(0.5)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return reads, held, rss


def main() -> int:
    """Run the soak; 0 if every bound held."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--waits", type=int, default=5_000)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.waits + args.clients + 256
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, need), hard))
    testbed = Path(sys.executable).with_name("testbed")
    serve = subprocess.Popen(
        [str(testbed), "serve", "sept25-crash-loop", "--token", TOKEN],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert serve.stdout is not None
        first = serve.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", first)
        if match is None:
            print(f"soak: the serve did not start: {first!r} {serve.stderr.read() if serve.stderr else ''}")
            return 1
        port = int(match.group(1))
        print(f"soak: serve pid {serve.pid} on port {port}; {args.clients} clients, {args.waits} held waits, "
              f"{args.seconds:g} s  [load {os.getloadavg()[0]:.2f}]", flush=True)
        reads, held, rss = asyncio.run(_soak(port, serve.pid, args.seconds, args.clients, args.waits))
        began = time.monotonic()
        serve.send_signal(signal.SIGTERM)
        out, err = serve.communicate(timeout=60)
        took = time.monotonic() - began
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    unanswered_reads = reads.sent - sum(reads.answered.values())
    print(f"reads: sent {reads.sent}, answered {dict(reads.answered)}, errors {dict(reads.errors)}")
    print(f"waits: sent {held.sent}, answered {dict(held.answered)}, errors {dict(held.errors)} "
          f"(those still held at the end are answered 503 by the shutdown)")
    growth = rss[-1] - rss[0] if len(rss) > 1 else 0.0
    print(f"RSS: {' '.join(f'{r:.1f}' for r in rss)} MB (growth after the first sample {growth:+.1f} MB)")
    traceback = "Traceback" in err
    print(f"SIGTERM: exit {serve.returncode} in {took:.2f} s, traceback on stderr: {traceback}, "
          f"report lines {len(out.splitlines())}  [load {os.getloadavg()[0]:.2f}]")
    ok = (unanswered_reads <= args.clients and not reads.errors and not held.errors and growth <= 20
          and took <= 5 and serve.returncode == 0 and not traceback)
    print("soak: " + ("every bound held" if ok else "a bound did NOT hold"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
