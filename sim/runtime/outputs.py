"""Output paths: judged before any work, written whole or not at all.

Every file a command writes (``--out``, ``--record``, ``--details``, ``--timeline``,
``--heatmap``) is checked by ``check_output`` before the first world runs, so a bad path
costs nothing, and written by ``write_atomic``: a temporary file in the same folder, then a
rename, so a reader never sees half a file, an old file survives a failure or Ctrl-C, and
no temporary file is left behind. Figures go the same way (``save_figure``), and so do a
hunt's found worlds: nothing writes straight onto a path a user named. A Ctrl-C or SIGTERM
during that write waits for it to end (the rows a user waited for are kept), then ends the
command; a second one abandons the write, which keeps the previous file.

A directory, a missing folder, a folder we cannot write in are bad input. A device node
(``/dev/null``) or a symbolic link is refused unless ``--force``: a rename would replace
the node or the link itself (as root, ``--record /dev/null`` would replace the system's
``/dev/null``). With ``--force`` a device is written in place, and a link is followed to
the file it names, which is then replaced atomically.

A write that fails anyway (a full disk, a read-only mount, stdout on ``/dev/full``) is
``OutputFailed``: a ``BadInput``, so one line naming what could not be written and exit 2,
the previous file kept. A reader that went away (``BrokenPipeError``) is let through: the
command line ends that with 141. The API, for every writer of a command's output:

* ``write_atomic`` / ``write_atomic_bytes`` / ``replacing`` / ``save_figure``: a file;
* ``emit(text)``: a line on stdout, flushed (``serve``'s lines, printed while it runs);
* ``writing(what)``: any other write, its ``OSError`` named as ``what``; ``guarded(handle,
  what)``: a handle written over a long run (a sweep's rows) whose writes do the same;
* ``command_output()``: a whole command (``sim.cli.parser.main``): stdout is guarded for
  its run and flushed at its end, and an ``OSError`` that escapes anyway ends as one line.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, AnyStr, Protocol, TextIO, cast

from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.runtime.signals import held

#: What ``OutputFailed`` names when standard output failed.
STDOUT = "stdout"


class OutputFailed(BadInput):
    """A write of the command's output failed (a full disk, a read-only folder): exit 2."""

    def __init__(self, what: object, error: OSError) -> None:
        super().__init__(f"cannot write {_reason(error, what)}")
        #: What could not be written: a path, or ``STDOUT``.
        self.what = what
        self._error = error

    def __reduce__(self) -> tuple[Any, ...]:
        # As it was made (a pool's worker hands it back pickled), not from its message.
        return (type(self), (self.what, self._error))


def _reason(error: OSError, what: object) -> str:
    """``error`` on one line: ``what: No space left on device (ENOSPC)``."""
    reason = " ".join((error.strerror or str(error) or type(error).__name__).split())
    code = errno.errorcode.get(error.errno or 0)
    return (f"{what}: " if what is not None else "") + reason + (f" ({code})" if code else "")


