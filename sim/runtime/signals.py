"""Signals for the command line: Ctrl-C and SIGTERM end a command, whatever a check does.

Both become ``checks.drive.Interrupt`` subclasses, which the check driver lets through,
while a ``KeyboardInterrupt`` a user's check raises itself is that check's ``error``.
``held`` lets a short final write finish before the signal ends the command;
``reraise_pending`` raises again a signal whose exception a library swallowed;
``die_with`` ends a pool's worker when the process that started it is gone, even by
SIGKILL, which that process cannot catch; ``start_forkserver`` starts a pool's server
with Ctrl-C ignored from its first instruction; and ``under_alarm`` is the wall-clock limit on
one call of a user's check (``sim.checkload.budget``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from platform_testbed.checks.drive import Interrupt

_R = TypeVar("_R")
#: After the limit, the alarm repeats this often, so a check that catches one goes on
#: being interrupted (one that catches every one in a loop cannot be stopped in-process).
_REPEAT_S = 0.05
#: Whether an alarm may interrupt now: only while ``under_alarm`` runs its call (a list of
#: at most one, so the handler reads it without ``global``).
_armed: list[bool] = []

#: A worker's exit status when it ends because its parent is gone (nobody reads it: the
#: forkserver reaps it; it only tells such an end apart in a debugger).
EXIT_ORPHANED = 70


#: The signal whose handler ran last during this command (``exit_on_signals`` and
#: ``restore_signals`` clear it).
#: Raising is not enough: Python ignores an exception raised inside a gc callback (it prints
#: "Exception ignored in ..." and goes on), and hypothesis installs one, so a handler that
#: runs while it does raises into nothing; hypothesis also wraps an exception raised
#: while it draws into an error of its own. A long loop that may lose one asks here.
#: A list of at most one, so the handlers change it without ``global``.
_pending: list[int] = []


class Terminated(Interrupt):
    """SIGTERM arrived: end the command as Ctrl-C would, with the shell's status 143."""


class HungUp(Terminated):
    """SIGHUP arrived (the terminal closed): ended as SIGTERM is, with the shell's status 129."""


class Interrupted(Interrupt, KeyboardInterrupt):
    """The user's Ctrl-C: unlike a KeyboardInterrupt a check raises, it ends the command."""


def exit_on_signals() -> Any:
    """SIGTERM -> ``Terminated``, SIGINT -> ``Interrupted`` (main thread only).

    Both are ``checks.drive.Interrupt``, which the check driver lets through, so a signal
    arriving while a check runs still ends the command. Each also records its signal for
    ``reraise_pending``, and the "Exception ignored" report of one lost in a gc callback is
    silenced. Returns the handlers replaced (and the unraisable hook).
    """
    if threading.current_thread() is not threading.main_thread():
        return None

    _pending.clear()  # a new command: a signal an earlier one took is not this one's

    def terminated(signum: int, frame: object) -> None:
        _pending[:] = [signal.SIGTERM]
        raise Terminated

    def interrupted(signum: int, frame: object) -> None:
        _pending[:] = [signal.SIGINT]
        raise Interrupted

    def hung_up(signum: int, frame: object) -> None:
        _pending[:] = [signal.SIGHUP]
        raise HungUp

    previous_hook = sys.unraisablehook

    def unraisable(info: Any) -> None:
        # Our own exception, lost in a gc callback: recorded in _pending, which ends the
        # command where it next asks; its "Exception ignored" traceback is noise.
        if isinstance(info.exc_value, Interrupt) and _pending:
            return
        previous_hook(info)

    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted)
    sys.unraisablehook = unraisable
    # Left alone when ignored (nohup): a closed terminal must not end that command.
    previous_hup = signal.getsignal(signal.SIGHUP)
    if previous_hup is signal.SIG_DFL:
        signal.signal(signal.SIGHUP, hung_up)
    return signal.signal(signal.SIGTERM, terminated), previous_int, previous_hook, previous_hup


