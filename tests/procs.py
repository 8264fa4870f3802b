"""Process helpers shared by the tests that hold check commands to leaving no process."""

from __future__ import annotations

import os
from pathlib import Path

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


def children() -> list[int]:
    """Process ids whose parent is this test process (zombies included)."""
    mine = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                mine.append(int(entry.name))
    return mine
