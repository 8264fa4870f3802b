"""Outputs that cannot be written: one line, exit 2, nothing half-written (issue 32).

The class: stdout on ``/dev/full``, a full disk under ``--out``/``--record``/``--details``/a
figure, a read-only working directory (the sweep's default ``out/``). Every output path
writes through ``sim.runtime.outputs`` (``command_output`` for the whole command, the
atomic writers for files), which turns the ``OSError`` into ``OutputFailed``: one line
naming what could not be written, exit 2, the previous file kept and no temporary file.
A full disk is made by failing the write's system call (``os.fsync``, or the write through
the handle) with ENOSPC, and a read-only mount by failing ``os.mkdir`` with EROFS, since
the tests run as root (who may write in any folder) without a mount of their own.
"""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.runtime import outputs
from platform_testbed.sim.runtime.outputs import OutputFailed, command_output, emit, write_atomic

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "sept25-crash-loop"
PREVIOUS = "the previous file\n"
SMALL_SWEEP = ROOT / "tests" / "data" / "sweeps" / "small.toml"


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run ``testbed argv`` in this process: its exit status and its stderr."""
    code = main(argv)
    return code, capsys.readouterr().err


def _one_line(err: str, pattern: str) -> None:
    """stderr is one line, no traceback, and says ``pattern``."""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert pattern in lines[0], err


def _full(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _left(folder: Path) -> list[str]:
    """Temporary files a write left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("argv", [
    ["list"],  # the last flush, at the command's end
    ["compare", SCENARIO, "--check", "count", "--runs", "30", "--json"],  # a print past the buffer
])
def test_stdout_on_dev_full_is_one_line_and_2(argv: list[str]) -> None:
    """stdout on /dev/full: exit 2 and one line naming stdout, not an OSError traceback
    (nor Python's "Exception ignored" at exit, nor its status 120)."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "platform_testbed", *argv], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60, check=False,
                              env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2, proc.stderr
    _one_line(proc.stderr, "cannot write stdout: No space left on device")


def test_stdout_closed_is_one_line_and_2() -> None:
    """stdout closed before the start (``>&-``; Python's sys.stdout is None): one line, 2."""
    proc = subprocess.run([sys.executable, "-m", "platform_testbed", "list"], stdout=None,
                          stderr=subprocess.PIPE, text=True, timeout=60, check=False,
                          env=os.environ | {"PYTHONPATH": str(ROOT)},
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2, proc.stderr
    _one_line(proc.stderr, "cannot write stdout: stdout is closed (EBADF)")


@pytest.mark.parametrize("option", ["--record", "--details"])
def test_a_full_disk_under_a_file_option_keeps_the_previous_file(
    option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The disk fills as compare's file is committed: one line naming it, exit 2, the
    previous file byte for byte, no temporary file beside it."""
    target = tmp_path / "out.jsonl"
    target.write_text(PREVIOUS)
    monkeypatch.setattr(os, "fsync", _full)
    code, err = _cli(["compare", SCENARIO, "--check", "count", option, str(target)], capsys)
    assert code == 2
    _one_line(err, f"cannot write {target}: No space left on device (ENOSPC)")
    assert target.read_text() == PREVIOUS
    assert _left(tmp_path) == []


def test_a_device_that_is_full_under_force_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """``--record /dev/full --force`` (a device, written in place): one line, exit 2."""
    code, err = _cli(["compare", SCENARIO, "--check", "count", "--record", "/dev/full",
                      "--force"], capsys)
    assert code == 2
    _one_line(err, "cannot write /dev/full: No space left on device")


def test_a_full_disk_under_a_sweeps_out_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sweep's rows stream to a file with no name: a disk that fills names --out's file
    in one line, and no file (named or temporary) is left."""
    target = tmp_path / "rows.csv"
    monkeypatch.setattr(os, "fsync", _full)
    code, err = _cli(["sweep", str(SMALL_SWEEP), "--workers", "1", "--no-progress",
                      "--out", str(target)], capsys)
    assert code == 2
    _one_line(err, f"cannot write {target}: No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_working_folder_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sweep with no --out in a read-only folder (its out/ cannot be made): one line, 2."""
    def read_only(path: object, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "mkdir", read_only)
    code, err = _cli(["sweep", str(SMALL_SWEEP), "--workers", "1", "--no-progress"], capsys)
    assert code == 2
    _one_line(err, "out: Read-only file system (EROFS)")


def test_write_atomic_names_the_path_and_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper itself: OutputFailed (a BadInput) naming the path; the old bytes kept."""
    target = tmp_path / "kept.txt"
    target.write_text(PREVIOUS)
    monkeypatch.setattr(os, "fsync", _full)
    with pytest.raises(OutputFailed, match=r"cannot write .*kept\.txt: No space left on device"):
        write_atomic(target, lambda out: out.write("new\n"))
    assert target.read_text() == PREVIOUS
    assert _left(tmp_path) == []


class _FullStream(io.StringIO):
    """A stream whose flush fails as /dev/full's does."""

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_emit_and_command_output_name_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    """``emit`` and a command's end flush: a full stdout is OutputFailed naming stdout."""
    monkeypatch.setattr(sys, "stdout", _FullStream())
    with pytest.raises(OutputFailed, match=r"^cannot write stdout: No space left on device"):
        emit("hello")
    with pytest.raises(OutputFailed, match=r"^cannot write stdout"), command_output():
        print("buffered")


def test_a_closed_pipe_is_left_to_the_command_line() -> None:
    """A reader that went away stays BrokenPipeError (the command line's 141), never exit 2."""
    with pytest.raises(BrokenPipeError), outputs.writing("stdout"):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def test_an_error_message_with_a_newline_in_a_path_is_one_line(tmp_path: Path) -> None:
    """What could not be written is named on one line even if the OS says more."""
    failed = OutputFailed(tmp_path / "x", OSError(errno.EIO, "Input/output\nerror"))
    assert "\n" not in str(failed)


def test_output_failed_pickles_as_it_was_made() -> None:
    """A pool's worker hands exceptions back pickled: the same message and what failed."""
    import pickle  # noqa: PLC0415

    failed = OutputFailed("rows.csv", OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    again = pickle.loads(pickle.dumps(failed))
    assert (str(again), again.what) == (str(failed), "rows.csv")


def test_a_streams_file_is_not_blamed_for_the_runs_own_error(tmp_path: Path) -> None:
    """``replacing`` (compare --details): an OSError of the run inside the block goes on as
    it is, not as "cannot write runs.jsonl" (its commit failing is: see --details above)."""
    target = tmp_path / "runs.jsonl"
    target.write_text(PREVIOUS)
    with pytest.raises(ConnectionRefusedError), outputs.replacing(target):
        raise ConnectionRefusedError(errno.ECONNREFUSED, "the run's own error")
    assert target.read_text() == PREVIOUS
    assert _left(tmp_path) == []