def restore_signals(previous: Any) -> None:
    """Put back the handlers ``exit_on_signals`` replaced."""
    _pending.clear()
    if previous is not None:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
        sys.unraisablehook = previous[2]
        signal.signal(signal.SIGHUP, previous[3])


def reraise_pending() -> None:
    """Raise ``Interrupted`` or ``Terminated`` again if a signal came during this command.

    For code that runs a library which may lose the handler's exception (see ``_pending``):
    it calls this after the library returns or raises, and between its own steps. The
    signal is not cleared (a library may swallow the raise too); ``exit_on_signals`` and
    ``restore_signals`` clear it, so it lasts exactly the command it ends. Without those
    handlers (a library call) nothing is recorded and this does nothing.
    """
    if _pending == [signal.SIGHUP]:
        raise HungUp
    if _pending == [signal.SIGTERM]:
        raise Terminated
    if _pending == [signal.SIGINT]:
        raise Interrupted


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM while a short step finishes; then deliver the first one.

    For the final write of an output: the rows a user waited for are written whole, and
    only then does the command end as the signal asks (130 or 143). A second signal while
    held is delivered at once, abandoning the step (a write keeps the previous file).
    In a thread other than the main one (no handlers there) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}
    arrived: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        if previous[signum] == signal.SIG_IGN:
            return
        if arrived:
            _deliver(signum, frame, previous[signum])
        arrived.append(signum)

    with _in_place(hold, previous):
        yield
    if arrived:
        # The handler in place again (ours: Interrupted or Terminated) takes it from here;
        # raise_signal runs it before returning, so the step's caller sees the exception.
        signal.raise_signal(arrived[0])


