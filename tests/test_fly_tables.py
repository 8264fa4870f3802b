"""Public `fly machine status` event tables (tests/data/fly/*.txt) read, timed and replayed.

The timings asserted here are the ones the scenario defaults and the sept25 point cite
(docs/fidelity.md): an automatic restart's exit -> started, and autostart boots.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from platform_testbed.checks import BUILTIN_CHECKS
from platform_testbed.checks.flyjson import payload_recording
from platform_testbed.sim.cli.parser import main
from tests.fly_tables import DATA, machine, rows, table_names

#: Tables with timestamps: each converts to a payload that replays.
TIMED = [n for n in table_names() if n != "engaging-worker-readme-autostart"]


def _events(name: str) -> list[tuple[str, str, str, int]]:
    """(type, status, source, ms) newest first, as the converted payload reads."""
    (snap,) = payload_recording(machine(name)).looks[0].machines
    return [(e.type, e.status, e.source, e.timestamp) for e in snap.events]


def _gap_s(name: str, newer: tuple[str, str], older: tuple[str, str]) -> float:
    """Seconds between the first event of kind ``older`` and the next of kind ``newer``."""
    events = list(reversed(_events(name)))  # oldest first
    start = next(i for i, e in enumerate(events) if (e[0], e[1]) == older)
    end = next(e for e in events[start + 1:] if (e[0], e[1]) == newer)
    return (end[3] - events[start][3]) / 1000


def test_every_table_is_listed_in_sources_with_a_date() -> None:
    """SOURCES.md names every committed table, and each table's row there carries a date."""
    sources = (DATA / "SOURCES.md").read_text()
    for name in table_names():
        (line,) = [ln for ln in sources.splitlines() if ln.startswith(f"| `{name}.txt`")]
        date = line.split("|")[5]
        assert re.search(r"\d{4}-\d{2}-\d{2}|not known", date), line


def test_ateles_automatic_restart_takes_two_seconds_from_exit_to_started() -> None:
    """ateles: flyd restarts a `restart: always` machine after exit 134, started 2 s later."""
    assert _gap_s("ateles-watchdog-exit134-restart", ("start", "started"), ("exit", "stopped")) == 2.0
    newest = payload_recording(machine("ateles-watchdog-exit134-restart")).looks[0].machines[0]
    crash = newest.newest_exit()
    assert crash is not None
    assert (crash.exit_code, crash.requested_stop) == (134, False)
    assert {e.source for e in newest.events} == {"flyd"}


def test_neotoma_2099_autostart_boot_is_three_seconds() -> None:
    """neotoma #2099: exit 0, proxy start 1 s later, started 3 s after the proxy start."""
    name = "neotoma-pr2099-autostart-exit0"
    assert _gap_s(name, ("start", "starting"), ("exit", "stopped")) == 1.0
    assert _gap_s(name, ("start", "started"), ("start", "starting")) == 3.0
    assert [e[2] for e in _events(name)] == ["flyd", "proxy", "flyd"]


def test_neotoma_2291_autostart_boot_is_2_09_seconds() -> None:
    """neotoma #2291: a requested stop, proxy start 1.31 s later, started 2.09 s after it."""
    name = "neotoma-pr2291-autostart-after-stop"
    assert _gap_s(name, ("start", "starting"), ("exit", "stopped")) == 1.31
    assert _gap_s(name, ("start", "started"), ("start", "starting")) == 2.09
    # the stored excerpt is cut inside its fourth row (destroying, no time): dropped
    assert len(rows(name)) == 4
    assert len(_events(name)) == 3


def test_boomcard_proxy_wake_boots_in_three_seconds_and_is_not_restarted() -> None:
    """BoomCard: proxy start, started 3 s later, exit 1 134 s after that, nothing after it."""
    name = "boomcard-qa051-proxy-wake-exit1"
    assert _gap_s(name, ("start", "started"), ("start", "starting")) == 3.0
    assert _gap_s(name, ("exit", "stopped"), ("start", "started")) == 134.0
    events = _events(name)
    assert events[0][:3] == ("exit", "stopped", "flyd")
    assert machine(name)["state"] == "stopped"


def test_engaging_worker_shows_the_autostart_event_kinds_without_times() -> None:
    """engaging-worker README: start/starting by proxy, start/started by flyd; no timestamps."""
    cells = rows("engaging-worker-readme-autostart")
    assert [c[:3] for c in cells] == [
        ["starting", "start", "proxy"], ["started", "start", "flyd"], ["stopped", "exit", "flyd"],
    ]
    assert all(len(c) == 3 for c in cells)  # no time cell: nothing to replay


@pytest.mark.parametrize("name", TIMED)
@pytest.mark.parametrize("check", sorted(BUILTIN_CHECKS))
def test_every_timed_table_replays_through_every_check(
    name: str, check: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`testbed replay` accepts each converted table as a raw payload: exit 0 or 1, never 2."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(machine(name)))
    code = main(["replay", str(path), "--check", check, "--json"])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    (row,) = json.loads(captured.out)["results"]
    assert (row["check"], row["looks_recorded"]) == (check, 1)
