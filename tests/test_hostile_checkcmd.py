"""Check commands that misbehave in ways a count cannot bound (issue 32).

* A process that answers ``{"wait": 0}`` for ever, never taking the incremental mode, is
  sent every look again in each request: bounded in count (10,000 looks) it still ran past
  45 s. A run's work is bounded too, in bytes sent and in seconds of answers.
* A process that writes before it is asked: the reason its run fails must be the same
  whatever the timing of the pipes (the n-th line answers the n-th request).
* A process that ignores SIGTERM and end of file, when the command ends on a signal and a
  second one comes during the close's grace: it is killed anyway, with its session.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from platform_testbed.checks.drive import CheckFailed
from platform_testbed.sim.checkcmd import CommandCheck, ExternalCheckError, check, child
from platform_testbed.sim.kit.testing import App, drive_world, world
from platform_testbed.sim.runtime.signals import alarm_usable, under_alarm
from tests.test_checkcmd_signals import _running

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

WAIT_0 = """import sys
for line in sys.stdin:
    print('{"wait": 0}', flush=True)
"""

SLOW_WAIT_0 = """import sys, time
for line in sys.stdin:
    time.sleep(0.1)
    print('{"wait": 0}', flush=True)
"""

#: Answers, then writes a line nobody asked for after ``sys.argv[1]`` seconds.
CHATTY = """import sys, time
for line in sys.stdin:
    print('{"wait": 1}', flush=True)
    time.sleep(float(sys.argv[1]))
    print('tick', flush=True)
"""

#: Ignores SIGTERM and end of file: only SIGKILL ends it.
STUBBORN = """import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for line in sys.stdin:
    print('{"wait": 1}', flush=True)
while True:
    time.sleep(1)
"""


def _script(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "check.py"
    path.write_text(text)
    return [sys.executable, str(path)]


def test_a_run_of_waits_is_bounded_in_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An endless wait-0 without the incremental mode: the run's requests stop at the byte
    budget (here 1 MiB) with a one-line error naming the way out, long before 10,000 looks."""
    monkeypatch.setattr(check, "MAX_RUN_REQUEST_BYTES", 1 << 20)
    started = time.monotonic()
    with CommandCheck(_script(tmp_path, WAIT_0)) as command, pytest.raises(CheckFailed) as raised:
        drive_world(command, world(App(crash_after_ms=None), horizon_s=60))
    message = str(raised.value)
    assert "this run's requests passed 1 MiB" in message
    assert '"incremental": true' in message
    assert "\n" not in message
    looks = int(message.split(" after ")[1].split(" look", maxsplit=1)[0])
    assert looks < 2_000, message
    assert time.monotonic() - started < 10


def test_a_run_of_slow_answers_is_bounded_in_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers each well within the per-answer timeout, but together past RUN_TIMEOUTS of
    them (here one: 1 s): the run ends as an error within that budget, not at the count limit."""
    monkeypatch.setattr(check, "RUN_TIMEOUTS", 1)
    started = time.monotonic()
    with CommandCheck(_script(tmp_path, SLOW_WAIT_0), timeout_s=1.0) as command, \
            pytest.raises(CheckFailed, match=r"this run's answers took over 1 s together"):
        drive_world(command, world(App(crash_after_ms=None), horizon_s=60))
    assert time.monotonic() - started < 4


@pytest.mark.parametrize(("late_s", "pause_s"), [("0", 0.5), ("0.3", 0.0)])
def test_output_nobody_asked_for_fails_the_same_way_whatever_its_timing(
    tmp_path: Path, late_s: str, pause_s: float
) -> None:
    """A line written between requests, in the pipe before the next request is sent or
    arriving after it: either way it is read as that request's answer, the same error."""
    look = world(App(crash_after_ms=None), horizon_s=60).look
    with CommandCheck([*_script(tmp_path, CHATTY), late_s]) as command:
        command.next(0, [])
        time.sleep(pause_s)
        with pytest.raises(ExternalCheckError) as raised:
            command.next(0, [look(1_000)])
    assert "run-1 after 1 look(s): answered tick: not JSON" in str(raised.value)


