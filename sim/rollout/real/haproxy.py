"""HAProxy for the real rollout: install, a config mapped from the rollout file, its log.

The mapping (``render_config``): every server gets an active HTTP check ``GET /health``
expecting 200, with ``inter`` <- ``balancer.interval_s``, ``fall`` <- ``unhealthy_threshold``,
``rise`` <- ``healthy_threshold`` (all times already scaled by the harness). ``balance
random(1)`` picks one target in rotation uniformly, as the model's multinomial split does.
``retries 0`` and no ``option redispatch`` by default: an ALB does not retry a refused
connection on another target, it answers 502; ``Balancer(retries=3, redispatch=True)`` is
HAProxy's own common setup, one of the configurations the write-up does not give.

The HTTP log goes to stdout (``log stdout format raw``), one line per user request with the
termination state ``%ts``; ``parse_log`` reads it. HAProxy runs one thread (``nbthread 1``):
a thread that finds another one writing to the log's file descriptor retries 200 times and
then drops its line (haproxy src/fd.c, ``fd_write_frag_line``). That is the likely reason
one request in 473 went unlogged on 2 loaded cores (CI, 2 December), though 12 deploys with
two threads beside four busy loops dropped none. ``dropped_logs`` reads HAProxy's own count
of lines lost, so a drop is named, not guessed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

HAPROXY = "haproxy"
#: One log line: accept epoch, ms, backend, server, status, termination state, retries, path.
LOG_FORMAT = "%Ts %ms %b %s %ST %ts %rc %Ta %HP"


class HaproxyMissing(Exception):
    """HAProxy is not installed and cannot be installed here (not root)."""


def ensure_haproxy(say: bool = True) -> str:
    """The haproxy binary's path; installs the Debian package when missing and root.

    Prints one line (on stderr) when it installs. Raises ``HaproxyMissing`` (one line) when missing and
    not root, or when the install fails.
    """
    found = shutil.which(HAPROXY) or next(
        (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.access(p, os.X_OK)), None
    )
    if found:
        return found
    if os.geteuid() != 0:
        raise HaproxyMissing(
            "haproxy is not installed and this is not root: apt-get install -y haproxy"
        )
    if say:
        # stderr: stdout may be a --json document.
        print("haproxy missing: installing the Debian package (apt-get install -y haproxy)",
              file=sys.stderr, flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "haproxy"]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
            raise HaproxyMissing(f"{' '.join(cmd)} failed: {tail[0]}")
    found = shutil.which(HAPROXY) or ("/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK)
                                      else None)
    if not found:
        raise HaproxyMissing("haproxy installed but not found on PATH")
    return found


@dataclass(frozen=True, slots=True)
class Balancer:
    """The balancer's health-check numbers (scaled seconds) and its request handling."""

    interval_s: float
    unhealthy_threshold: int
    healthy_threshold: int
    retries: int = 0
    redispatch: bool = False
    #: ``http-reuse`` (server-side connection reuse); None: HAProxy's default (``safe``).
    http_reuse: str | None = None
    #: HAProxy's ``timeout server`` / idle-connection keep time, in scaled seconds.
    server_timeout_s: float = 10.0
    #: The ``balance`` algorithm; ``random(1)``: one target in rotation drawn per request.
    balance: str = "random(1)"


