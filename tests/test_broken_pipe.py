"""A reader that goes away (``testbed ... | head``): the command ends quietly with 141, the
status a shell gives a command SIGPIPE ended, never 0, so under ``set -o pipefail`` a gate
whose result nobody read cannot pass (an unmet ``--expect`` exits 1 when read whole)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The incident's count check does not catch the crash loop: expecting it to is a failed gate.
GATE = ["compare", "sept25-crash-loop", "--check", "count", "--expect", "count=caught", "--json"]


def _run(argv: list[str], read: bool) -> tuple[int, str]:
    """The command's status and stderr, its stdout read whole or closed unread."""
    proc = subprocess.Popen([sys.executable, "-m", "platform_testbed", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    assert proc.stderr is not None
    if read:
        proc.stdout.read()
    proc.stdout.close()  # the reader goes away, as head does once it has its lines
    err = proc.stderr.read()
    return proc.wait(timeout=60), err


def test_a_failed_gate_read_whole_exits_1() -> None:
    code, _ = _run(GATE, read=True)
    assert code == 1


def test_a_reader_that_went_away_is_141_and_quiet() -> None:
    code, err = _run(GATE, read=False)
    assert code == 141
    assert "Traceback" not in err
    assert "BrokenPipe" not in err
