"""A check command's grandchild whose parent already exited is still ended with the run.

The command double-forks: a middle process starts the grandchild (in a session of its
own, with ``setsid``) and exits at once, so the grandchild is no longer below the command
nor in its process group. The testbed is a child subreaper while a check command runs
(``PR_SET_CHILD_SUBREAPER``), so the grandchild is reparented to it rather than to init,
found by the variable every check process starts with, killed and reaped.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from platform_testbed.sim.checkcmd import CommandCheck
from platform_testbed.sim.checkcmd.child import MARK_ENV, adopted
from platform_testbed.sim.kit.testing import PUBLISH_MS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="PR_SET_CHILD_SUBREAPER and /proc are Linux's")

DOUBLE_FORK = """import json, os, subprocess, sys
pidfile = sys.argv[1]
middle = os.fork()
if middle == 0:
    grandchild = subprocess.Popen(["sleep", "300"], start_new_session=True)
    with open(pidfile + ".tmp", "w") as handle:
        handle.write(str(grandchild.pid))
    os.rename(pidfile + ".tmp", pidfile)
    os._exit(0)  # the grandchild's parent is gone: it is an orphan now
os.waitpid(middle, 0)
for line in sys.stdin:
    print(json.dumps({"verdict": {"ok": True, "reason": "fine"}}), flush=True)
"""


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting to be reaped)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text.rsplit(")", 1)[1].split()[0] != "Z"


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_an_orphaned_setsid_grandchild_is_adopted_and_killed(tmp_path: Path) -> None:
    """While the check runs the orphan is ours (parent: this process); at close it is gone."""
    script, pidfile = tmp_path / "double.py", tmp_path / "grandchild.pid"
    script.write_text(DOUBLE_FORK)
    check = CommandCheck([sys.executable, str(script), str(pidfile)])
    try:
        check.next(PUBLISH_MS, [])
        deadline = time.monotonic() + 10
        while not pidfile.exists():
            assert time.monotonic() < deadline, "the grandchild never started"
            time.sleep(0.01)
        grandchild = int(pidfile.read_text())
        assert check._child is not None
        mark = check._child.mark
        assert _alive(grandchild)
        assert _parent(grandchild) == os.getpid()  # adopted: this process is a subreaper
        assert f"{MARK_ENV}=".encode() in Path(f"/proc/{grandchild}/environ").read_bytes()
    finally:
        check.close()
    assert not _alive(grandchild)
    assert not Path(f"/proc/{grandchild}").exists()  # reaped, not left a zombie
    assert adopted(mark) == []


def test_the_subreaper_is_only_on_while_a_check_command_runs(tmp_path: Path) -> None:
    """Off again once the last check process is closed: an orphan then goes where it did."""
    import ctypes  # noqa: PLC0415

    def subreaper() -> int:
        value = ctypes.c_int(-1)
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.prctl(37, ctypes.byref(value), 0, 0, 0) == 0  # PR_GET_CHILD_SUBREAPER
        return value.value

    script = tmp_path / "ok.py"
    script.write_text(
        "import json, sys\nfor line in sys.stdin:\n"
        "    print(json.dumps({'wait': 1}), flush=True)\n"
    )
    before = subreaper()
    with CommandCheck([sys.executable, str(script)]) as first, \
            CommandCheck([sys.executable, str(script)]) as second:
        first.next(PUBLISH_MS, [])
        second.next(PUBLISH_MS, [])
        assert subreaper() == 1
        first.close()
        assert subreaper() == 1  # the second still runs
    assert subreaper() == before == 0
