"""Signals and a pooled sweep; Ctrl-C and SIGTERM during an output's final write.

A pooled sweep is a process tree: the ``testbed`` process, a forkserver, its workers and
multiprocessing's resource tracker. Whatever ends the parent (SIGTERM, or SIGKILL, which it
cannot catch), none of the others may outlive it for more than a moment, nor keep the
caller's stdout and stderr open: ``subprocess.run(..., capture_output=True)`` reads until
every holder of those pipes is gone, so one orphan would block a CI job for ever.

Each sweep runs in a session of its own, so its whole tree is the one process group,
found through ``/proc``; every wait below is a bounded poll.

The final write is interrupted deterministically: the test's hook sends this process a
real SIGINT or SIGTERM from inside the write (the handlers ``testbed`` installs take it
from there), not after a guessed delay.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

import platform_testbed.sim.runtime.outputs as runtime_outputs
import platform_testbed.sim.sweep.output as sweep_output
from platform_testbed.sim.cli.parser import main
from tests.procs import processes

ROOT = Path(__file__).parents[1]
SMALL = ROOT / "tests" / "data" / "sweeps" / "small.toml"
#: 10,000 worlds: about 20 s on two workers, so it is still running when the signal comes.
LONG_SWEEP = "crash_period_vs_look_delay"
#: Every wait for processes to come or go is a poll bounded by this: generous for a loaded
#: two-core CI machine, as the failure it catches is "for ever" (measured here: the tree
#: gone ~0.2 s after SIGKILL, ~1 s after SIGTERM or Ctrl-C, which let running tasks end).
BOUND_S = 15.0

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="finds the process tree through /proc (Linux)")


# --- a pooled sweep and its process tree -------------------------------------------------


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


def _group(pgid: int) -> dict[int, int]:
    """The live processes of group ``pgid``: pid -> parent pid."""
    return {pid: parent for pid, state, parent, group in processes()
            if group == pgid and state != "Z"}


def _poll(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {BOUND_S} s: {what}")
        time.sleep(0.05)


@contextlib.contextmanager
def _pooled_sweep(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A two-worker sweep whose tree is up: yields it once the tracker, the forkserver and
    both workers run; afterwards SIGKILLs whatever of its group is left (so a failing test
    leaves no orphan either)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "platform_testbed", "sweep", LONG_SWEEP, "--workers", "2", "--no-progress",
         "--out", str(tmp_path / "rows.csv")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT)}, start_new_session=True,
    )
    try:
        def tree_is_up() -> bool:
            group = _group(child.pid)
            servers = [p for p, parent in group.items()
                       if parent == child.pid and "forkserver" in _cmdline(p)]
            trackers = [p for p, parent in group.items()
                        if parent == child.pid and "resource_tracker" in _cmdline(p)]
            workers = [p for p, parent in group.items() if servers and parent == servers[0]]
            return len(servers) == 1 and len(trackers) == 1 and len(workers) == 2

        _poll(tree_is_up, "the forkserver, the resource tracker and two workers start")
        yield child
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate(timeout=BOUND_S)


def _ends_whole(child: subprocess.Popen[str]) -> tuple[str, str]:
    """The caller's view: its pipes close and the group empties, both within the bound."""
    began = time.monotonic()
    try:
        out, err = child.communicate(timeout=BOUND_S)  # EOF only once no process holds them
    except subprocess.TimeoutExpired:
        left = {pid: (parent, _cmdline(pid)[:80]) for pid, parent in _group(child.pid).items()}
        raise AssertionError(f"the pipes are still open after {BOUND_S} s: {left}") from None
    _poll(lambda: not _group(child.pid), "every process of the sweep's group ends")
    assert time.monotonic() - began < BOUND_S
    return out, err


def test_sigkill_of_the_parent_ends_the_workers_server_and_tracker(tmp_path: Path) -> None:
    """SIGKILL of a pooled sweep: no worker, forkserver or tracker outlives it, pipes close."""
    with _pooled_sweep(tmp_path) as child:
        child.kill()
        _ends_whole(child)
        assert child.returncode == -signal.SIGKILL
        assert not (tmp_path / "rows.csv").exists()
        assert list(tmp_path.iterdir()) == []  # no temporary file either


