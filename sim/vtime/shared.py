"""The file the twin and the preload library share: the virtual clock and the table of timed waits.

The layout is ``vtime.c``'s (``struct vt_shared``): a 64-byte header (magic, version, slot
count, ``now`` in virtual ns, the realtime and monotonic bases, ``gen`` bumped at every
change of the slot table, ``epoch`` bumped at every move of ``now``), then ``SLOTS`` slots
of 48 bytes (tid, seq, deadline ns, pid, wake pipe's descriptor and inode, wake futex word).
Only the twin writes ``now`` and the wake words; the rest of a slot only the thread waiting
in it. The file lives in ``/dev/shm`` where there is one (memory, no disk).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import mmap
import os
import struct
import tempfile
from pathlib import Path

__all__ = ["ENV", "SLOTS", "SharedClock", "Wait"]

#: The environment variable that names the file to the library (``vtime.c`` reads it).
ENV = "TESTBED_VTIME_SHM"
MAGIC = 0x454D495456544254
VERSION = 2
SLOTS = 1024
_HEADER = struct.Struct("<QIIqqqQII8x")  # magic version nslots now rt mono gen epoch pad
_SLOT = struct.Struct("<iIqiiIIQ8x")  # tid seq deadline pid wake_fd wake pad wake_ino
_NOW, _GEN, _EPOCH = 16, 40, 48
SIZE = _HEADER.size + SLOTS * _SLOT.size
_SYS_FUTEX, _FUTEX_WAKE = 202, 1  # x86-64 (the machines the testbed runs on: Linux)
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

Wait = tuple[int, int, int]  # (tid, seq, deadline ns)


_PREFIX = "testbed-vtime-"


def _sweep_orphans(folder: Path) -> None:
    """Remove the files of sessions whose process is gone (killed before it could)."""
    for path in folder.glob(f"{_PREFIX}*-*"):
        pid = path.name.removeprefix(_PREFIX).split("-", 1)[0]
        if pid.isdecimal() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                path.unlink()


def _folder() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def _poke(pid: int, fd: int, ino: int) -> None:
    """One byte into a waiting thread's wake pipe (only if that descriptor is still the pipe)."""
    try:
        handle = os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return  # the process is gone, or the descriptor closed: its wait ends with it
    try:
        if os.fstat(handle).st_ino == ino:
            with contextlib.suppress(BlockingIOError):  # full: it has bytes to wake it already
                os.write(handle, b"w")
    finally:
        os.close(handle)


class SharedClock:
    """One step's shared file: create it, move the clock, read the waits, remove it."""

    def __init__(self, *, realtime_base_ns: int, monotonic_base_ns: int, now_ns: int = 0) -> None:
        folder = _folder()
        _sweep_orphans(Path(folder or tempfile.gettempdir()))
        # The creator's pid in the name: a file whose creator died (SIGKILL) is swept later.
        fd, name = tempfile.mkstemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=folder)
        self.path = Path(name)
        try:
            os.ftruncate(fd, SIZE)
            self._map = mmap.mmap(fd, SIZE)
        finally:
            os.close(fd)
        _HEADER.pack_into(self._map, 0, MAGIC, VERSION, SLOTS, now_ns, realtime_base_ns,
                          monotonic_base_ns, 0, 0, 0)
        self._now = ctypes.c_int64.from_buffer(self._map, _NOW)
        self._epoch = ctypes.c_uint32.from_buffer(self._map, _EPOCH)
        self._gen = ctypes.c_uint64.from_buffer(self._map, _GEN)
        self.realtime_base_ns = realtime_base_ns
        self.monotonic_base_ns = monotonic_base_ns

    @property
    def now_ns(self) -> int:
        """The virtual clock the step's processes read (ns since the world's zero)."""
        return int(self._now.value)

    def set_now(self, now_ns: int) -> None:
        """Set the clock (one aligned 8-byte store), waking nobody (``move_to`` does)."""
        self._now.value = now_ns
        self._epoch.value = (self._epoch.value + 1) & 0xFFFFFFFF

    def move_to(self, now_ns: int) -> None:
        """Set the clock, then wake the waits it has reached."""
        self.set_now(now_ns)
        self.wake_due()

    @property
    def generation(self) -> int:
        """Bumped by the library at every registration and release of a wait."""
        return int(self._gen.value)

    def waits(self) -> tuple[Wait, ...]:
        """Every registered wait: (tid, seq, deadline ns), in slot order."""
        return tuple((tid, seq, deadline) for tid, seq, deadline, *_ in self._slots() if tid > 0)

    def _slots(self) -> list[tuple[int, ...]]:
        return list(_SLOT.iter_unpack(self._map[_HEADER.size:]))

    def wake_due(self) -> int:
        """Wake every registered wait whose deadline the clock has reached; how many."""
        now = self.now_ns
        woken = 0
        for index, (tid, _seq, deadline, pid, wake_fd, _wake, _pad, ino) in enumerate(self._slots()):
            if tid <= 0 or deadline > now:
                continue
            woken += 1
            if wake_fd < 0:
                word = ctypes.c_uint32.from_buffer(self._map, _HEADER.size + index * _SLOT.size + 24)
                word.value = (word.value + 1) & 0xFFFFFFFF
                _libc.syscall(_SYS_FUTEX, ctypes.c_void_p(ctypes.addressof(word)), _FUTEX_WAKE,
                              0x7FFFFFFF, None, None, 0)
                del word
            else:
                _poke(pid, wake_fd, ino)
        return woken

    def environment(self) -> dict[str, str]:
        """What a process needs to find this file."""
        return {ENV: str(self.path)}

    def close(self) -> None:
        """Remove the file (processes that still map it keep their view of it)."""
        for view in ("_now", "_epoch", "_gen"):
            self.__dict__.pop(view, None)
        with contextlib.suppress(BufferError):  # a ctypes view still holds it: it goes with the object
            self._map.close()
        self.path.unlink(missing_ok=True)
