"""Read the ``fly machine status`` event tables in tests/data/fly/*.txt into Machines API JSON.

The tables are text that users pasted (sources and dates: tests/data/fly/SOURCES.md), not
API responses, so they are converted by one stated rule:

- A row is ``STATUS TYPE SOURCE TIME [DETAILS]``, its cells split by ``│`` or by spaces;
  in the BoomCard prose the rows are the back-quoted spans. A row without a time (the
  stored excerpt of neotoma #2291 is cut inside its fourth row) is dropped.
- TIME is ``YYYY-MM-DDTHH:MM:SS`` or ``HH:MM:SS[.ff]``; a time without a date takes the
  source's date (``DATES``). The zone is not given by any source: UTC is assumed, which
  moves every timestamp of a table alike and so changes no difference between two.
- DETAILS ``exit_code=N,oom_killed=B,requested_stop=B`` go under
  ``request.exit_event``; a field the row does not show is left out (fly-go's zero).
- Events are sorted newest first by time, as the API returns them (the ateles excerpt is
  not in that order); the machine's ``state`` is the newest event's status, and its id
  is the file's name. Nothing else is added.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "fly"

#: The date of each table whose rows carry only a time of day: the date its source gives
#: (BoomCard's "on 2026-08-20"), else the date of the PR description that holds it.
DATES = {
    "neotoma-pr2099-autostart-exit0": "2026-08-05",
    "neotoma-pr2291-autostart-after-stop": "2026-09-01",
    "boomcard-qa051-proxy-wake-exit1": "2026-08-20",
}

_TIME = re.compile(r"^(?:(\d{4}-\d{2}-\d{2})T)?(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?$")


def rows(name: str) -> list[list[str]]:
    """The table's rows as cells (status, type, source, time, details...), in file order."""
    text = (DATA / f"{name}.txt").read_text(encoding="utf-8")
    if "`" in text:  # prose: the back-quoted spans, across the comment's line breaks
        joined = " ".join(line.lstrip(" *") for line in text.splitlines())
        spans = re.findall(r"`([^`]*)`", joined)
        return [span.split() for span in spans if len(span.split()) >= 4]
    found = []
    for line in text.splitlines():
        text_cells = line.split("←")[0]  # the author's annotation, not a cell
        cells = [c for c in re.split(r"│|\s+", text_cells) if c.strip()]
        if cells:
            found.append(cells)
    return found


def _ms(time: str, date: str | None) -> int | None:
    match = _TIME.match(time)
    if match is None:
        return None
    day, hours, minutes, seconds, fraction = match.groups()
    day = day or date
    assert day is not None, f"a time of day with no date: {time}"
    stamp = datetime.fromisoformat(f"{day}T{hours}:{minutes}:{seconds}").replace(tzinfo=UTC)
    extra = round(float(f"0.{fraction}") * 1000) if fraction else 0
    return int(stamp.timestamp()) * 1000 + extra


def _details(cells: list[str]) -> dict[str, Any]:
    exit_event: dict[str, Any] = {}
    for cell in cells:
        for pair in cell.split(","):
            key, _, value = pair.partition("=")
            if key == "exit_code":
                exit_event[key] = int(value)
            elif key in ("oom_killed", "requested_stop", "restarting"):
                exit_event[key] = value == "true"
    return exit_event


def machine(name: str) -> dict[str, Any]:
    """The table as one Machines API machine object (the conversion above)."""
    events = []
    for cells in rows(name):
        if len(cells) < 4:
            continue
        stamp = _ms(cells[3], DATES.get(name))
        if stamp is None:
            continue
        event: dict[str, Any] = {"type": cells[1], "status": cells[0], "source": cells[2],
                                 "timestamp": stamp}
        exit_event = _details(cells[4:])
        if exit_event:
            event["request"] = {"exit_event": exit_event}
        events.append(event)
    events.sort(key=lambda e: -e["timestamp"])  # stable: ties keep the table's order
    return {"id": name, "state": events[0]["status"], "events": events}


def table_names() -> list[str]:
    """Every committed event table, by name."""
    return sorted(p.stem for p in DATA.glob("*.txt"))
