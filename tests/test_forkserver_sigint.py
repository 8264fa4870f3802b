"""Ctrl-C while a pooled sweep's forkserver is still importing: no traceback from it.

A forkserver ignores SIGINT only once its preload imports are done; before
``sim.runtime.signals.start_forkserver`` a Ctrl-C in that time printed its
``KeyboardInterrupt`` traceback (1 in 3 manual tries). The signal is sent to the whole
group, as a terminal sends it, the moment the server process exists.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_signals_pool import BOUND_S, LONG_SWEEP, ROOT, _cmdline, _ends_whole, _group

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="finds the process tree through /proc (Linux)")

TRIES = 4


def _forkserver_of(pid: int) -> int | None:
    return next((p for p, parent in _group(pid).items()
                 if parent == pid and "forkserver" in _cmdline(p)), None)


@pytest.mark.parametrize("attempt", range(TRIES))
def test_ctrl_c_while_the_forkserver_imports_prints_no_traceback(
    tmp_path: Path, attempt: int
) -> None:
    """Exit 130, one line, no traceback from any process, nothing left running."""
    child = subprocess.Popen(
        [sys.executable, "-m", "platform_testbed", "sweep", LONG_SWEEP, "--workers", "2",
         "--no-progress", "--out", str(tmp_path / "rows.csv")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT)}, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + BOUND_S
        while (server := _forkserver_of(child.pid)) is None:
            assert time.monotonic() < deadline, "no forkserver started"
            time.sleep(0.002)
        # Later each try, still within the server's import (a few hundred ms).
        time.sleep(0.02 * attempt)
        os.killpg(child.pid, signal.SIGINT)
        _out, err = _ends_whole(child)
        assert "Traceback" not in err, err
        assert "KeyboardInterrupt" not in err, err
        assert child.returncode == 128 + signal.SIGINT, err
        assert server not in _group(child.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate(timeout=BOUND_S)