def _ms(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


def render_config(
    balancer: Balancer, frontend_port: int, server_ports: Sequence[int], stats_socket: str
) -> str:
    """The haproxy.cfg text: one frontend on 127.0.0.1, one backend with checked servers."""
    b = balancer
    lines = [
        "global",
        "    log stdout format raw local0",
        # One thread: no other thread holds the log's fd, so no line is dropped (module doc).
        "    nbthread 1",
        f"    stats socket {stats_socket} mode 600 level admin",
        "    maxconn 2000",
        "",
        "defaults",
        "    mode http",
        "    log global",
        f'    log-format "{LOG_FORMAT}"',
        "    timeout connect 1s",
        "    timeout client 10s",
        f"    timeout server {_ms(b.server_timeout_s)}",
        f"    timeout check {_ms(b.interval_s)}",
        f"    retries {b.retries}",
        *(["    option redispatch"] if b.redispatch else []),
        *([f"    http-reuse {b.http_reuse}"] if b.http_reuse else []),
        "",
        "frontend fe",
        f"    bind 127.0.0.1:{frontend_port}",
        "    default_backend fleet",
        "",
        "backend fleet",
        f"    balance {b.balance}",
        "    option httpchk",
        "    http-check send meth GET uri /health",
        "    http-check expect status 200",
        f"    default-server check inter {_ms(b.interval_s)} fall {b.unhealthy_threshold}"
        f" rise {b.healthy_threshold}",
    ]
    lines += [f"    server s{i + 1} 127.0.0.1:{port}" for i, port in enumerate(server_ports)]
    return "\n".join(lines) + "\n"


def _ask(stats_socket: str, command: str, timeout_s: float) -> str:
    """One command over the stats socket, its whole answer (HAProxy closes after it)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        s.connect(stats_socket)
        s.sendall(command.encode() + b"\n")
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def server_states(stats_socket: str, timeout_s: float = 1.0) -> dict[str, str]:
    """``show stat`` over the stats socket: each server's status (``UP``, ``DOWN 1/2``, ...)."""
    text = _ask(stats_socket, "show stat", timeout_s)
    rows = [line.split(",") for line in text.splitlines() if line and not line.startswith("#")]
    header = next((line for line in text.splitlines() if line.startswith("# ")), "")
    cols = header[2:].split(",")
    if "status" not in cols:
        return {}
    px, sv, st = cols.index("pxname"), cols.index("svname"), cols.index("status")
    return {r[sv]: r[st] for r in rows if len(r) > st and r[px] == "fleet"
            and r[sv] not in ("BACKEND", "FRONTEND")}


def dropped_logs(stats_socket: str, timeout_s: float = 1.0) -> int | None:
    """``show info``'s ``DroppedLogs``: log lines HAProxy could not write; None when unread."""
    for line in _ask(stats_socket, "show info", timeout_s).splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "DroppedLogs" and value.strip().isdigit():
            return int(value.strip())
    return None


@dataclass
class LogTally:
    """User requests as HAProxy logged them."""

    served: int = 0
    #: Requests that reached no server, by ``status termination-state`` (e.g. ``503 SC``).
    lost_by_code: dict[str, int] = field(default_factory=dict)
    #: Requests routed to a server that answered them, by server name.
    served_by_server: dict[str, int] = field(default_factory=dict)
    lost_by_server: dict[str, int] = field(default_factory=dict)
    retried: int = 0
    other: int = 0

    @property
    def lost(self) -> int:
        """HAProxy's 502s and 503s with no server answering: the model's 502."""
        return sum(self.lost_by_code.values())

    @property
    def requests(self) -> int:
        """Every user request logged."""
        return self.served + self.lost + self.other


def parse_log(lines: Iterable[str]) -> LogTally:
    """Tally the HTTP log: 200 is served; 502, and 503/504 that HAProxy produced (no server
    answered: ``SC`` connect refused or failed, ``<NOSRV>`` none in rotation, ``SH``/``SD``
    the server closed the connection before answering) reached no server.

    The termination state tells them apart: its first letter is who ended the session
    (``S`` the server side, ``C`` the client, ``-`` a normal end), its second the phase
    (``C`` connect, ``H`` waiting for headers, ``D`` data, ``Q`` queue)."""
    tally = LogTally()
    for line in lines:
        parts = line.split()
        if len(parts) < 9 or parts[2] != "fleet":
            continue
        server, status, term, retries = parts[3], parts[4], parts[5], parts[6]
        if retries.lstrip("+").isdigit() and int(retries.lstrip("+")) > 0:
            tally.retried += 1
        if status == "200" and term.startswith("-"):
            tally.served += 1
            tally.served_by_server[server] = tally.served_by_server.get(server, 0) + 1
        elif (status in ("502", "503", "504") and term[:1] in ("S", "s")) or server == "<NOSRV>":
            key = f"{status} {term}" + (" NOSRV" if server == "<NOSRV>" else "")
            tally.lost_by_code[key] = tally.lost_by_code.get(key, 0) + 1
            tally.lost_by_server[server] = tally.lost_by_server.get(server, 0) + 1
        else:
            tally.other += 1
    return tally
