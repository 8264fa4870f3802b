"""compare --runs N and checks --runs N on the sweep's pool: the same output, byte for byte,
whatever the number of workers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main
from tests.procs import run_alone

ROOT = Path(__file__).parents[1]


def _testbed(*args: str, cwd: Path) -> bytes:
    done = subprocess.run([sys.executable, "-m", "platform_testbed", *args], cwd=cwd,
                          capture_output=True, env=os.environ | {"PYTHONPATH": str(ROOT)},
                          check=True, timeout=300)
    return done.stdout


def test_compare_on_two_workers_prints_and_writes_what_one_does(tmp_path: Path) -> None:
    """--json summary and the --details lines: the same bytes on 1 and 2 workers."""
    got = {}
    for workers in ("1", "2"):
        details = tmp_path / f"d{workers}.jsonl"
        # Seeds 400-699: every [expect] holds there (count catches seeds 293, 311, 341 and 875 of
        # 0-999), so the command exits 0; the test compares bytes, not verdicts.
        out = _testbed("compare", "sept25-crash-loop", "--runs", "300", "--seed", "400",
                       "--json", "--summary", "--details", str(details),
                       "--workers", workers, cwd=tmp_path)
        got[workers] = (out, details.read_bytes())
    assert got["1"] == got["2"]
    assert got["1"][1].count(b"\n") == 300  # a line per seed: the test saw every run


def test_checks_table_on_two_workers_is_the_one_on_one(tmp_path: Path) -> None:
    """testbed checks --runs N: the same table on 1 and 2 workers."""
    one = _testbed("checks", "--runs", "40", "--markdown", "--workers", "1", cwd=tmp_path)
    two = _testbed("checks", "--runs", "40", "--markdown", "--workers", "2", cwd=tmp_path)
    assert one == two
    assert b"count" in one


POOLED_VS_SERIAL = """
from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.sim.checkload.loader import build_checks
from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish.compare import compare
from platform_testbed.sim.sweep.seeds import pooled

if __name__ == "__main__":
    loaded = scenario.load("sept25-crash-loop")
    names = list(BUILTIN_CHECKS)
    checks = [b.check for b in build_checks(names, loaded.check, {})]
    seeds = range(3, 23)
    serial = compare(loaded, checks, seeds)
    pool = compare(loaded, checks, seeds, runner=pooled(loaded, names, {}, 2, None, per_task=1))
    assert pool == serial
    assert pool.runs_count == 20
    assert all(r.looks for run in pool.seeds for r in run.results)  # looks came back
    print("same")
"""


def test_pooled_tasks_arriving_out_of_order_fold_as_the_serial_run(tmp_path: Path) -> None:
    """One seed a task on two workers (tasks finish in any order): every run, its looks and
    the summary equal the serial comparison's. In a process of its own: the pool's
    forkserver outlives the pool, and other tests count this process's children."""
    assert run_alone(tmp_path, POOLED_VS_SERIAL).strip() == "same"


def test_a_pool_on_the_command_line_is_bad_input_when_out_of_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--workers 0, or --workers with --dask: one line, exit 2, before any world runs."""
    assert main(["compare", "sept25-crash-loop", "--runs", "5", "--workers", "0"]) == 2
    assert "--workers: must be at least 1" in capsys.readouterr().err
    assert main(["checks", "--runs", "5", "--workers", "2", "--dask", "tcp://127.0.0.1:1"]) == 2
    assert "--workers and --dask: choose one" in capsys.readouterr().err