@contextlib.contextmanager
def ending_on_signals(stop: threading.Event, *, abandon_at: int = 3) -> Iterator[None]:
    """Ctrl-C and SIGTERM set ``stop`` instead of raising, for a loop that ends itself and
    then has a final step to finish (``serve``'s report and recording).

    The first signal asks for the end. A second one, while the final step runs, is the same
    request again: ``timeout`` sends its signal to the command and to the command's process
    group, so a command under it gets two at once, and a raise then lost the report. The
    ``abandon_at``-th (a user who means it) does what the handler this replaced would:
    Ctrl-C 130, SIGTERM 143, the step abandoned. In a thread other than the main one (no
    handlers there) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}
    seen: list[int] = []

    def end(signum: int, frame: Any) -> None:
        if previous[signum] == signal.SIG_IGN:
            return  # ignored before (an `&` job of a script ignores SIGINT): still ignored
        seen.append(signum)
        stop.set()
        if len(seen) >= abandon_at:
            _deliver(signum, frame, previous[signum])

    with _in_place(end, previous):
        yield


@contextlib.contextmanager
def _in_place(handler: Callable[[int, Any], None], previous: dict[int, Any]) -> Iterator[None]:
    """``handler`` for Ctrl-C and SIGTERM during the block; ``previous`` is filled with the
    handlers it replaced (before it is installed: it reads them) and they are put back."""
    kinds = (signal.SIGINT, signal.SIGTERM)
    previous.update({kind: signal.getsignal(kind) for kind in kinds})
    for kind in kinds:
        signal.signal(kind, handler)
    try:
        yield
    finally:
        for signum, replaced in previous.items():
            signal.signal(signum, replaced)


def _deliver(signum: int, frame: Any, handler: Any) -> None:
    """Do now what ``handler`` (the one ``held`` replaced) would have done with the signal."""
    if callable(handler):
        handler(signum, frame)
    elif signum == signal.SIGINT:
        raise KeyboardInterrupt
    else:
        # SIG_DFL would end the process where it stands; raising lets cleanup run first.
        raise SystemExit(128 + signum)


class Readable(Protocol):
    """The read end of a pipe (``multiprocessing.connection.Connection``)."""

    def recv_bytes(self) -> bytes:
        """Block until a message comes or the other end is closed (EOFError)."""


def die_with(parent: Readable) -> None:
    """End this process at once when every holder of the pipe's write end is gone.

    A pool's parent keeps the write end and never writes; when it ends, however it ends
    (SIGKILL included), the kernel closes it, and this thread sees end of file. Without
    this an orphaned worker blocks for ever writing its result to a pipe nobody reads,
    and keeps the forkserver, the resource tracker and the caller's stdout and stderr
    open with it. (``PR_SET_PDEATHSIG`` cannot say it: a forkserver worker's parent is
    the server, which lives as long as its workers do.)
    """

    def watch() -> None:
        with contextlib.suppress(EOFError, OSError):
            while True:
                parent.recv_bytes()
        os._exit(EXIT_ORPHANED)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def start_forkserver() -> None:
    """Start multiprocessing's forkserver (and its resource tracker) now, ignoring SIGINT.

    Ctrl-C goes to the whole process group. A forkserver ignores SIGINT only once it has
    imported its preload modules (the simulator: a few hundred ms), so a Ctrl-C in that
    time printed its ``KeyboardInterrupt`` traceback (1 in 3 tries in a 2-worker sweep).
    An ignored signal stays ignored across fork and exec, so the server is started here,
    from the main thread, with SIGINT ignored; it is blocked meanwhile, so a Ctrl-C meant
    for this process comes when the handler is back, not lost. The server and tracker
    keep it blocked too (inherited; they ignore it anyway, as the pool's workers do).
    Call it after ``set_forkserver_preload``. Elsewhere than the main thread, or without
    ``pthread_sigmask``, it does nothing: the pool starts the server as before.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "pthread_sigmask"
    ):
        return
    from multiprocessing import forkserver, resource_tracker  # noqa: PLC0415 -- only for a pool

    # The tracker first, outside the window: its own start blocks SIGINT and then
    # *unblocks* it, which inside the window would hand a pending Ctrl-C to SIG_IGN (lost:
    # the sweep ran to its end, 1 in 4 tries under load). Once running, it is not restarted.
    resource_tracker.ensure_running()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, handler if handler is not None else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


class Overtime(BaseException):
    """The call ``under_alarm`` ran took longer than its limit (raised by the SIGALRM handler)."""


def _overtime(signum: int, frame: Any) -> None:
    if _armed:
        raise Overtime


def alarm_usable() -> bool:
    """Whether ``under_alarm`` can limit a call here; installs its SIGALRM handler if so.

    Why a signal and not a worker thread: a thread that runs over cannot be stopped, so it
    would go on burning a core (and holding the GIL) beside every later run; SIGALRM
    interrupts the check itself, in ``time.sleep`` as in a busy loop. Not usable in a
    thread other than the main one (a Dask worker), on a platform without setitimer, or
    in a program with a SIGALRM handler of its own. The limit only ever turns a run into
    ``error``; it never changes a verdict a check gives in time, so runs stay
    deterministic for every check that answers well within it.
    """
    if not hasattr(signal, "setitimer"):
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    current = signal.getsignal(signal.SIGALRM)
    if current == _overtime:
        return True
    if current in (signal.SIG_DFL, None):
        signal.signal(signal.SIGALRM, _overtime)
        return True
    return False


def under_alarm(timeout_s: float, call: Callable[..., _R], *args: Any) -> _R:
    """``call(*args)``, raising ``Overtime`` in it after ``timeout_s`` wall-clock seconds.

    Call ``alarm_usable()`` first (in this thread): it installs the handler.
    """
    _armed[:] = [True]
    signal.setitimer(signal.ITIMER_REAL, timeout_s, _REPEAT_S)
    try:
        return call(*args)
    finally:
        _armed.clear()  # first: an alarm from here on is ignored
        signal.setitimer(signal.ITIMER_REAL, 0)