def test_sigterm_of_the_parent_exits_143_and_leaves_no_process(tmp_path: Path) -> None:
    """SIGTERM of a pooled sweep's parent alone: 143, one line, no traceback, no orphan."""
    with _pooled_sweep(tmp_path) as child:
        child.terminate()
        _out, err = _ends_whole(child)
        assert child.returncode == 128 + signal.SIGTERM
        assert err.strip() == "testbed: terminated"
        assert list(tmp_path.iterdir()) == []


def test_ctrl_c_to_the_group_keeps_finished_rows_and_leaves_no_process(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the whole group, as a terminal sends it): 130, rows kept, no orphan."""
    with _pooled_sweep(tmp_path) as child:
        os.killpg(child.pid, signal.SIGINT)
        _out, err = _ends_whole(child)
        assert child.returncode == 128 + signal.SIGINT
        assert "Traceback" not in err
        rows = sweep_output.read_rows(tmp_path / "rows.csv")
        worlds = len(rows) // 2  # two checks: a row each per world
        assert "interrupted: kept the" in err
        assert f"kept the {worlds} of 10000 worlds" in " ".join(err.split())
        assert 0 < worlds < 10000
        assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]


# --- Ctrl-C and SIGTERM during the final write --------------------------------------------


def _signal_at(calls: set[int], signum: int) -> Callable[[], None]:
    """A hook that sends this process ``signum`` on the given calls (1-based) of itself."""
    count = 0

    def hook() -> None:
        nonlocal count
        count += 1
        if count in calls:
            os.kill(os.getpid(), signum)

    return hook


@pytest.fixture
def previous_out(tmp_path: Path) -> Path:
    """An output path that already holds a file (the previous run's)."""
    out = tmp_path / "run" / "rows.csv"
    out.parent.mkdir()
    out.write_text("previous\n")
    return out


def _run_small(out: Path) -> int:
    return main(["sweep", str(SMALL), "--workers", "1", "--no-progress", "--out", str(out)])


def _interrupt_sweep_commit(
    monkeypatch: pytest.MonkeyPatch, out: Path, signals: list[int]
) -> tuple[int, list[str]]:
    """Run the small sweep with ``signals`` sent from inside its final write (the fsync
    before the rename: the rows stream during the run, so the commit is that write);
    return the exit status and the output folder's names and ``out``'s text at the signal."""
    seen: list[str] = []
    fsync = os.fsync

    def fsync_then_signal(fd: int) -> None:
        fsync(fd)
        seen.extend([*sorted(p.name for p in out.parent.iterdir()), out.read_text()])
        for signum in signals:
            os.kill(os.getpid(), signum)

    monkeypatch.setattr(runtime_outputs.os, "fsync", fsync_then_signal)
    return _run_small(out), seen


def _uninterrupted(tmp_path: Path) -> bytes:
    """The small sweep's rows as a run that no signal touched writes them."""
    out = tmp_path / "whole" / "rows.csv"
    out.parent.mkdir()
    assert _run_small(out) == 0
    return out.read_bytes()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_final_write_keeps_every_row(
    tmp_path: Path, previous_out: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], signum: int,
) -> None:
    """One Ctrl-C or SIGTERM in the final write: it finishes (every row kept), then 130/143."""
    got, seen = _interrupt_sweep_commit(monkeypatch, previous_out, [signum])
    word = "interrupted" if signum == signal.SIGINT else "terminated"
    assert got == 128 + signum
    assert capsys.readouterr().err.strip() == f"testbed: {word}"
    assert seen == ["rows.csv", "previous\n"]  # the signal came before the rename
    assert [p.name for p in previous_out.parent.iterdir()] == ["rows.csv"]
    monkeypatch.undo()
    assert previous_out.read_bytes() == _uninterrupted(tmp_path)