@contextlib.contextmanager
def writing(what: object) -> Iterator[None]:
    """An ``OSError`` in the block becomes ``OutputFailed`` naming ``what`` (a closed pipe stays
    ``BrokenPipeError``: the command line's 141)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as error:
        raise OutputFailed(what, error) from None


def emit(text: str, *, end: str = "\n", stream: TextIO | None = None) -> None:
    """Write ``text`` and ``end`` to ``stream`` (default: stdout) and flush it, through ``writing``."""
    out = sys.stdout if stream is None else stream
    with writing(STDOUT if out is sys.stdout else getattr(out, "name", "a stream")):
        out.write(text + end)
        out.flush()


class Guarded:
    """A file or stream whose failed write or flush is ``OutputFailed`` naming ``what``.

    Every other attribute is the wrapped one's (``fileno``, ``isatty``, ``encoding``), so
    print, json.dump and rich write through it unchanged.
    """

    def __init__(self, stream: IO[Any] | None, what: object) -> None:
        self._stream = stream
        self._what = what

    def write(self, data: Any) -> int:
        """Write ``data`` (text or bytes, as the stream takes)."""
        with writing(self._what):
            return self._open().write(data)

    def writelines(self, lines: Iterable[Any]) -> None:
        """Write each of ``lines``."""
        with writing(self._what):
            self._open().writelines(lines)

    def flush(self) -> None:
        """Flush what the stream buffers."""
        with writing(self._what):
            self._open().flush()

    def _open(self) -> IO[Any]:
        # None: a stream that was closed before Python started (`testbed list >&-`), which
        # Python gives as sys.stdout = None; said as the system would say it.
        if self._stream is None:
            raise OSError(errno.EBADF, f"{self._what} is closed")
        return self._stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._open(), name)


def guarded(handle: IO[AnyStr], what: object) -> IO[AnyStr]:
    """``handle`` as a ``Guarded`` (typed as the handle it wraps)."""
    return cast("IO[AnyStr]", Guarded(handle, what))


@contextlib.contextmanager
def command_output() -> Iterator[None]:
    """Run a command with its stdout guarded: every way its output can fail ends as one line.

    During the block, a write to stdout that fails is ``OutputFailed`` ("cannot write
    stdout: No space left on device (ENOSPC)"); at its end stdout is flushed the same way,
    so no buffered line is lost at exit. An ``OSError`` that escapes a writer not routed
    through this module ends as ``OutputFailed`` too, naming its file when it has one. Once
    stdout has failed, what it still buffers is dropped (its descriptor points at
    ``/dev/null``), so Python's own flush at exit prints no "Exception ignored" traceback.
    """
    real = sys.stdout
    sys.stdout = Guarded(real, STDOUT)
    try:
        try:
            yield
        finally:
            sys.stdout = real
        if real is not None:
            with writing(STDOUT):
                real.flush()
    except BrokenPipeError:
        raise
    except OutputFailed as failed:
        _settle(real, failed.what == STDOUT)
        raise
    except OSError as error:
        _settle(real, False)
        # Not known to be a write (a writer elsewhere, or a read): said as the system says it.
        raise BadInput(_reason(error, error.filename)) from None


def _settle(stream: TextIO | None, failed: bool) -> None:
    """Flush what ``stream`` holds, or drop it if it cannot be written (``failed``: it could
    not): Python's own flush at exit then has nothing to fail on."""
    if stream is None:
        return
    if not failed:
        try:
            stream.flush()
            return
        except (OSError, ValueError):
            pass
    _drop(stream)


def _drop(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at ``/dev/null``: what it buffers goes nowhere, quietly.

    (A stream with no descriptor, as under pytest's capture, is left as it is.)
    """
    with contextlib.suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def check_output(option: str, path: Path, force: bool = False) -> Path:
    """The path to write for ``option``, or BadInput naming the option, the path and the rule.

    Returns where the bytes will go: ``path`` itself, or with ``--force`` the file a
    symbolic link names.
    """
    where = f"{option} {path}"
    target = path
    if path.is_symlink():
        if not force:
            raise BadInput(f"{where}: is a symlink (to {os.readlink(path)}); "
                           "give --force to write through it")
        target = path.resolve()
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise BadInput(f"{where}: cannot write ({error.strerror})") from None
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise BadInput(f"{where}: is a directory; give a file name")
        if not stat.S_ISREG(mode) and not force:
            raise BadInput(f"{where}: is a device or special file, not a regular file; "
                           "give --force to write to it")
        if not stat.S_ISREG(mode):
            if not os.access(target, os.W_OK):
                raise BadInput(f"{where}: cannot write (permission denied)")
            return target
    folder = target.resolve().parent
    if not folder.is_dir():
        raise BadInput(f"{where}: cannot write: no such directory {path.parent}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput(f"{where}: cannot write in folder {folder} (permission denied)")
    return target


def is_special(path: Path) -> bool:
    """True for an existing path that is not a regular file (a device, a pipe)."""
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def write_atomic(
    path: Path, write: Callable[[IO[str]], None], *, newline: str | None = None
) -> None:
    """Write text to ``path`` whole or not at all (a device, allowed by --force: in place).

    The file is made with the umask's permissions, as ``open`` would make it. The first
    Ctrl-C or SIGTERM while writing is held until the file is in place (``sim.runtime.signals.held``).
    """
    # backslashreplace: a lone surrogate from a user's check is written as \ud800, not raised.
    _write(path, write, {"mode": "w", "encoding": "utf-8", "errors": "backslashreplace",
                         "newline": newline})


def write_atomic_bytes(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """``write_atomic`` for bytes: ``write`` is given a binary file."""
    _write(path, write, {"mode": "wb"})


class Drawable(Protocol):
    """A figure (matplotlib's ``Figure``), named without importing matplotlib."""

    def savefig(self, fname: Any, **kwargs: Any) -> None:
        """Render the figure to a file name or a file object."""


def save_figure(figure: Drawable, path: Path, **options: Any) -> None:
    """``figure.savefig(path, **options)``, written whole or not at all (``write_atomic``).

    The format is the one savefig infers from ``path``'s suffix: it is given explicitly,
    because savefig renders into a temporary file (or a device) whose name says nothing.
    """
    kind = path.suffix.lstrip(".").lower()
    # No clock in a figure: matplotlib dates PDF, SVG, PS and EPS files with today unless
    # SOURCE_DATE_EPOCH says which date (then that one, honoured as matplotlib reads it).
    dated = bool(os.environ.get("SOURCE_DATE_EPOCH"))
    if kind in _DATE_FIELD and not dated:
        options["metadata"] = {**(options.get("metadata") or {}), _DATE_FIELD[kind]: None}

    def render(handle: IO[bytes]) -> None:
        from matplotlib import rc_context  # noqa: PLC0415 -- a figure exists: matplotlib is loaded

        with rc_context({"svg.hashsalt": "testbed"}):  # SVG ids are salted at random otherwise
            if kind in ("ps", "eps") and not dated:  # the PS backend takes no date metadata
                buffer = io.BytesIO()
                figure.savefig(buffer, format=kind, **options)
                handle.write(_PS_DATE.sub(b"", buffer.getvalue(), count=1))
            else:
                figure.savefig(handle, format=kind, **options)

    write_atomic_bytes(path, render)


#: The metadata field each format dates the file with (None removes it).
_DATE_FIELD = {"pdf": "CreationDate", "svg": "Date"}
#: PostScript's date comment, written from the clock and time zone unless SOURCE_DATE_EPOCH.
_PS_DATE = re.compile(rb"^%%CreationDate: [^\n]*\n", re.MULTILINE)


def _write(path: Path, write: Callable[[Any], None], how: dict[str, Any]) -> None:
    """Write ``path`` through ``write`` with a file opened as ``how`` says (see write_atomic)."""
    with writing(path):
        if is_special(path):
            # A device or a pipe may block for ever (a FIFO nobody reads): Ctrl-C ends it now.
            with path.open(**how) as handle:
                write(handle)
            return
        with held(), _beside(path.resolve(), how) as handle:
            write(handle)


@contextlib.contextmanager
def replacing(path: Path, *, newline: str | None = None) -> Iterator[IO[str]]:
    """A text file that becomes ``path`` when the block ends (a device, by --force: in place).

    For a stream written during a long run (``compare --details``): a failure or Ctrl-C in
    the block keeps the previous file and removes the temporary one; only the final fsync
    and rename hold Ctrl-C and SIGTERM (the run itself must stay interruptible).
    """
    how: dict[str, Any] = {"mode": "w", "encoding": "utf-8", "newline": newline}
    # An OSError of the block's own work (the run) is not this file's: it goes on as it is.
    theirs: list[OSError] = []
    try:
        with (path.open(**how) if is_special(path)
              else _beside(path.resolve(), how, hold_commit=True)) as handle:
            try:
                yield guarded(handle, path)
            except OSError as error:
                theirs.append(error)
                raise
    except OSError as error:
        if theirs and error is theirs[0]:
            raise
        raise OutputFailed(path, error) from None


@contextlib.contextmanager
def _beside(path: Path, how: dict[str, Any], hold_commit: bool = False) -> Iterator[Any]:
    """A temporary file beside ``path``, renamed over it if the block ends well, else removed.

    ``hold_commit`` holds signals for the fsync and the rename (a caller that holds them
    for the whole write already does not ask: ``held`` is not meant to nest).
    """
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, **how) as handle:
            yield handle
            with held() if hold_commit else contextlib.nullcontext():
                handle.flush()
                os.fsync(handle.fileno())
                handle.close()
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(temporary, 0o666 & ~umask)
                os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


#: The formats matplotlib's savefig writes (by suffix): judged before any work, without
#: importing matplotlib.
IMAGE_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".jpg", ".jpeg", ".eps", ".ps", ".tif",
                  ".tiff", ".webp", ".gif", ".raw", ".rgba", ".pgf", ".avif")


def check_image(option: str, path: Path, force: bool = False) -> Path:
    """``check_output`` for a figure: the suffix must name a format matplotlib writes."""
    if path.suffix.lower() not in IMAGE_SUFFIXES:
        raise BadInput(f"{option} {path}: unknown image format {path.suffix[1:]!r} "
                       f"(use one of: {', '.join(s[1:] for s in IMAGE_SUFFIXES)})")
    return check_output(option, path, force)