#: A command's end as ``timeout`` makes it: the first SIGTERM ended the command and its
#: handlers are gone (SIG_DFL again), then every check closes and the second SIGTERM comes
#: during the close's grace. Prints the check process's pid, then closes.
SECOND_SIGTERM = """import os, signal, sys, threading
from platform_testbed.sim.checkcmd import CommandCheck, close_all
check = CommandCheck([sys.executable, sys.argv[1]])
check.next(0, [])
print(check.pid, flush=True)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
close_all()
"""


@pytest.mark.serial
def test_a_second_sigterm_during_the_close_does_not_spare_a_stubborn_child(tmp_path: Path) -> None:
    """SIGTERM during the close's grace, for a child that ignores SIGTERM and end of file:
    the close finishes first (the child and its session killed), then the signal ends the
    process. Before, the process died at once and the child ran on, adopted by init."""
    stubborn = tmp_path / "stubborn.py"
    stubborn.write_text(STUBBORN)
    driver = tmp_path / "driver.py"
    driver.write_text(SECOND_SIGTERM)
    proc = subprocess.run([sys.executable, str(driver), str(stubborn)], capture_output=True,
                          text=True, timeout=30, check=False,
                          env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    pid = int(proc.stdout.split()[0])
    deadline = time.monotonic() + 2
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    survived = _running(pid)
    if survived:
        os.kill(pid, signal.SIGKILL)  # the test's own process, by its id
    assert not survived, "the stubborn check process outlived the command"


@pytest.mark.serial
def test_a_signal_while_the_check_process_starts_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C inside Popen, after its fork (as a real one can land): the command ends as the
    signal says, and the process it had just started is killed, not left unknown to all."""
    real = subprocess.Popen
    started: list[int] = []

    def popen_then_ctrl_c(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        proc = real(*args, **kwargs)  # type: ignore[call-overload]
        started.append(proc.pid)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler runs here, still inside Popen
        return proc  # type: ignore[no-any-return]

    monkeypatch.setattr(child.subprocess, "Popen", popen_then_ctrl_c)
    command = CommandCheck(_script(tmp_path, STUBBORN))
    with pytest.raises(KeyboardInterrupt):
        command.next(0, [])
    assert started
    survived = _running(started[0])
    if survived:
        os.kill(started[0], signal.SIGKILL)
    assert not survived, "the check process started during the signal outlived it"


def test_stderr_written_as_fast_as_it_is_read_does_not_outlast_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child whose stderr never runs dry (here: every read of it returns a full chunk):
    the answer's deadline still ends the exchange, as a one-line error."""
    if not alarm_usable():
        pytest.skip("SIGALRM is not usable here (not the main thread, or taken)")
    process = child.Child(_script(tmp_path, "import time\ntime.sleep(30)\n"))
    real_read = os.read

    def endless(fd: int, size: int) -> bytes:
        return b"x" * size if fd == process.stderr else real_read(fd, size)

    monkeypatch.setattr(child.os, "read", endless)
    try:
        # Bounded here too, so the old reader (a loop while stderr had data) fails, not hangs.
        with pytest.raises(ExternalCheckError, match=r"gave no answer within 0\.3 s"):
            under_alarm(5.0, process.exchange, "{}", 0.3)
    finally:
        monkeypatch.undo()
        process.close(0)


def test_an_answer_nested_too_deeply_is_a_protocol_error() -> None:
    """100,000 nested arrays on one line: the protocol's one-line error, not RecursionError."""
    from platform_testbed.sim.checkcmd import AnswerError, parse_answer  # noqa: PLC0415

    with pytest.raises(AnswerError, match="JSON nested too deeply"):
        parse_answer("[" * 100_000 + "]" * 100_000)
    with pytest.raises(AnswerError, match="JSON nested too deeply"):
        parse_answer('{"wait": ' + "[" * 100_000 + "]" * 100_000 + "}")
