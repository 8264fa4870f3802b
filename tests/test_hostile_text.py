"""Text from outside that must stay on one line, and files that must be read (issue 32).

* A check's name (``--check-cmd-name``, a ``cmd:`` entry's ``name``, or the one derived
  from its program) with a newline, ESC or a bidi control is refused: it heads columns and
  labels one-line rows.
* Every table cell and every one-line message on stderr goes through ``one_line``: a
  name, a path or a reason from a process cannot start a row or a message of its own, nor
  restyle the terminal.
* A heatmap with one axis on two of its sides is refused (it would draw only a diagonal).
* A recording with CR-only line endings is read as LF and CRLF ones are.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.show.table import Table, fit, wrap
from platform_testbed.sim.show.text import one_line
from platform_testbed.sim.sweep import load_sweep

SCENARIO = "sept25-crash-loop"
#: What must never reach a one-line place raw.
RAW = ("\n", "\r", "\t", "\x1b", "\x85", "\u2028", "\u202e", "\x00")


def _one_line_err(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.endswith("\n")
    assert err.count("\n") == 1, err
    assert not any(c in err[:-1] for c in RAW), repr(err)
    return err


@pytest.mark.parametrize("name", ["a\nb", "x\x1b[31m", "\u202eevil", "a\u2028b", " ", "tab\there"])
def test_a_check_cmd_name_that_is_not_one_line_is_refused(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--check-cmd-name with a line break, ESC, a bidi control or nothing: exit 2, one line."""
    script = tmp_path / "c.py"
    script.write_text("")
    code = main(["compare", SCENARIO, "--check-cmd", f"{sys.executable} {script}",
                 "--check-cmd-name", name])
    assert code == 2
    assert "--check-cmd-name" in _one_line_err(capsys)


def test_a_cmd_entry_name_and_a_derived_name_follow_the_same_rule(tmp_path: Path) -> None:
    """The ``name`` of a ``cmd:`` entry, and a name derived from a script's file name."""
    from platform_testbed.sim.checkcmd import make_spec, parse_spec  # noqa: PLC0415

    spec = json.dumps({"command": [sys.executable, "c.py"], "name": "two\nlines"})
    with pytest.raises(BadInput, match=r"field 'name' 'two\\nlines': must be printable on one line"):
        parse_spec(f"cmd:{spec}")
    odd = tmp_path / "odd\nname.py"
    odd.write_text("")
    with pytest.raises(BadInput, match=r"the name from its program .*give one with --check-cmd-name"):
        make_spec(f"{sys.executable} '{odd}'")
    assert make_spec(f"{sys.executable} '{odd}'", name="odd").name == "odd"


def test_one_line_escapes_what_breaks_a_line_and_keeps_the_rest() -> None:
    """Controls, C1, separators and bidi controls escaped; letters, digits and spaces kept."""
    assert one_line("a\nb\tc\x1b[2J\x85\u2028\u202e") == "a\\nb\\tc\\x1b[2J\\x85\\u2028\\u202e"
    assert one_line("café ² 80 cols") == "café ² 80 cols"


def test_a_table_cell_with_a_newline_stays_on_its_row() -> None:
    """A reason with a newline and ESC in it: the table has one line per row, escaped."""
    drawn = fit(Table(["check", "reason"], [["evil\nname", "one\ntwo \x1b[2J"], ["count", "fine"]],
                      prose=frozenset({1})), at=100)
    lines = drawn.splitlines()
    assert len(lines) == 4, drawn  # header, rule, two rows
    assert "evil\\nname" in lines[2]
    assert "one\\ntwo \\x1b[2J" in lines[2]
    assert "\x1b" not in drawn


def test_a_label_with_a_newline_does_not_start_a_line() -> None:
    """``wrap``'s label (a check's name before its reason) is one line."""
    assert wrap("the reason", 80, "evil\nname: ") == ["evil\\nname: the reason"]


def test_a_bad_input_message_is_one_line_whatever_the_path_holds(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """A scenario path with ESC, a newline and a bidi control: the message is one escaped line."""
    assert main(["compare", "a\x1b[2Jb\n\u202ec.toml"]) == 2
    assert "cannot read" in _one_line_err(capsys)


@pytest.mark.parametrize(("table", "rule"), [
    ('x = "release.crash_after_s"\ny = "release.crash_after_s"', "x and y are both"),
    ('x = "release.crash_after_s"\ny = "check.look_delay_s"\ncolumns = "check.look_delay_s"\n'
     'rows = "platform.event_log_cap"', "y and columns are both"),
])
def test_a_heatmap_with_one_axis_twice_is_refused(table: str, rule: str, tmp_path: Path) -> None:
    """One axis on two sides of the map: BadInput naming both sides, before any world runs."""
    path = tmp_path / "s.toml"
    path.write_text(f'scenario = "{SCENARIO}"\nchecks = ["count"]\nseeds = 1\n[axes]\n'
                    '"release.crash_after_s" = [1.0, 2.0]\n"check.look_delay_s" = [3.0, 4.0]\n'
                    f'"platform.event_log_cap" = [2, 5]\n[heatmap]\n{table}\n')
    with pytest.raises(BadInput, match=rf"^heatmap: {rule} '"):
        load_sweep(path)


def test_a_recording_with_cr_line_endings_is_read_as_lf_and_crlf_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same looks, with LF, CRLF or CR alone ending each line: the same replay."""
    recorded = tmp_path / "lf.jsonl"
    assert main(["compare", SCENARIO, "--check", "count", "--record", str(recorded)]) == 0
    text = recorded.read_text()
    assert text.count("\n") > 1
    results = {}
    for name, end in (("lf", "\n"), ("crlf", "\r\n"), ("cr", "\r")):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(text.replace("\n", end).encode())
        capsys.readouterr()
        assert main(["replay", str(path), "--json"]) == 0, capsys.readouterr().err
        results[name] = json.loads(capsys.readouterr().out)["results"]
    assert results["cr"] == results["lf"] == results["crlf"]
    assert results["lf"][0]["looks_recorded"] > 1


def test_a_sweeps_message_names_its_file_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rows' path on stderr: a ``[bold]`` in it is text (it was read as markup and left
    out), an ESC is escaped, and a long one is not broken onto a second line."""
    out = tmp_path / ("long-" * 20 + "[bold]\x1b[31mrows.csv")
    sweep = Path(__file__).parent / "data" / "sweeps" / "small.toml"
    assert main(["sweep", str(sweep), "--workers", "1", "--no-progress", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"rows in {tmp_path}/{'long-' * 20}[bold]\\x1b[31mrows.csv" in err
    assert "\x1b" not in err