def test_second_ctrl_c_abandons_the_write_and_keeps_the_previous_file(
    previous_out: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two Ctrl-C in the final write: it stops at once; the previous file, no temporary one."""
    code, seen = _interrupt_sweep_commit(monkeypatch, previous_out,
                                         [signal.SIGINT, signal.SIGINT])
    assert code == 130
    assert capsys.readouterr().err.strip() == "testbed: interrupted"
    assert seen == ["rows.csv", "previous\n"]
    assert previous_out.read_text() == "previous\n"
    assert [p.name for p in previous_out.parent.iterdir()] == ["rows.csv"]


def _signal_mid_stream(monkeypatch: pytest.MonkeyPatch, out: Path, signum: int) -> list[str]:
    """Send ``signum`` from inside the 200th CSV cell written while rows stream (the run is
    still going); return the names beside ``out`` at that moment."""
    hook = _signal_at({200}, signum)
    seen: list[str] = []
    cell = sweep_output._csv_cell

    def cell_then_hook(value: object) -> str:
        text = cell(value)
        hook()
        if not seen:
            seen.extend(sorted(p.name for p in out.parent.iterdir()))
        return text

    monkeypatch.setattr(sweep_output, "_csv_cell", cell_then_hook)
    return seen


def test_ctrl_c_while_rows_stream_keeps_the_rows_finished_so_far(
    tmp_path: Path, previous_out: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ctrl-C mid-sweep, inside a row's write: that batch is finished, then the file is put
    in place holding a whole prefix of the uninterrupted rows (whole worlds), and 130."""
    seen = _signal_mid_stream(monkeypatch, previous_out, signal.SIGINT)
    code = _run_small(previous_out)
    err = " ".join(capsys.readouterr().err.split())
    assert code == 130
    assert seen == ["rows.csv"]  # the rows stream to a file with no name until the end
    monkeypatch.undo()
    whole = _uninterrupted(tmp_path)
    kept = previous_out.read_bytes()
    assert whole.startswith(kept)
    assert kept.endswith(b"\n")
    assert len(kept) < len(whole)
    rows = kept.count(b"\n") - 1  # the header
    assert rows > 0
    assert rows % 2 == 0
    assert f"interrupted: kept the {rows // 2} of 40 worlds that finished ({rows} rows)" in err
    assert [p.name for p in previous_out.parent.iterdir()] == ["rows.csv"]


def test_sigterm_while_rows_stream_keeps_the_previous_file(
    previous_out: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGTERM mid-sweep ends it as before streaming: 143, one line, the previous file."""
    _signal_mid_stream(monkeypatch, previous_out, signal.SIGTERM)
    code = _run_small(previous_out)
    assert code == 143
    assert capsys.readouterr().err.strip() == "testbed: terminated"
    assert previous_out.read_text() == "previous\n"
    assert [p.name for p in previous_out.parent.iterdir()] == ["rows.csv"]


def test_ctrl_c_before_the_rename_of_a_compare_record_keeps_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """compare --record: Ctrl-C after the lines are written, before the rename: all kept."""
    record = tmp_path / "looks.jsonl"
    record.write_text("previous\n")
    hook = _signal_at({1}, signal.SIGINT)
    fsync = os.fsync

    def fsync_then_hook(fd: int) -> None:
        fsync(fd)
        hook()

    monkeypatch.setattr(runtime_outputs.os, "fsync", fsync_then_hook)
    command = ["compare", "sept25-crash-loop", "--runs", "2", "--json", "--record"]
    code = main([*command, str(record)])
    assert code == 130
    assert capsys.readouterr().err.strip() == "testbed: interrupted"
    assert [p.name for p in tmp_path.iterdir()] == ["looks.jsonl"]
    monkeypatch.undo()
    whole = tmp_path / "whole" / "looks.jsonl"
    whole.parent.mkdir()
    assert main([*command, str(whole)]) == 0
    assert record.read_bytes() == whole.read_bytes()  # what an uninterrupted run writes


def test_a_write_outside_the_command_line_is_interrupted_as_python_would(
    tmp_path: Path,
) -> None:
    """write_atomic in a library (Python's own SIGINT handler): KeyboardInterrupt after the
    file is whole; handlers are put back."""
    out = tmp_path / "f.txt"
    hook = _signal_at({1}, signal.SIGINT)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)

    def write(handle: IO[str]) -> None:
        handle.write("first\n")
        hook()
        handle.write("second\n")

    with pytest.raises(KeyboardInterrupt):
        runtime_outputs.write_atomic(out, write)
    assert out.read_text() == "first\nsecond\n"
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


# --- every command: a signal mid-run ends it with 130 or 143, one line, no traceback ------

SIGNALLING_CHECK = '''
import os
import signal
from platform_testbed.checks import Wait

class Signals:
    """Sends its own process the signal the test names, at its first look."""
    name = "signals"
    def next(self, publish_started_ms, looks):
        os.kill(os.getpid(), int(os.environ["TEST_SIGNAL"]))
        return Wait(1.0)
'''


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    """Each command, run so that the signalling check (or the rollout hook) runs mid-run."""
    check = str(tmp_path / "uc.py")
    (tmp_path / "uc.py").write_text(SIGNALLING_CHECK)
    sweep = tmp_path / "mine.toml"
    sweep.write_text(
        f'name = "mine"\nscenario = "sept25-crash-loop"\nchecks = ["{check}:Signals"]\n'
        'seeds = 1\n[axes]\n"release.crash_after_s" = [1.0, 50.0]\n'
        '"check.look_delay_s" = [3, 10]\n'
    )
    return {
        "compare": ["compare", "sept25-crash-loop", "--check", f"{check}:Signals"],
        "checks": ["checks", "--runs", "1", "--check", f"{check}:Signals"],
        "replay": ["replay", str(tmp_path / "looks.jsonl"), "--check", f"{check}:Signals"],
        "series": ["series", "sept25-three-publishes", "--check", "count", "--check",
                   "timestamp", "--check", f"{check}:Signals"],
        "sweep": ["sweep", str(sweep), "--workers", "1", "--no-progress",
                  "--out", str(tmp_path / "rows.csv")],
        "hunt": ["hunt", "--check", f"{check}:Signals", "--budget", "5", "--no-progress",
                 "--out", str(tmp_path / "found")],
        "rollout": ["rollout", "original", "--runs", "3"],
    }


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize(
    "command", ["compare", "checks", "replay", "series", "sweep", "hunt", "rollout"]
)
def test_a_signal_mid_run_ends_every_command_quietly(
    command: str, signum: signal.Signals, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SIGTERM -> 143 and Ctrl-C -> 130 in every command, one line on stderr, no traceback."""
    args = _commands(tmp_path)[command]
    if command == "replay":
        assert main(["compare", "sept25-crash-loop", "--json", "--record",
                     str(tmp_path / "looks.jsonl")]) == 0
    if command == "rollout":  # no user check there: the signal comes with the second run
        import platform_testbed.sim.rollout.runs as rollout_runs  # noqa: PLC0415

        run, hook = rollout_runs.run, _signal_at({2}, signum)

        def run_then_hook(*given: object) -> object:
            hook()
            return run(*given)  # type: ignore[arg-type]

        monkeypatch.setattr(rollout_runs, "run", run_then_hook)
    capsys.readouterr()
    monkeypatch.setenv("TEST_SIGNAL", str(int(signum)))
    code = main(args)
    err = capsys.readouterr().err
    assert code == 128 + signum
    assert "Traceback" not in err
    if command == "sweep" and signum == signal.SIGINT:
        # A sweep keeps what finished (nothing here: the first world was cut) and says so.
        assert err.startswith("interrupted: kept the 0 of 4 worlds")
    else:
        assert err.strip() == ("testbed: terminated" if signum == signal.SIGTERM
                               else "testbed: interrupted")


def test_junit_refuses_a_symlink_and_follows_the_umask(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--junit goes through sim.runtime.outputs: a symlink is refused (the rename would replace it),
    and the report is made with the umask's permissions, not 0600."""
    target = tmp_path / "target.xml"
    target.write_text("previous\n")
    (tmp_path / "link.xml").symlink_to(target)
    assert main(["compare", "sept25-crash-loop", "--junit", str(tmp_path / "link.xml")]) == 2
    assert "is a symlink" in capsys.readouterr().err
    assert (tmp_path / "link.xml").is_symlink()
    assert target.read_text() == "previous\n"
    umask = os.umask(0o022)
    try:
        assert main(["compare", "sept25-crash-loop", "--junit", str(tmp_path / "r.xml")]) == 0
    finally:
        os.umask(umask)
    assert (tmp_path / "r.xml").stat().st_mode & 0o777 == 0o644
