"""``testbed serve``'s printed lines: sourced by a shell they set the values and run nothing,
and nothing a terminal must not get raw reaches it (ESC, C1, bidi, NUL, U+2028)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.cli.serve import export_line
from platform_testbed.sim.show.text import printable

HOSTILE = ["x\x1b[2J;touch FILE #", "a'b\"c$(touch FILE)`touch FILE`", "bidi\u202eevil",
           "line\u2028sep", "nul\x00", "csi\x9b31m", "tab\there", "plain-name_1.2", "é ünïcode"]


@pytest.mark.parametrize("value", HOSTILE)
def test_an_export_line_sources_to_its_value_and_runs_nothing(tmp_path: Path, value: str) -> None:
    """bash sourcing the line gets the value back, byte for byte, and ``touch`` never runs."""
    if "\x00" in value:  # no environment can hold NUL: the line must still be safe to print
        assert printable(export_line("V", value)) == export_line("V", value)
        return
    line = export_line("V", value)
    assert printable(line) == line
    assert "\n" not in line
    script = tmp_path / "env.sh"
    script.write_text(line + "\n", encoding="utf-8")
    shown = subprocess.run(["bash", "-c", f". {script}; printf %s \"$V\""], cwd=tmp_path,
                           capture_output=True, check=True, timeout=10,
                           env={"PATH": os.environ["PATH"], "LC_ALL": "C.UTF-8"})
    assert shown.stdout.decode("utf-8") == value
    assert not (tmp_path / "FILE").exists()


@pytest.mark.parametrize("token", ["t\u00f6k", "has space", "", "a" * 4097, "ctl\x1b"])
def test_a_token_a_header_cannot_carry_is_exit_2(capsys: pytest.CaptureFixture[str], token: str) -> None:
    """``--token tök`` (no UTF-8 client sends the bytes latin-1 reads), spaces, empty, too long: exit 2."""
    assert main(["serve", "healthy-release", "--token", token]) == 2
    err = capsys.readouterr().err
    assert err.startswith("testbed: --token: must be 1 to 4096 visible ASCII")
    assert err.count("\n") == 1


@pytest.mark.parametrize("redirect", [">/dev/full", ">&-"])
def test_stdout_full_or_closed_is_one_line_and_exit_2(redirect: str) -> None:
    """stdout on /dev/full or closed: one line on stderr, exit 2, no traceback, no serve left."""
    root = Path(__file__).resolve().parents[1]
    command = (f"{sys.executable} -m platform_testbed.sim serve healthy-release --speed 1000 "
               f"--token tok {redirect}")
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "stdout" in done.stderr
    assert "Traceback" not in done.stderr
