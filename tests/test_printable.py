"""Every string printable everywhere (issue 20): any text in reasons, machine ids and names.

Hypothesis draws text with lone surrogates, control characters (ESC, NUL, C1), U+2028
and U+0085 and feeds it into a user check's reason, machine and name, and into a
recording's machine ids. Every output must be well-formed and printed without a
traceback: the terminal report holds no raw control character, ``--json`` parses,
the JUnit XML parses, the recording reads back, the sweep's CSV parses.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.publish.recording import load_recordings
from platform_testbed.sim.show.text import printable, xml_text

SCENARIO = "sept25-crash-loop"

#: Text as hostile as Unicode allows: surrogates and controls are in the "Cs" and "Cc" categories.
HOSTILE_TEXT = st.text(
    st.one_of(st.characters(codec=None), st.sampled_from("\x1b\x00\x07\x85\u2028\u2029\ud800\udfff\u202e")),
    max_size=12,
)

#: A check whose reason, machine and name come from a JSON file (so surrogates survive).
CHECK = '''
import json
from pathlib import Path
from platform_testbed.checks import Verdict, Wait

def _said():
    return json.loads(Path(__file__).with_name("said.json").read_text())

class Says:
    @property
    def name(self):
        return "says" + _said()["name"]
    def next(self, publish_started_ms, looks):
        said = _said()
        return Verdict(False, said["reason"], said["machine"]) if looks else Wait(5)
'''

#: Raw in a terminal, these start escape sequences or break lines.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err
    return code, out, err


@pytest.fixture
def folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path_factory.mktemp("printable")
    (where / "uc.py").write_text(CHECK)
    monkeypatch.chdir(where)
    return where


@settings(max_examples=min(settings.default.max_examples, 25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reason=HOSTILE_TEXT, machine=HOSTILE_TEXT, name=HOSTILE_TEXT)
@example(reason="\ud800", machine="\x1b[31m", name="")
@example(reason="a\u2028b\x85c", machine="\ud800", name="\x1b")
def test_check_text_reaches_every_output_well_formed(
    folder: Path, capsys: pytest.CaptureFixture[str], reason: str, machine: str, name: str
) -> None:
    """A check's reason, machine and name: text report, JSON, JUnit XML and recording all hold."""
    (folder / "said.json").write_text(json.dumps({"reason": reason, "machine": machine, "name": name}))
    argv = ["compare", SCENARIO, "--check", "uc.py:Says", "--force"]
    code, out, _ = _run(argv, capsys)
    if code == 2:  # a name the loader refuses: refused, in one line, everywhere alike
        return
    assert not RAW.search(out), repr(out)
    _, out, _ = _run([*argv, "--json", "--junit", "j.xml", "--record", "rec.jsonl"], capsys)
    doc = json.loads(out)
    [result] = [r for run in doc["runs"] for r in run["results"]]
    assert result["reason"] in (reason, reason.encode("utf-8", "backslashreplace").decode())
    ET.parse(folder / "j.xml")
    assert load_recordings(str(folder / "rec.jsonl"))


@settings(max_examples=min(settings.default.max_examples, 25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(machine_id=HOSTILE_TEXT.filter(bool))
@example(machine_id="\ud800")
@example(machine_id="raw\u2028sep\x85")
def test_recorded_machine_ids_replay_into_every_output(
    folder: Path, capsys: pytest.CaptureFixture[str], recording: str, machine_id: str
) -> None:
    """A recording whose machine id is any text: replay's text, JSON and JUnit XML all hold."""
    lines = []
    for line in recording.split("\n"):
        if line:
            look = json.loads(line)
            look["machines"][0]["id"] = machine_id
            # ensure_ascii=False: a raw U+2028 inside a string must not split the line; a
            # lone surrogate is written as its JSON escape (backslashreplace gives \\ud800).
            lines.append(json.dumps(look, ensure_ascii=False).encode("utf-8", "backslashreplace"))
    (folder / "r.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    code, out, err = _run(["replay", "r.jsonl", "--check", "count"], capsys)
    assert code == 0, err
    assert not RAW.search(out), repr(out)
    _, out, _ = _run(["replay", "r.jsonl", "--check", "count", "--json", "--junit", "j.xml", "--force"],
                     capsys)
    assert json.loads(out)["results"]
    ET.parse(folder / "j.xml")


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("rec") / "rec.jsonl"
    assert main(["compare", SCENARIO, "--check", "count", "--record", str(path), "--json"]) == 0
    return path.read_text()


def test_a_sweep_csv_with_hostile_reasons_parses(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The sweep's CSV holds a reason with a surrogate, ESC and U+2028, and reads back."""
    said = {"reason": "\ud800\x1b\u2028,\"", "machine": "m", "name": ""}
    (folder / "said.json").write_text(json.dumps(said))
    (folder / "s.toml").write_text('scenario = "sept25-crash-loop"\nchecks = ["uc.py:Says"]\nseeds = 1\n'
                                   '[axes]\n"release.crash_after_s" = [2.5]\n')
    _run(["sweep", "s.toml", "--no-progress", "--out", "rows.csv"], capsys)
    with (folder / "rows.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows


def test_xml_text_and_printable_escape_what_their_output_cannot_hold() -> None:
    """The two escapers: ESC, NUL and a surrogate become their Python escapes; tab and newline stay."""
    assert printable("a\x1bb\ud800\u2028\t\n") == "a\\x1bb\\ud800\\u2028\t\n"
    assert xml_text("\x00\x1b\ud800\ufffe\t\n\r") == "\\x00\\x1b\\ud800\\ufffe\t\n\r"


@pytest.mark.parametrize("reason", ["\\ud800", "\\x1b[31mred", "caf\\u00e9 \\u00b7"])
def test_an_ascii_only_terminal_gets_escapes_not_a_traceback(tmp_path: Path, reason: str) -> None:
    """PYTHONIOENCODING=ascii: the report prints (· as \\xb7), with a hostile check-cmd reason."""
    (tmp_path / "weird.py").write_text(
        "import json, sys\n"
        f"reason = {reason!r}.encode().decode('unicode_escape')\n"
        "for line in sys.stdin:\n"
        "    looks = json.loads(line)['looks']\n"
        "    print(json.dumps({'verdict': {'ok': False, 'reason': reason}} if looks else {'wait': 5}),"
        " flush=True)\n")
    done = subprocess.run(
        [sys.executable, "-m", "platform_testbed", "compare", SCENARIO, "--check", "count",
         "--check-cmd", f"{sys.executable} weird.py", "--check-cmd-name", "weird"],
        check=False, cwd=tmp_path, capture_output=True, timeout=120,
        env=os.environ | {"PYTHONIOENCODING": "ascii", "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    assert b"Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stderr
    assert max(done.stdout, default=0) < 128  # ASCII through and through
    assert b"\\xb7" in done.stdout
