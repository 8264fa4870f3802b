"""``compare --runs N`` (and ``checks --runs N``) show a bar on a terminal, here and on a
pool, counting seeds to N (to N a scenario for ``checks``).

The bar is drawn on stderr only when stderr is a terminal, so these tests give the command a
pseudo-terminal for stderr (stdout stays a pipe: the table is read apart from the bar) and
read what rich drew there: the last count must be N of N, in seeds per second.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")

RUNS = 60


def _drawn(*args: str, cwd: Path | None = None) -> tuple[str, str]:
    """The command's stdout, and everything it drew on its terminal stderr."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm", "LOOK_DELAY_S": "0.5"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "platform_testbed.sim.cli.launch", *args],
        stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env, cwd=cwd)
    os.close(slave)
    drawn = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the command closed its end
                break
            if not chunk:
                break
            drawn += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, drawn.decode(errors="replace")
    return out.decode(), drawn.decode(errors="replace")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_bar_counts_every_seed_here_and_on_a_pool(workers: str) -> None:
    out, drawn = _drawn("compare", "sept25-crash-loop", "--runs", str(RUNS), "--summary",
                        "--workers", workers)
    assert f"{RUNS}/{RUNS}" in drawn
    assert "seeds/s" in drawn
    assert f"{RUNS + 1}/{RUNS}" not in drawn
    assert "expectations held" in out  # the table went to stdout, not under the bar


def test_no_bar_when_stderr_is_not_a_terminal() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "platform_testbed.sim.cli.launch", "compare", "sept25-crash-loop",
         "--runs", str(RUNS), "--summary", "--workers", "2"],
        capture_output=True, text=True, timeout=120, check=True)
    assert "seeds/s" not in done.stderr
    assert f"/{RUNS}" not in done.stderr


def test_checks_counts_the_seeds_of_every_shipped_scenario() -> None:
    from platform_testbed.sim.config import scenario  # noqa: PLC0415

    shipped = scenario.shipped()
    total = 7 * len(shipped)  # past the bar's 50 seeds
    out, drawn = _drawn("checks", "--runs", "7", "--check", "count", "--workers", "1")
    assert f"{total}/{total}" in drawn
    assert all(name in out for name in shipped)  # the table, on stdout


def test_a_real_process_gets_the_bar_at_a_few_seeds(tmp_path: Path) -> None:
    """A --check-http script runs on the wall clock in every world: 3 seeds are a bar too."""
    script = tmp_path / "passes.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    out, drawn = _drawn("compare", "healthy-release", "--runs", "3", "--check", "count",
                        "--check-http", str(script), "--speed", "20", cwd=tmp_path)
    assert "3/3" in drawn
    assert "seeds/s" in drawn
    assert "http-passes" in out
