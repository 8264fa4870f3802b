"""A command check cut by the driver's wall-clock limit (``--check-timeout``), run after run.

The limit is SIGALRM raising ``Overtime`` every 50 ms until the call returns
(``sim.runtime.signals.under_alarm``), so a second alarm can land while the cut call is
still killing its child. That once left the check holding a half-closed child, and the
next run failed with "OSError: [Errno 9] Bad file descriptor" instead of the limit's
error (tests/test_hostile.py, about one run in three).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from platform_testbed.sim.checkcmd import CommandCheck, child
from platform_testbed.sim.runtime.signals import Overtime, alarm_usable, under_alarm
from tests.procs import children as _children

SLOW = """import sys, time
for line in sys.stdin:
    time.sleep(1.0)  # answers, but after the driver's limit
    print('{"wait": 1}', flush=True)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_every_run_cut_by_the_limit_is_overtime_and_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four runs in a row, each cut at 0.1 s while the kill is slow: each ends as Overtime."""
    if not alarm_usable():
        pytest.skip("SIGALRM is not usable here (not the main thread, or taken)")
    # A loaded machine's /proc scan, made slower than the alarm's 50 ms repeat, so a
    # second alarm lands while the cut call kills its child (what load did by chance).
    scan = child.descendants

    def slow_scan(pid: int) -> list[int]:
        time.sleep(0.2)
        return scan(pid)

    monkeypatch.setattr(child, "descendants", slow_scan)
    script = tmp_path / "slow.py"
    script.write_text(SLOW)
    with CommandCheck([sys.executable, str(script)], timeout_s=5.0) as check:
        for run in range(4):
            with pytest.raises(Overtime):
                under_alarm(0.1, check.next, 1_000 * run, [])
            assert check.pid is None, f"run {run}: a cut child is still the check's"
    assert _children() == []
