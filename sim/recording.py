"""Recording a run's looks as Fly Machines API JSON, and replaying recordings to checks.

``load_recordings`` reads either a JSON Lines recording or a raw API payload (one machine,
an array of machines, or ``{"machines": [...]}`` as ``GET /v1/apps/{app}/machines[/{id}]``
or ``fly machine status --json`` / ``fly m list --json`` print it). A payload is ONE look,
taken at the newest event timestamp (``--at-ms`` overrides), for a publish that began at the
newest ``launch``/``update`` event (``--publish-ms`` overrides); see ``checks.flyjson``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from checks import Look, Verdict
from checks.flyjson import (
    Recording,
    RecordingError,
    is_recording_line,
    look_to_json,
    payload_recording,
    read_recordings,
    replay,
)
from sim.loader import load_checks
from sim.publish.world import RunResult
from sim.scenario import BadInput


class Recorder:
    """Collects the looks of every run as JSON Lines; ``save`` writes them atomically."""

    def __init__(self, publish_started_ms: int, check_options: Mapping[str, Any]) -> None:
        self.publish_started_ms = publish_started_ms
        self.check_options = dict(check_options)
        self.lines: list[str] = []

    def __call__(self, result: RunResult) -> None:
        """Record one run's looks, labelled ``check/seed=N`` so a file can hold many runs."""
        label = f"{result.check}/seed={result.seed}"
        self.lines += [
            look_to_json(recorded.look, self.publish_started_ms, label, self.check_options)
            for recorded in result.looks
        ]

    def save(self, path: str) -> None:
        """Write the file whole or not at all (temp file in the same folder, then rename)."""
        target = Path(path)
        try:
            fd, temp = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.")
        except OSError as error:
            raise BadInput(f"--record {path}: cannot write ({error.strerror})") from None
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in self.lines)
        os.replace(temp, target)


def load_recordings(
    path: str, at_ms: int | None = None, publish_ms: int | None = None
) -> list[Recording]:
    """Read a recording or a raw payload file, turning any problem into one line of bad input."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise BadInput(f"{path}: cannot read recording ({error.strerror})") from None
    except ValueError as error:  # bytes that are not UTF-8
        raise BadInput(f"{path}: not a recording ({error})") from None
    try:
        whole: object = json.loads(text)
    except ValueError:
        whole = None  # several JSON Lines (or not JSON at all): read line by line below
    payload = whole is not None and not is_recording_line(whole)
    if not payload and (at_ms is not None or publish_ms is not None):
        option = "--at-ms" if at_ms is not None else "--publish-ms"
        raise BadInput(f"{option}: only for a raw payload file; a recording carries its own times")
    try:
        if payload:
            recordings = [payload_recording(whole, at_ms, publish_ms)]
        else:
            recordings = read_recordings(text.splitlines())
    except RecordingError as error:
        raise BadInput(f"{path}: {error}") from None
    except ValueError as error:  # JSON that is not JSON
        raise BadInput(f"{path}: not a recording ({error})") from None
    if not recordings:
        raise BadInput(f"{path}: the recording holds no looks")
    return recordings


def replay_all(
    recordings: Sequence[Recording], names: list[str], extra: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Feed each recorded run to the named checks (default: every built-in).

    Checks are built with the timing the run was recorded with, if it says. A run the
    simulator labelled ``NAME/seed=N`` goes to check NAME alone when that check is
    among the chosen ones (those are the looks it asked for); any other run goes to all.
    """
    rows = []
    for recording in recordings:
        checks = load_checks(names, recording.check_options or {}, extra)
        recorded_by = (recording.run or "").split("/")[0]
        chosen = [c for c in checks if c.name == recorded_by] or list(checks)
        for check in chosen:
            try:
                result = replay(check, recording.publish_started_ms, recording.looks)
            except Exception as error:  # a user's check may raise anything: it is its outcome
                rows.append(_row(recording, check.name, None, (), f"check raised {error!r}"))
                continue
            rows.append(_row(recording, check.name, result.verdict, result.looks, None))
    return rows


def _row(
    recording: Recording,
    check: str,
    verdict: Verdict | None,
    fed: Sequence[Look],
    error: str | None,
) -> dict[str, Any]:
    if error is None and verdict is None:
        error = "the recording ran out of looks before the check decided"
    decided = None
    if verdict is not None and fed:
        decided = (fed[-1].at_ms - recording.publish_started_ms) / 1000
    return {
        "run": recording.run,
        "check": check,
        "verdict": None if verdict is None else ("pass" if verdict.ok else "fail"),
        "reason": error if verdict is None else verdict.reason,
        "machine": None if verdict is None else verdict.machine,
        "decided_at_s": decided,
        "looks_used": len(fed),
        "looks_recorded": len(recording.looks),
    }
