"""One real server of the fleet: a stdlib HTTP server with the rollout file's drain behaviour.

Run as ``python -m platform_testbed.sim.rollout.real.server --port P --listen-at EPOCH ...`` by the harness.
It binds 127.0.0.1 only. Timeline, as ``sim.rollout.drain.stop_plan`` describes it:

- until ``--listen-at`` (wall-clock epoch seconds): not listening (the container is starting);
- from then: ``GET /health`` answers 200, any other path 200 (a real request served);
- on SIGTERM: the drain begins, ``/health`` answers 503, real requests are still served;
- ``--serve-after-drain`` seconds later the listening socket closes (connections already
  open keep being served, as a stdlib server does: that is the real part the model leaves out);
- ``--shutdown`` seconds after that the process exits (the harness SIGKILLs it at the stop
  grace period if it has not).

Every answer is one line appended to ``--log`` (``<epoch> H 200``, ``<epoch> H 503``,
``<epoch> R 200``), written unbuffered so a SIGKILL loses none. ``--max-life`` bounds the
process in any case, so a harness that dies cannot leave it running.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOST = "127.0.0.1"


class _State:
    def __init__(self, log_fd: int) -> None:
        self.draining = False
        self.log_fd = log_fd
        self.drain = threading.Event()

    def log(self, kind: str, status: int) -> None:
        os.write(self.log_fd, f"{time.time():.6f} {kind} {status}\n".encode())


def _handler(state: _State, idle_s: float | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real api server
        # The keep-alive idle timeout: a connection with no request for this long is closed.
        timeout = idle_s

        def do_GET(self) -> None:  # the stdlib's naming
            if self.path == "/health":
                status, kind = (503, "H") if state.draining else (200, "H")
            else:
                status, kind = 200, "R"
            # Logged when answered, before the write: HAProxy's check reads the status line
            # and resets the connection, so a write after it can fail (the answer was given).
            state.log(kind, status)
            body = b"draining\n" if status == 503 else b"ok\n"
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A peer that resets the connection (HAProxy's checks do) is not an error here."""
        return


def serve(
    *,
    port: int,
    listen_at: float,
    serve_after_drain_s: float,
    shutdown_s: float,
    log_path: str,
    idle_s: float | None,
    max_life_s: float,
) -> None:
    """Run the server's whole life (see the module docstring); returns only by exiting."""
    born = time.monotonic()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    state = _State(fd)

    def on_term(signum: int, frame: object) -> None:
        state.draining = True
        state.drain.set()

    signal.signal(signal.SIGTERM, on_term)
    wait = listen_at - time.time()
    if wait > 0:
        state.drain.wait(wait)  # a SIGTERM while starting ends the start early
    if state.drain.is_set():
        os._exit(0)
    httpd = _Server((HOST, port), _handler(state, idle_s))
    os.write(fd, f"{time.time():.6f} L 0\n".encode())
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    state.drain.wait(max(0.0, max_life_s - (time.monotonic() - born)))
    if state.drain.is_set():
        os.write(fd, f"{time.time():.6f} D 0\n".encode())
        time.sleep(serve_after_drain_s)
    httpd.shutdown()
    httpd.socket.close()
    os.write(fd, f"{time.time():.6f} C 0\n".encode())
    time.sleep(shutdown_s)
    os.write(fd, f"{time.time():.6f} X 0\n".encode())
    os._exit(0)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments and serve."""
    parser = argparse.ArgumentParser(prog="python -m platform_testbed.sim.rollout.real.server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--listen-at", type=float, required=True)
    parser.add_argument("--serve-after-drain", type=float, required=True)
    parser.add_argument("--shutdown", type=float, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--idle", type=float, default=None, help="keep-alive idle timeout (s)")
    parser.add_argument("--max-life", type=float, default=600.0)
    args = parser.parse_args(argv)
    serve(port=args.port, listen_at=args.listen_at, serve_after_drain_s=args.serve_after_drain,
          shutdown_s=args.shutdown, log_path=args.log, idle_s=args.idle, max_life_s=args.max_life)


if __name__ == "__main__":
    main()
