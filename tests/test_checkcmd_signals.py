"""No survivor (issue 20): SIGHUP during ``compare --check-cmd`` ends it with 129 and one line,
and the check process and a grandchild that left its group with ``setsid`` end too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from platform_testbed.sim.checkcmd.child import descendants

#: A check that starts a grandchild in a session of its own, then answers slowly for ever.
SLOW_WITH_GRANDCHILD = """import json, os, subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                              start_new_session=True)
with open("pids.tmp", "w") as out:
    out.write(f"{os.getpid()} {grandchild.pid}")
os.rename("pids.tmp", "pids")
for line in sys.stdin:
    time.sleep(0.3)
    print(json.dumps({"wait": 1}), flush=True)
"""


def _running(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for a reaper does not run)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _left_running(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running 5 s on; the test's own processes, so killed by id
    (the failure names them)."""
    deadline = time.monotonic() + 5
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if _running(p)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


def _started(
    tmp_path: Path, hup: signal.Handlers = signal.SIG_DFL
) -> tuple[subprocess.Popen[str], list[int]]:
    """The command running its slow check; ``hup``: SIGHUP's disposition it starts with.

    Set here, not inherited: run under ``nohup`` the test's own process ignores SIGHUP,
    and so would the command, which then rightly carries on (a 20 s timeout in CI once).
    """
    (tmp_path / "slow.py").write_text(SLOW_WITH_GRANDCHILD)
    # A disposition of SIG_DFL or SIG_IGN is what a child inherits across fork and exec.
    ours = signal.signal(signal.SIGHUP, hup)
    try:
        testbed = subprocess.Popen(
            [sys.executable, "-m", "platform_testbed", "compare", "sept25-crash-loop",
             "--check-cmd", f"{sys.executable} slow.py", "--check-cmd-name", "slow"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[1])},
        )
    finally:
        signal.signal(signal.SIGHUP, ours)
    deadline = time.monotonic() + 30
    while not (tmp_path / "pids").exists():
        assert time.monotonic() < deadline, "the check never started"
        assert testbed.poll() is None, testbed.communicate()
        time.sleep(0.05)
    time.sleep(0.5)  # a few exchanges in
    return testbed, [int(p) for p in (tmp_path / "pids").read_text().split()]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize(
    ("hup", "ignored", "last", "ends"),
    [
        # SIGHUP: exit 129, 'testbed: hung up'.
        (signal.SIG_DFL, [], signal.SIGHUP, (129, "testbed: hung up")),
        # Started with SIGHUP ignored (nohup): the command goes on after one; SIGTERM ends it.
        (signal.SIG_IGN, [signal.SIGHUP], signal.SIGTERM, (143, "testbed: terminated")),
    ],
    ids=["sighup", "sighup-under-nohup"],
)
def test_signal_ends_the_command_with_one_line_and_leaves_no_check_process(
    tmp_path: Path, hup: signal.Handlers, ignored: list[signal.Signals], last: signal.Signals,
    ends: tuple[int, str],
) -> None:
    """The signal that ends the command: its exit status and one line, and the check and
    its setsid grandchild gone; a signal it ignores leaves it running."""
    testbed, pids = _started(tmp_path, hup)
    try:
        for signum in ignored:
            testbed.send_signal(signum)
            with pytest.raises(subprocess.TimeoutExpired):
                testbed.wait(timeout=1.5)  # a handled SIGHUP ends it in well under 0.1 s
        testbed.send_signal(last)
        _out, err = testbed.communicate(timeout=20)
    finally:
        if testbed.poll() is None:
            testbed.kill()
    assert (testbed.returncode, err.strip()) == ends, err
    assert not (left := _left_running(pids)), f"still running: {left}"


def test_descendants_lists_a_child_that_called_setsid(tmp_path: Path) -> None:
    """The process tree walk finds a grandchild in a session of its own (killpg cannot)."""
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time\n"
         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
         "time.sleep(60)"])
    try:
        deadline = time.monotonic() + 10
        while not descendants(parent.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        [grandchild] = descendants(parent.pid)
        assert os.getsid(grandchild) != os.getsid(parent.pid)
    finally:
        for pid in descendants(parent.pid):
            os.kill(pid, signal.SIGKILL)
        parent.kill()
        parent.wait()
