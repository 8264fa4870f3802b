"""One running check command: write a request line, read an answer line, within a deadline."""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from platform_testbed.sim.checkcmd.wire import shorten

#: An answer is a few hundred bytes; a child streaming more without a newline is broken.
MAX_ANSWER_BYTES = 1 << 20
#: Stderr kept per child (the newest bytes) and lines of it quoted in an error.
STDERR_KEEP_BYTES = 64 * 1024
STDERR_TAIL_LINES = 3
#: Chunks of stderr read at one go (64 KiB each): the rest waits for the next select.
_STDERR_READS = 16


class ExternalCheckError(RuntimeError):
    """The check's command hung, died, or answered something that is not a protocol answer."""


def _parents() -> Iterator[tuple[int, int]]:
    """Every live process as (pid, parent pid), from ``/proc`` (none elsewhere)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
                ppid = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone since listed, or not readable
        yield int(name), ppid


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, children first (from ``/proc``; none elsewhere).

    Read before the kill: a grandchild that left the group with ``setsid`` is outside
    ``killpg``'s reach, but still below the child while the child lives.
    """
    below: dict[int, list[int]] = {}
    for child, ppid in _parents():
        below.setdefault(ppid, []).append(child)
    found, queue = [], list(below.get(pid, ()))
    while queue:
        child = queue.pop(0)
        found.append(child)
        queue += below.get(child, ())
    return found


#: The variable every check process starts with, naming it: a process it left behind
#: whose own parent has exited is adopted by this one (a subreaper) and known by it.
MARK_ENV = "TESTBED_CHECK_PROCESS"
#: prctl's option (linux/prctl.h): orphans below this process are reparented to it, not
#: to init, so the ones a check command left are still ours to find and kill.
PR_SET_CHILD_SUBREAPER = 36
_marks = itertools.count(1)
#: Check processes running now: this process is a subreaper while there is one.
_running: list[int] = [0]


