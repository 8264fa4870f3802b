"""Process helpers shared by the tests: check commands that must leave no process, and
pools that must run in a process of their own."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A check command that runs the command in its arguments, logging each request line and
#: its answer to the file in its first argument (the wire as the check saw it).
RELAY = """
    import subprocess, sys
    log = open(sys.argv[1], "a")
    inner = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    for line in sys.stdin:
        inner.stdin.write(line)
        inner.stdin.flush()
        answer = inner.stdout.readline()
        log.write(line.rstrip("\\n") + "\\n" + answer)
        log.flush()
        sys.stdout.write(answer)
        sys.stdout.flush()
    inner.stdin.close()
    inner.wait()
"""


def processes() -> Iterator[tuple[int, str, int, int]]:
    """Every process now, from /proc: (pid, state, parent pid, process group); one gone
    meanwhile is skipped."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its last ")".
        fields = stat.rpartition(")")[2].split()
        yield int(entry.name), fields[0], int(fields[1]), int(fields[2])


def pool_servers() -> set[int]:
    """This process's multiprocessing forkserver and resource tracker, if running: a pool's
    servers outlive the pool by design, so an earlier test's pool in the same xdist worker
    leaves them (tests/test_sweep.py before test_checkcmd.py or test_hostile_doors.py
    failed those); they are nobody's leak."""
    from multiprocessing import forkserver, resource_tracker  # noqa: PLC0415

    pids = {getattr(forkserver._forkserver, "_forkserver_pid", None),
            getattr(resource_tracker._resource_tracker, "_pid", None)}
    return {pid for pid in pids if pid is not None}


def children() -> list[int]:
    """Process ids whose parent is this test process (zombies included), but its pool
    servers (``pool_servers``)."""
    me, servers = os.getpid(), pool_servers()
    return [pid for pid, _, parent, _ in processes() if parent == me and pid not in servers]


def run_alone(tmp_path: Path, source: str) -> str:
    """Run ``source`` as a script in a process of its own (the checkout importable); its stdout.

    For pools: a pool's forkserver outlives the pool, and other tests count this process's
    children. Fails the test with the script's stderr when it exits non-zero.
    """
    script = tmp_path / "alone.py"
    script.write_text(source)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=os.environ | {"PYTHONPATH": str(ROOT)}, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout
