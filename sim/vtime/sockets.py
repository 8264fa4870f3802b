"""Requests the kernel holds on the way to or from the twin's port: nothing may be in flight.

A request on its way to the twin is, before the server's code has it, a handshake not yet
done, a connection in the listen queue, bytes sent and not yet acknowledged (on loopback a
packet waits in the kernel's backlog until a soft interrupt, which under load runs later,
in ``ksoftirqd``), or bytes in a receive queue; an answer on its way back is the same on
the client's side. All of them are read from the kernel's socket table (``sock_diag``
over netlink, the interface ``ss`` uses: every TCP socket of this network namespace whose
local or remote port is the twin's), so the virtual clock does not move while any is.
Where netlink is refused, this process's own descriptors are read instead
(``/proc/self/fd``: the server's listen queue and unread bytes).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import socket
import stat
import struct
import termios

__all__ = ["PortProbe"]

_LISTEN, _CONNECTION, _OTHER = "listen", "connection", "other"


def _kind(fd: int, port: int) -> str:
    """What the socket ``fd`` is to the server on ``port`` (its listener, a connection, neither)."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        return _OTHER
    try:
        if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
            return _OTHER
        if sock.getsockname()[1] != port:
            return _OTHER
        listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        return _LISTEN if listening else _CONNECTION
    except OSError:
        return _OTHER
    finally:
        sock.detach()  # the descriptor stays the server's


def _unread(fd: int) -> int:
    buf = bytearray(4)
    try:
        fcntl.ioctl(fd, termios.FIONREAD, buf)
    except OSError:
        return 0
    return int(struct.unpack("i", buf)[0])


_NETLINK_SOCK_DIAG, _SOCK_DIAG_BY_FAMILY, _NLMSG_ERROR, _NLMSG_DONE = 4, 20, 2, 3
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_TCP_ESTABLISHED, _TCP_SYN_SENT, _TCP_SYN_RECV, _TCP_LISTEN = 1, 2, 3, 10
_STATES = (1 << _TCP_ESTABLISHED) | (1 << _TCP_SYN_SENT) | (1 << _TCP_SYN_RECV) | (1 << _TCP_LISTEN)
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, seq, pid
_REQUEST = struct.Struct("=BBBxI48x")  # inet_diag_req_v2: family, protocol, ext, states, id


def _in_flight(port: int) -> bool:
    """Whether any TCP socket on ``port`` (either end) has a handshake or bytes in flight."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as nl:
        request = _REQUEST.pack(socket.AF_INET, socket.IPPROTO_TCP, 0, _STATES)
        nl.send(_HEADER.pack(_HEADER.size + len(request), _SOCK_DIAG_BY_FAMILY,
                             _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0) + request)
        busy = False
        while True:
            data = nl.recv(1 << 16)
            offset = 0
            while offset + _HEADER.size <= len(data):
                length, kind = _HEADER.unpack_from(data, offset)[:2]
                if kind == _NLMSG_DONE:
                    return busy
                if kind == _NLMSG_ERROR or length < _HEADER.size:
                    raise OSError("sock_diag refused the dump")
                # inet_diag_msg: family, state, timer, retrans; id (sport, dport big-endian,
                # addresses, interface, cookie: 48 bytes); expires, rqueue, wqueue, ...
                state = data[offset + 17]
                sport, dport = struct.unpack_from("!HH", data, offset + 20)
                rqueue, wqueue = struct.unpack_from("=II", data, offset + 72)
                if port in (sport, dport) and (
                        state in (_TCP_SYN_SENT, _TCP_SYN_RECV)
                        or (state == _TCP_LISTEN and rqueue > 0)
                        or (state == _TCP_ESTABLISHED and (rqueue > 0 or wqueue > 0))):
                    busy = True
                offset += (length + 3) & ~3


class PortProbe:
    """Whether the kernel holds anything in flight on ``port`` (netlink, else this process's)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._kinds: dict[tuple[int, int], str] = {}
        self._netlink = True

    def quiet(self) -> bool:
        """Nothing in flight on the port: no handshake, backlog, unacknowledged or unread byte."""
        if self._netlink:
            try:
                return not _in_flight(self.port)
            except OSError:
                self._netlink = False  # not allowed here: this process's own view from now on
        return self._own_quiet()

    def _own_quiet(self) -> bool:
        """No connection waits to be accepted and no accepted one has bytes unread."""
        try:
            names = os.listdir("/proc/self/fd")
        except OSError:
            return True
        kinds: dict[tuple[int, int], str] = {}
        listeners: list[int] = []
        unread = False
        for name in names:
            fd = int(name)
            try:
                info = os.fstat(fd)
            except OSError:
                continue
            if not stat.S_ISSOCK(info.st_mode):
                continue
            key = (fd, info.st_ino)
            kind = kinds[key] = self._kinds.get(key) or _kind(fd, self.port)
            if kind == _CONNECTION:
                unread = unread or _unread(fd) > 0
            elif kind == _LISTEN:
                listeners.append(fd)
        self._kinds = kinds  # what is no longer open is forgotten
        if unread:
            return False
        if listeners:
            poller = select.poll()
            for fd in listeners:
                poller.register(fd, select.POLLIN)
            with contextlib.suppress(OSError):
                if poller.poll(0):
                    return False
        return True
