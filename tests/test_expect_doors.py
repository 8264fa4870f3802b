"""Expectations that name a check: one not running is bad input when the command line asks
for it (a CI gate would pass unjudged), and a found file's user check says how to run it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main

ROOT = Path(__file__).resolve().parents[1]


def test_expecting_a_check_not_running_says_how_to_run_ones_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hunt's found file expects the user's check: run without it, one line says how."""
    found = tmp_path / "found.toml"
    found.write_text('name = "found"\n[expect]\nnewest-exit = "missed"\n')
    assert main(["compare", str(found), "--check", "count"]) == 2
    assert capsys.readouterr().err == (
        "testbed: expect.newest-exit: unknown check (built-in: count, timestamp, flyctl-smoke, "
        "min-healthy-time, restart-counter, circuit-breaker; running: count); a check of your "
        "own runs with --check FILE.py:NAME or package.module:NAME\n")



def test_expect_on_the_command_line_of_a_check_that_does_not_run_is_bad_input(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """A CI gate's --expect for a check left out would pass unjudged: one line, exit 2. The
    file's own [expect] of a built-in left out stays "not judged" (exit 0)."""
    assert main(["compare", "sept25-crash-loop", "--check", "count",
                 "--expect", "timestamp=caught"]) == 2
    assert capsys.readouterr().err == (
        "testbed: --expect 'timestamp=caught': timestamp does not run (running: count); "
        "add --check timestamp\n")
    assert main(["compare", "sept25-crash-loop", "--check", "count"]) == 0
    assert "not judged (did not run): timestamp" in capsys.readouterr().out


@pytest.mark.parametrize("count", [-1, 4])
def test_a_series_late_failure_count_outside_its_publishes_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: int
) -> None:
    """Three publishes: 0 to 3 of them can fail late; -1 or 4 can never hold (it was exit 1)."""
    shipped = ROOT / "scenarios" / "series" / "sept25-three-publishes.toml"
    series = tmp_path / "series.toml"
    series.write_text(shipped.read_text().replace("count = 3", f"count = {count}"))
    assert main(["series", str(series)]) == 2
    assert capsys.readouterr().err == (
        f"testbed: expect_late_failures.count: must be 0 to 3, the publishes in the series "
        f"(got {count})\n")


def test_a_series_expectation_of_a_check_left_out_is_not_judged(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """The shipped series expects count and timestamp; run with count alone, timestamp's
    expectation is not judged (as compare's [expect]), and count's still is (it was exit 2)."""
    assert main(["series", "sept25-three-publishes", "--check", "count"]) == 0
    out = capsys.readouterr().out
    assert "expectations held (late failures): count 3" in out
    assert out.rstrip().endswith("not judged (did not run): timestamp")
    assert main(["series", "sept25-three-publishes", "--check", "count", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["expect_not_run"] == ["timestamp"]
    assert document["expectations_failed"] == []