def _subreaper(on: bool) -> bool:
    """Make this process a child subreaper, or stop being one (Linux; elsewhere False)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def adopted(mark: str) -> list[int]:
    """This process's children that carry ``mark``: left behind by a check command whose
    process between them has exited (a double fork, with or without ``setsid``)."""
    me, found, wanted = os.getpid(), [], f"{MARK_ENV}={mark}".encode()
    for child, ppid in _parents():
        if ppid != me:
            continue
        try:
            with open(f"/proc/{child}/environ", "rb") as handle:
                if wanted in handle.read().split(b"\0"):
                    found.append(child)
        except OSError:
            continue  # gone, a zombie (no environ), or not ours to read
    return found


def _parent_and_state(pid: int) -> tuple[int, str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0].decode()


def _reap(orphans: Sequence[int], others: Sequence[int]) -> None:
    """Reap what came to this process: the adopted ``orphans`` (killed, ours: wait for
    each), and any of ``others`` (killed while below the child) that the child's death
    handed to us as a zombie. Only a zombie whose parent is us is waited for: a pid the
    child had reaped itself may since belong to another process."""
    me = os.getpid()
    for pid in orphans:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    deadline = time.monotonic() + 0.5  # SIGKILL takes effect within microseconds
    left = set(others) - set(orphans)
    while left and time.monotonic() < deadline:
        for pid in sorted(left):
            seen = _parent_and_state(pid)
            if seen is None or seen[0] != me:
                left.discard(pid)  # gone, or reaped by the child, or someone else's
            elif seen[1] == "Z":
                # A multi-threaded process (node) shows Z while its other threads still
                # exit, and waitpid cannot reap it yet (it answers 0): try again.
                try:
                    if os.waitpid(pid, os.WNOHANG)[0] == pid:
                        left.discard(pid)
                except ChildProcessError:
                    left.discard(pid)
        if left:
            time.sleep(0.001)


#: Signals whose Python handlers raise (the driver's limit, Ctrl-C, SIGTERM, SIGHUP): held
#: while a child is killed, and delivered as soon as it is done.
_HELD = frozenset({signal.SIGALRM, signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


@contextlib.contextmanager
def _signals_held(mask: bool = True) -> Iterator[None]:
    """Hold ``_HELD`` for the block: a kill cut halfway leaves processes.

    The driver's limit (``sim.runtime.signals.under_alarm``) raises every 50 ms until the
    cut call returns, and on a loaded machine the kill (``/proc`` scans, reaping) takes
    longer than that. In the main thread each handler is swapped for one that only notes
    the signal, and each noted one is raised again right after the block, as it came: a
    mask alone is not enough, since the kernel hands a process's signal to any thread that
    does not block it (a progress bar's, a timer's) and Python then runs the handler in
    the main thread all the same. The mask stays, for a signal with no Python handler
    (``mask=False``: none, around a fork whose child would inherit it).
    """
    arrived: list[int] = []
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for kind in _HELD:
            handler = signal.getsignal(kind)
            if handler not in (signal.SIG_IGN, None):
                previous[kind] = handler
                signal.signal(kind, lambda signum, frame: arrived.append(signum))
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD if mask else ())
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # what was pending is noted now
        for number, replaced in previous.items():
            signal.signal(number, replaced)
        for came in dict.fromkeys(arrived):
            signal.raise_signal(came)


def _kill(proc: subprocess.Popen[bytes], seen: list[int], mark: str = "") -> None:
    """Kill the child, everything in its session and everything below it; reap the child.

    ``seen``: processes found below the child earlier (``Child.close`` looks before it lets
    the child exit: an orphan is no longer below it). ``mark``: the child's ``MARK_ENV``,
    by which the orphans this process adopted from it are found. Signals that raise wait
    until it is done (``_signals_held``).
    """
    with _signals_held():
        _kill_now(proc, seen, mark)


def _kill_now(proc: subprocess.Popen[bytes], seen: list[int], mark: str) -> None:
    below = [*seen, *(descendants(proc.pid) if proc.poll() is None else [])]
    orphans = adopted(mark) if mark else []
    below += [p for o in orphans for p in descendants(o)] + orphans
    # First those below (some may have called setsid: a group of their own), while the
    # child lives: an unreaped pid cannot be reused by another process in the meantime.
    for pid in below:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    # The child leads its own process group, so the group outlives it while any of its own
    # children do, and its id is not reused until then: killing the group is safe.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    if mark:
        # Whatever the child's death orphaned came to us: kill it too, then reap them all.
        later = adopted(mark)
        for pid in [p for o in later for p in descendants(o)] + later:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap([*orphans, *later], below)
        _running[0] -= 1
        if _running[0] == 0:
            _subreaper(False)


class Child:
    """One running command: write a line, read a line, within a deadline; keep stderr's tail."""

    def __init__(self, argv: Sequence[str]) -> None:
        # A subreaper before the child exists, so nothing it leaves can reach init first.
        if _running[0] == 0:
            _subreaper(True)
        _running[0] += 1
        self.mark = f"{os.getpid()}.{next(_marks)}"
        started: list[subprocess.Popen[bytes]] = []
        try:
            # A signal once raised inside Popen after its fork: the exception left the child
            # running and known to nobody. It is noted instead (no mask: the child would
            # inherit it), and raised once the child is ours to kill.
            with _signals_held(mask=False):
                started.append(subprocess.Popen(
                    list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, bufsize=0, start_new_session=True,
                    env={**os.environ, MARK_ENV: self.mark},
                ))
        except BaseException:
            if started:
                _kill(started[0], [], self.mark)  # counts this child out of _running
            else:
                _running[0] -= 1
                if _running[0] == 0:
                    _subreaper(False)
            raise
        self.proc = started[0]
        assert self.proc.stdin
        assert self.proc.stdout
        assert self.proc.stderr
        self.stdin, self.stdout, self.stderr = (
            self.proc.stdin.fileno(), self.proc.stdout.fileno(), self.proc.stderr.fileno()
        )
        for fd in (self.stdin, self.stdout, self.stderr):
            os.set_blocking(fd, False)
        self.err = bytearray()
        self.out = bytearray()
        self.stderr_open = True
        # Whatever happens to the CommandCheck (an exception, no close, interpreter exit),
        # the child is killed and reaped.
        self.below: list[int] = []
        self.finalizer = weakref.finalize(self, _kill, self.proc, self.below, self.mark)

    def _read_stderr(self) -> None:
        # At most _STDERR_READS chunks a call: a child that writes stderr as fast as it is
        # read must not keep the reader here past the answer's deadline.
        for _ in range(_STDERR_READS):
            if not self.stderr_open:
                return
            try:
                chunk = os.read(self.stderr, 65536)
            except BlockingIOError:
                return
            if not chunk:
                self.stderr_open = False
                return
            self.err += chunk
            del self.err[:-STDERR_KEEP_BYTES]

    def stderr_tail(self) -> str:
        """The last lines the child wrote on stderr, joined into one line."""
        self._read_stderr()
        lines = [" ".join(line.split()) for line in self.err.decode("utf-8", "replace").splitlines()]
        lines = [shorten(line, 200) for line in lines if line][-STDERR_TAIL_LINES:]
        return " | ".join(lines)

    def _exit_text(self) -> str:
        try:
            code = self.proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            return "closed its stdout"
        return f"exited with status {code}" if code >= 0 else f"was killed by signal {-code}"

    def exchange(self, line: str, timeout_s: float) -> str:
        """Send one request line and return the one answer line (without the newline).

        The n-th line the child writes answers the n-th request, whenever it arrives: a
        line written before its request was sent (a banner at start, a second line for
        one request) is the answer to the next request, not an error whose wording
        depends on which of the two came first. So a run's answers, and the reason it
        fails, depend on what the child writes, never on the timing of the pipes. While a
        whole line waits here unread, the child's stdout is not read further: a child that
        writes without end blocks on its own pipe (and then times out), using no memory.
        """
        self._read_stderr()
        pending = memoryview((line + "\n").encode())
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(self.stdin, selectors.EVENT_WRITE)
            if self.stderr_open:
                selector.register(self.stderr, selectors.EVENT_READ)
            reading = False
            while True:
                if b"\n" in self.out:
                    if reading:
                        selector.unregister(self.stdout)
                        reading = False
                    if not pending:
                        return self._take_line()
                elif not reading:
                    selector.register(self.stdout, selectors.EVENT_READ)
                    reading = True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ExternalCheckError(f"gave no answer within {timeout_s:g} s")
                for key, _ in selector.select(remaining):
                    if key.fd == self.stderr:
                        self._read_stderr()
                        if not self.stderr_open:
                            selector.unregister(self.stderr)
                    elif key.fd == self.stdin:
                        try:
                            written = os.write(self.stdin, pending)
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            # Said as an end before answering, as a closed stdout is: which
                            # of the two the pipes show first is timing.
                            raise ExternalCheckError(f"{self._exit_text()} before answering") from None
                        pending = pending[written:]
                        if not pending:
                            selector.unregister(self.stdin)
                    else:
                        self._read_stdout()

    def _read_stdout(self) -> None:
        """Read what the child's stdout holds now; an end there is the run's error."""
        try:
            chunk = os.read(self.stdout, 65536)
        except BlockingIOError:
            return
        if not chunk:
            if self.out:
                raise ExternalCheckError(
                    f"{self._exit_text()} in the middle of an answer: "
                    f"{shorten(self.out.decode('utf-8', 'replace'))}"
                )
            raise ExternalCheckError(f"{self._exit_text()} before answering")
        self.out += chunk
        if b"\n" not in self.out and len(self.out) > MAX_ANSWER_BYTES:
            raise ExternalCheckError(f"wrote over {MAX_ANSWER_BYTES} bytes with no newline")

    def _take_line(self) -> str:
        """The first whole line read, as the answer: UTF-8 and not blank."""
        end = self.out.find(b"\n")
        raw = bytes(self.out[:end])
        del self.out[: end + 1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ExternalCheckError(f"answered bytes that are not UTF-8: {raw[:40]!r}") from None
        if not text.strip():
            raise ExternalCheckError("answered an empty line")
        return text

    def close(self, grace_s: float) -> None:
        """End the child: EOF on its stdin, a moment to exit, then kill what is left."""
        end_all([self], grace_s)

    def _hang_up(self) -> None:
        """Note what runs below the child (an orphan is no longer below it once it exits),
        then close its stdin: a polite child exits at that end of file."""
        if self.proc.poll() is None:
            self.below[:] = descendants(self.proc.pid)
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()


def end_all(children: Sequence[Child], grace_s: float) -> None:
    """End every child: EOF to each, ``grace_s`` for them all together, then kill each
    with everything it started, however it answers SIGTERM or end of file.

    Ctrl-C, SIGTERM and SIGHUP wait until it is done (``_signals_held``): ``timeout`` sends
    its SIGTERM twice at once (to the command and to its group), and a second one during
    the grace, with the command's handlers gone, ended this process by the default action
    before the kill, leaving a child that ignores SIGTERM and end of file running for good.
    The grace is shared, so closing many checks at the end of a command costs it once.
    """
    live = [child for child in children if child.finalizer.alive]
    if not live:
        return
    with _signals_held():
        for child in live:
            child._hang_up()
        deadline = time.monotonic() + grace_s
        for child in live:
            left = deadline - time.monotonic()
            if left > 0:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.proc.wait(timeout=left)
        for child in live:
            child.finalizer()  # kills the group even when the child left something behind
