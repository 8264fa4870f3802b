"""What trips a CI job: a process's reason, a process that errs, files a flag derives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main

FAST = ["--speed", "50"]


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(body)
    path.chmod(0o755)
    return path


def _rows(doc: dict, check: str) -> list[dict]:
    return [r for run in doc["runs"] for r in run["results"] if r["check"] == check]


def test_a_process_reason_is_its_last_stdout_line_else_its_last_stderr_line(tmp_path, capsys):
    """Nothing on stdout: the reason is the last line on stderr (it was dropped)."""
    quiet = _script(tmp_path, "quiet.sh", "#!/bin/sh\necho 'looking' >&2\necho 'crash loop: 3 exits' >&2\n"
                    "exit 1\n")
    loud = _script(tmp_path, "loud.sh", "#!/bin/sh\necho 'said on stdout'\necho 'noise' >&2\nexit 1\n")
    main(["compare", "sept25-crash-loop", "--check-http", str(quiet), "--check-http", str(loud),
          *FAST, "--json"])
    doc = json.loads(capsys.readouterr().out)
    [quiet_row] = _rows(doc, "http-quiet")
    [loud_row] = _rows(doc, "http-loud")
    assert quiet_row["reason"] == "exit 1: crash loop: 3 exits"
    assert loud_row["reason"] == "exit 1: said on stdout"


def test_a_process_row_that_ends_in_error_fails_the_gate_by_default(tmp_path, capsys):
    """A process that cannot even start is an error row: exit 1 without --fail-on, said why."""
    broken = _script(tmp_path, "broken.sh", "echo no interpreter line\n")  # exec format error
    code = main(["compare", "sept25-crash-loop", "--check-http", str(broken), *FAST, "--summary"])
    said = capsys.readouterr().err
    assert code == 1
    assert "http-broken: error in 1 of 1 run(s) (a process row that ends in error fails the gate" in said


def test_a_check_row_in_error_still_needs_fail_on(capsys):
    """Only process rows gate by default: the built-ins' rows, as before, need --fail-on."""
    assert main(["compare", "sept25-crash-loop", "--check", "count", "--summary"]) == 0
    capsys.readouterr()


SWEEP = """
scenario = "sept25-crash-loop"
checks = ["count", "timestamp"]
seeds = 1
[axes]
"platform.restart_delay_s" = [0.3, 1.0]
"platform.boot_s" = [0.4, 1.0]
"platform.events" = ["minimal"]
"platform.event_log_cap" = [5]
[heatmap]
x = "platform.restart_delay_s"
y = "platform.boot_s"
columns = "platform.events"
rows = "platform.event_log_cap"
"""


def test_heatmap_prints_every_file_it_derives(tmp_path, capsys):
    """--heatmap out/x.png with facets writes x-count.png and x-timestamp.png, and says so."""
    pytest.importorskip("matplotlib")
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP)
    target = tmp_path / "x.png"
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "rows.csv"), "--no-progress",
                 "--heatmap", str(target)]) == 0
    said = capsys.readouterr().err
    for check in ("count", "timestamp"):
        path = tmp_path / f"x-{check}.png"
        assert path.exists()
        assert f"heatmap written to {path}" in said
