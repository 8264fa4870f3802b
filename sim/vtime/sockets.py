"""Requests the kernel holds for a server of this process: a listen queue, bytes not yet read.

A request on its way to the twin is, before the server's code has it, a connection in the
listen queue of its port or bytes in a connection's receive queue. Both are read here from
this process's own descriptors (``/proc/self/fd``), whatever server owns them, so the
virtual clock does not move while the kernel holds a request the twin has not read.
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


class PortProbe:
    """Whether the kernel holds anything for this process's server on ``port``."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._kinds: dict[tuple[int, int], str] = {}

    def quiet(self) -> bool:
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
